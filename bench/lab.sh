#!/usr/bin/env bash
# Lab emulator benchmark (run as root): iperf3 through an unlimited lab
# path (no rate, no delay), then the error of an emulated 1 Gbit/s, 50 ms
# RTT path: TCP goodput against the ceiling the rate allows (1448 B of
# payload per 1538 B on the wire with Ethernet framing) and ping's RTT
# against 50 ms plus the ping packet's serialisation.
#
# Usage: sudo bench/lab.sh [SECONDS]   (needs iperf3, ping, ip)
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-10}
if ! [[ $DUR =~ ^[1-9][0-9]*$ ]] || (( DUR > 120 )); then
	echo "usage: sudo bench/lab.sh [SECONDS]   (whole seconds, 1-120; default 10)" >&2
	exit 2
fi
[ "$(id -u)" = 0 ] || { echo "bench/lab.sh: needs root (network namespaces)" >&2; exit 2; }
for t in iperf3 ping ip python3; do
	command -v "$t" >/dev/null || { echo "bench: $t not found (apt-get install -y iperf3 iputils-ping iproute2 python3)" >&2; exit 2; }
done
BIN=$(mktemp -d)/fullpipe
CGO_ENABLED=0 go build -o "$BIN" ./cmd/fullpipe
NAME=fpbench
cleanup() { pkill -f "iperf3 -s -B 198.18" 2>/dev/null || true; "$BIN" lab down --name $NAME >/dev/null 2>&1 || true; }
trap cleanup EXIT

lab() { "$BIN" lab up --name $NAME --detach "$@" >/dev/null; }
server() { ip netns exec $NAME-server iperf3 -s -B 198.18.0.2 >/dev/null 2>&1 & sleep 0.5; }
iperf() { ip netns exec $NAME-client iperf3 -c 198.18.0.2 -J "$@" |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"])'; }

echo "lab benchmark, $(nproc) cores, $(uname -r), ${DUR} s per TCP run"
lab
server
bps=$(iperf -t "$DUR")
python3 -c "print('unlimited path, iperf3 1 stream:  %.2f Gbit/s' % ($bps/1e9))"
bps4=$(iperf -t "$DUR" -P 4)
python3 -c "print('unlimited path, iperf3 4 streams: %.2f Gbit/s' % ($bps4/1e9))"
cleanup

lab --rate 1G --rtt 50ms --queue 6250kB
server
ping_out=$(ip netns exec $NAME-client ping -n -q -c 50 -i 0.05 198.18.0.2 | tail -1)
bps=$(iperf -t "$DUR" -O 5 -P 4 -C cubic)
python3 - "$bps" "$ping_out" <<'PY'
import re, sys
bps = float(sys.argv[1])
ceiling = 1e9 * 1448 / 1538
mn, avg = map(float, re.search(r'= ([0-9.]+)/([0-9.]+)/', sys.argv[2]).groups())
want = 50 + 2 * (84 + 38) * 8 / 1e9 * 1e3
print('1 Gbit/s, 50 ms path: iperf3 4 streams cubic %.1f Mbit/s, ceiling %.1f Mbit/s, error %+.2f %%' % (bps/1e6, ceiling/1e6, (bps/ceiling-1)*100))
print('1 Gbit/s, 50 ms path: ping min %.3f ms, mean %.3f ms, set %.3f ms, error of the mean %+.3f ms' % (mn, avg, want, avg-want))
PY
