#!/usr/bin/env bash
# Tiny buckets (issue 21, item 6): a policer whose bucket is 1 ms of its
# rate (6,250 to 25,000 B: 4 to 17 datagrams of 1500 B) at 10 ms RTT,
# at 50, 100, 150 and 200 Mbit/s, RUNS times each (default 10), up
# through a lab path with a responder in it. Each run is `fullpipe trains
# --rate R --rtt 10ms --direction up --link none` (step 5 alone; mode
# rfc6349: the whole `rfc6349 --quick --direction up --cir R --link none`,
# about 40 s a run, its shaping verdict and diagnosis too). With --link
# none the trains count IP bytes, as the lab's policer does: the truth
# needs no scaling. A run is right when it names the policer with its
# rate and bucket within 20 % plus their error bars, or says undecided
# (and then no cause); anything else is a wrong reading. Prints every run
# and, per rate, how many were right, undecided and wrong, and for each
# run the lab's own packets written late and forwarder drops during it
# (`lab stats` before and after): a lab that falls behind is itself a
# queue or a stalling sender, so a wrong reading then is counted apart.
#
# Usage: sudo bench/tinybucket.sh [RUNS] [trains|rfc6349]   (RUNS 1-50; needs ip, python3)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-10}
MODE=${2:-trains}
if ! [[ $RUNS =~ ^[1-9][0-9]*$ ]] || ((RUNS > 50)) || ! [[ $MODE =~ ^(trains|rfc6349)$ ]]; then
	echo "usage: sudo bench/tinybucket.sh [RUNS] [trains|rfc6349]   (RUNS 1-50, default 10 trains)" >&2
	exit 2
fi
[ "$(id -u)" = 0 ] || { echo "bench/tinybucket.sh: needs root (network namespaces)" >&2; exit 2; }
for t in ip python3; do command -v "$t" >/dev/null || { echo "bench: $t not found" >&2; exit 2; }; done
BIN=$(mktemp -d)/fullpipe
CGO_ENABLED=0 go build -o "$BIN" ./cmd/fullpipe
NAME=fptb
OUT=$(mktemp -d)
SERVE=
cleanup() {
	if [ -n "$SERVE" ]; then kill "$SERVE" 2>/dev/null || true; wait "$SERVE" 2>/dev/null || true; SERVE=; fi
	"$BIN" lab down --name $NAME >/dev/null 2>&1 || true
}
trap cleanup EXIT

for mbps in 50 100 150 200; do
	bucket=$((mbps * 1000000 / 8 / 1000))
	"$BIN" lab up --name $NAME --detach --rtt 10ms --police "${mbps}M,$bucket" >/dev/null
	addr=$(python3 -c 'import json;print(json.load(open("/run/fullpipe/lab/'$NAME'.json"))["server"]["addr"])')
	ip netns exec $NAME-server "$BIN" serve -q -l "$addr:6349" >/dev/null 2>&1 &
	SERVE=$!
	for _ in $(seq 50); do ip netns exec $NAME-client "$BIN" rtt "$addr" -n 1 >/dev/null 2>&1 && break; sleep 0.1; done
	for i in $(seq "$RUNS"); do
		"$BIN" lab stats --name $NAME --json >"$OUT/$mbps.$i.before.json" 2>/dev/null || true
		case $MODE in
		trains) ip netns exec $NAME-client timeout 120 "$BIN" trains "$addr" --rate "${mbps}M" --rtt 10ms --direction up --link none --json >"$OUT/$mbps.$i.json" 2>/dev/null || true ;;
		rfc6349) ip netns exec $NAME-client timeout 300 "$BIN" rfc6349 "$addr" --quick --direction up --cir "${mbps}M" --link none --json >"$OUT/$mbps.$i.json" 2>/dev/null || true ;;
		esac
		"$BIN" lab stats --name $NAME --json >"$OUT/$mbps.$i.after.json" 2>/dev/null || true
	done
	cleanup
done

