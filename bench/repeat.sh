#!/usr/bin/env bash
# Repeatable verdicts (issue 9, item 5): `fullpipe rfc6349 --quick
# --direction up` RUNS times (default 10) on each of four lab paths: the
# main job's (scenario 1: 100 Mbit/s, 20 ms, 375 kB queue), a black-holed
# MTU (80 Mbit/s, 30 ms, 2 MB queue, MTU 1400 without ICMP), a policer (60
# Mbit/s, 30 kB bucket, 20 ms) and a small buffer (scenario 2: 300 Mbit/s,
# 50 ms, 64 kB queue). Prints every run (baseline RTT, BDP, actual % of
# ideal, verdict, shaping verdict, diagnosis) and per path the spread and
# whether the verdict and diagnosis were the same in every run.
#
# Usage: sudo bench/repeat.sh [RUNS]   (1-50, default 10; about 40 s a run; needs ip, python3)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-10}
if ! [[ $RUNS =~ ^[1-9][0-9]*$ ]] || ((RUNS > 50)); then
	echo "usage: sudo bench/repeat.sh [RUNS]   (1-50, default 10)" >&2
	exit 2
fi
[ "$(id -u)" = 0 ] || { echo "bench/repeat.sh: needs root (network namespaces)" >&2; exit 2; }
for t in ip python3; do command -v "$t" >/dev/null || { echo "bench: $t not found" >&2; exit 2; }; done
BIN=$(mktemp -d)/fullpipe
CGO_ENABLED=0 go build -o "$BIN" ./cmd/fullpipe
NAME=fprepeat
OUT=$(mktemp -d)
cleanup() { pkill -f "$BIN serve" 2>/dev/null || true; "$BIN" lab down --name $NAME >/dev/null 2>&1 || true; }
trap cleanup EXIT

# path LABEL CIR LAB-FLAGS...: RUNS runs on one lab path, one JSON each.
path() {
	local label=$1 cir=$2
	shift 2
	"$BIN" lab up --name $NAME --detach "$@" >/dev/null
	local addr
	addr=$(python3 -c 'import json;print(json.load(open("/run/fullpipe/lab/'$NAME'.json"))["server"]["addr"])')
	ip netns exec $NAME-server "$BIN" serve -q -l "$addr:6349" --allow-cc available >/dev/null 2>&1 &
	for _ in $(seq 50); do ip netns exec $NAME-client "$BIN" rtt "$addr" -n 1 >/dev/null 2>&1 && break; sleep 0.1; done
	for i in $(seq "$RUNS"); do
		ip netns exec $NAME-client timeout 300 "$BIN" rfc6349 "$addr" --quick --direction up --cir "$cir" --json >"$OUT/$label.$i.json" 2>/dev/null || true
	done
	cleanup
}

path window 100M --profile window
path blackhole 80M --rate 80M --rtt 30ms --queue 2MB --mtu 1400
path policer 60M --police 60M,30000 --rtt 20ms
path smallbuf 300M --profile smallbuf

python3 - "$OUT" "$RUNS" <<'PY'
import json, sys, statistics as st
out, runs = sys.argv[1], int(sys.argv[2])
print("| path | run | baseline RTT | BDP up | actual % of ideal | verdict | shaping | diagnosis |")
print("|---|---|---|---|---|---|---|---|")
summary = []
for label in ["window", "blackhole", "policer", "smallbuf"]:
    rows = []
    for i in range(1, runs + 1):
        try:
            r = json.load(open(f"{out}/{label}.{i}.json"))
        except Exception:
            rows.append(None); print(f"| {label} | {i} | no result | | | | | |"); continue
        t = (r.get("throughput") or {}).get("up") or {}
        pct = 100 * t["actual_bps"] / t["ideal_bps"] if t.get("ideal_bps") else float("nan")
        verdict = "PASS" if r["verdict"]["pass"] else ("INCOMPLETE" if r.get("partial") else "FAIL")
        causes = ",".join(sorted({d["cause"] for d in r.get("diagnosis") or []})) or "-"
        shaping = (r.get("shaping") or {}).get("verdict", "")
        rows.append((r["rtt"]["baseline_ms"], r["bdp"]["up_bytes"], pct, verdict, shaping, causes))
        print(f"| {label} | {i} | {r['rtt']['baseline_ms']:.3f} ms | {r['bdp']['up_bytes']:.0f} B | {pct:.1f} % | {verdict} | {shaping} | {causes} |")
    ok = [x for x in rows if x]
    if not ok:
        summary.append(f"| {label} | 0 of {runs} | | | | | |"); continue
    same = len(ok) == runs and len({(x[3], x[4], x[5]) for x in ok}) == 1
    b, d, p = [x[0] for x in ok], [x[1] for x in ok], [x[2] for x in ok]
    summary.append(f"| {label} | {len(ok)} of {runs} | {min(b):.3f}-{max(b):.3f} ms | {min(d):.0f}-{max(d):.0f} B | {min(p):.1f}-{max(p):.1f} % | "
                   f"{', '.join(sorted({x[3]+' / '+x[4]+' / '+x[5] for x in ok}))} | {'yes' if same else 'NO'} |")
print()
print("| path | results | baseline RTT | BDP up | actual % of ideal | verdict / shaping / diagnosis | the same every run |")
print("|---|---|---|---|---|---|---|")
print("\n".join(summary))
PY
