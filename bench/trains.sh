#!/usr/bin/env bash
# Packet trains against the lab's truth (issue 9's grid, in the lab): for
# each path, `fullpipe trains` up through a lab path with a responder in
# it, and the verdict against what the path is: a policer (buckets of 2,
# 20 and 200 ms of its rate), a queue (5 %, 50 % and 300 % of the BDP)
# or nothing, at 10, 50 and 200 Mbit/s and 5 and 100 ms. Prints a
# markdown table (truth, read as, rate, bucket or queue, each error) and
# how many were named right and within 20 %. The lab's policer and queue
# count IP bytes; the trains count IP + UDP + Ethernet framing (1538 per
# 1500-byte packet), so the truth is scaled by that; a queue's link rate
# is counted with framing already. The virtual-time grid is a test
# (go test ./internal/train); this is the same in real time, real hosts.
#
# Usage: sudo bench/trains.sh [quick]   (quick: 50 Mbit/s and 20 ms only; needs ip, python3)
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench/trains.sh: needs root (network namespaces)" >&2; exit 2; }
case "${1:-full}" in
quick) RATES=(50) RTTS=(20) ;;
full) RATES=(10 50 200) RTTS=(5 100) ;;
*) echo "usage: sudo bench/trains.sh [quick]" >&2; exit 2 ;;
esac
for t in ip python3; do command -v "$t" >/dev/null || { echo "bench: $t not found" >&2; exit 2; }; done
BIN=$(mktemp -d)/fullpipe
CGO_ENABLED=0 go build -o "$BIN" ./cmd/fullpipe
NAME=fptrains
cleanup() { pkill -f "$BIN serve" 2>/dev/null || true; "$BIN" lab down --name $NAME >/dev/null 2>&1 || true; }
trap cleanup EXIT

# cell KIND RATE_MBPS RTT_MS PARAM: PARAM is the bucket in ms of the rate
# (policer) or the queue in % of the BDP (queue).
cell() {
	local kind=$1 mbps=$2 rtt=$3 p=$4 args limit=0
	local bdp=$((mbps * 1000000 / 8 * rtt / 1000))
	case $kind in
	policer) limit=$((mbps * 1000000 / 8 * p / 1000)); ((limit >= 3000)) || limit=3000; args=(--police "${mbps}M,$limit") ;;
	queue) limit=$((bdp * p / 100)); ((limit >= 3000)) || return 0; args=(--rate "${mbps}M" --queue "$limit") ;;
	clean) args=() ;;
	esac
	"$BIN" lab up --name $NAME --detach --rtt "${rtt}ms" "${args[@]}" >/dev/null
	local addr
	addr=$(python3 -c 'import json;print(json.load(open("/run/fullpipe/lab/'$NAME'.json"))["server"]["addr"])')
	ip netns exec $NAME-server "$BIN" serve -q -l "$addr:6349" >/dev/null 2>&1 &
	for _ in $(seq 50); do ip netns exec $NAME-client "$BIN" rtt "$addr" -n 1 >/dev/null 2>&1 && break; sleep 0.1; done
	local out
	out=$(ip netns exec $NAME-client timeout 120 "$BIN" trains "$addr" --rate "${mbps}M" --rtt "${rtt}ms" --direction up --json 2>/dev/null || true)
	python3 - "$kind" "$mbps" "$rtt" "$p" "$limit" "$bdp" "$out" <<'PY'
import json, sys
kind, mbps, rtt, p, limit, bdp, out = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4], float(sys.argv[5]), float(sys.argv[6]), sys.argv[7]
k = 1538 / 1500  # the trains' bytes per IP byte at full size
path = {"policer": f"policer {mbps:.0f}M, bucket {p} ms ({limit:.0f} B)", "queue": f"{mbps:.0f}M, queue {p} % of BDP ({limit:.0f} B)", "clean": "no limit (trains for 100M)"}[kind]
try:
    v = json.loads(out)["directions"]["up"]["verdict"]
except Exception:
    print(f"| {path} | {rtt} ms | no result | | | no |"); sys.exit()
got = v["kind"]
ok = got == kind
rate = est = ""
if kind == "policer":
    t_rate, t_lim, e = mbps * 1e6 * k, limit * k, v["bucket_bytes"]
elif kind == "queue":
    t_rate, t_lim, e = mbps * 1e6, limit * k, v["queue_bytes"]
if kind != "clean" and got == kind:
    r = v["rate_bps"]
    re, le = r["value"] / t_rate - 1, e["value"] / t_lim - 1
    ok = ok and abs(re) <= 0.2 and abs(le) <= 0.2
    rate = f"{r['value']/1e6:.2f} ± {r['err']/1e6:.2f} Mbit/s ({re*100:+.1f} %)"
    est = f"{e['value']:.0f} ± {e['err']:.0f} B ({le*100:+.1f} %)"
print(f"| {path} | {rtt} ms | {got} | {rate} | {est} | {'yes' if ok else 'NO'} |")
PY
	cleanup
}

echo "packet trains in the lab, $(nproc) cores, $(uname -r), $(date -u +%F)"
echo
echo "| path | RTT | read as | rate (error) | bucket or queue (error) | right, within 20 % |"
echo "|---|---|---|---|---|---|"
for mbps in "${RATES[@]}"; do
	for rtt in "${RTTS[@]}"; do
		for b in 2 20 200; do cell policer "$mbps" "$rtt" "$b"; done
		for q in 5 50 300; do cell queue "$mbps" "$rtt" "$q"; done
	done
done
for rtt in "${RTTS[@]}"; do cell clean 100 "$rtt" 0; done # trains paced for a 100 Mbit/s contract