python3 - "$OUT" "$RUNS" "$MODE" <<'PY'
import json, sys
out, runs, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def lab(mbps, i):
    """The lab's own failures during run i (up): packets written late, the forwarder's drops."""
    try:
        a, b = (json.load(open(f"{out}/{mbps}.{i}.{w}.json"))["up"] for w in ("before", "after"))
    except Exception:
        return None
    keys = ("late_packets", "forwarder_read_drops", "forwarder_write_drops")
    return tuple(b[k] - a[k] for k in keys)

print("| policer | run | trains (last × size) | read as | rate (error) | bucket (error) | shaping / diagnosis | the lab: late, dropped | outcome |")
print("|---|---|---|---|---|---|---|---|---|")
summary = []
for mbps in [50, 100, 150, 200]:
    rate, bucket = mbps * 1e6, mbps * 1e6 / 8 / 1000
    n = {"right": 0, "undecided": 0, "wrong": 0, "no result": 0, "wrong, lab late": 0}
    for i in range(1, runs + 1):
        diag = ""
        try:
            d = json.load(open(f"{out}/{mbps}.{i}.json"))
            if mode == "trains":
                dd = d["directions"]["up"]
                v, rows = dd["verdict"], dd["trains"]
            else:
                s = d["shaping"]
                v, rows = s["trains"], s["train_rows"]
                causes = ",".join(f["cause"] for f in d.get("diagnosis") or []) or "-"
                diag = f"{s['verdict']} / {causes}"
        except Exception:
            n["no result"] += 1
            print(f"| {mbps}M, {bucket:.0f} B | {i} | no result | | | | | | no result |")
            continue
        kind, r, b = v["kind"], v["rate_bps"], v["bucket_bytes"]
        wrong_cause = mode == "rfc6349" and any(f["cause"] in ("buffer", "loss") for f in d.get("diagnosis") or [])
        if kind == "policer" and abs(r["value"] - rate) <= 0.2 * rate + r["err"] and abs(b["value"] - bucket) <= 0.2 * bucket + b["err"] and not wrong_cause:
            outcome = "right"
        elif kind == "undecided" and not wrong_cause and (mode == "trains" or not any(f["cause"] == "policer" for f in d.get("diagnosis") or [])):
            outcome = "undecided"
        else:
            outcome = "wrong"
        lb = lab(mbps, i)
        if outcome == "wrong" and lb and any(lb):
            outcome = "wrong, lab late"  # the lab's forwarder fell behind: it was itself a queue or a stalling sender
        n[outcome] += 1
        labcol = "?" if lb is None else f"{lb[0]}, {lb[1] + lb[2]}"
        est_r = est_b = ""
        if kind == "policer":
            est_r = f"{r['value']/1e6:.1f} ± {r['err']/1e6:.1f} Mbit/s ({(r['value']/rate-1)*100:+.1f} %)"
            est_b = f"{b['value']:.0f} ± {b['err']:.0f} B ({(b['value']/bucket-1)*100:+.1f} %)"
        last = rows[-1] if rows else {"packets": 0, "size_bytes": 0}
        print(f"| {mbps}M, {bucket:.0f} B | {i} | {len(rows)} ({last['packets']} × {last['size_bytes']} B) | {kind} | {est_r} | {est_b} | {diag} | {labcol} | {outcome} |")
    late = sum(1 for i in range(1, runs + 1) if (lab(mbps, i) or (0,)) != (0, 0, 0) and lab(mbps, i))
    summary.append((mbps, bucket, n, late))
print()
print("| policer, bucket 1 ms | right | undecided | wrong, the lab on time | wrong, the lab late | no result | runs with the lab late |")
print("|---|---|---|---|---|---|---|")
for mbps, bucket, n, late in summary:
    print(f"| {mbps} Mbit/s, {bucket:.0f} B | {n['right']} of {runs} | {n['undecided']} | {n['wrong']} | {n['wrong, lab late']} | {n['no result']} | {late} |")
PY
