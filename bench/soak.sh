#!/usr/bin/env bash
# Soak benchmark (not a test): for MINUTES (default 3), 20 well-behaved
# clients (each from its own 127.0.1.x address) loop over short
# tcp/udp/rtt/mtu tests at 20 Mbit/s against a `fullpipe serve` on
# 127.0.0.1:16350 while an abuse mix runs from 127.0.2.x and 127.0.3.x:
# rounds of 2,400 idle and half-open connections, oversized and garbage
# frames, a UDP flood of 12,800 datagrams/s from 64 source ports, and
# sessions whose clients stop reading. Prints legitimate tests completed
# vs refused, the responder's peak RSS and fd count, crashes (must be 0),
# recovered panics and the time to return to idle. A STAMP reflector runs
# beside the responder and a second one beside it; as root, packets
# forged to come from the second try to start a reflection loop.
#
# Then the fleet under hostile agents (issue 22): one `fullpipe
# controller` on SQLite, 100 legitimate agents (bench/fleetload) each
# uploading 20 results while 2 rogue agents with their own tokens send
# the issue's attacks round after round (15 MiB uploads, events past a
# run's cap, an RTT of 11.6 days, results for cancelled runs, heartbeats
# naming 257 runs, the metadata service's address, approving
# themselves). Prints each attack's answers (as owed or not), the
# legitimate results stored and read back, uploads answered 429 and
# retried, and the controller's peak RSS and crashes. Loopback only.
#
# Usage: bench/soak.sh [MINUTES]   (1-60; default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
MIN=${1:-3}
if ! [[ $MIN =~ ^[1-9][0-9]*$ ]] || (( MIN > 60 )); then
	echo "usage: bench/soak.sh [MINUTES]   (whole minutes, 1-60; default 3)" >&2
	exit 2
fi
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
CGO_ENABLED=0 go build -o "$DIR/fullpipe" ./cmd/fullpipe
CGO_ENABLED=0 go build -o "$DIR/soak" ./bench/soak
CGO_ENABLED=0 go build -o "$DIR/fleetload" ./bench/fleetload
ulimit -n 20000 2>/dev/null || true
"$DIR/soak" -bin "$DIR/fullpipe" -minutes "$MIN" -clients 20

echo "== the fleet under hostile agents"
PORT=$(free_port) STATE=$DIR/state
mkdir -p "$STATE"
"$DIR/fullpipe" controller --listen "127.0.0.1:$PORT" --state-dir "$STATE" --db "$DIR/fleet.db" --heartbeat 2s -q 2>"$DIR/ctl.log" &
CTL=$!
wait_controller "$STATE"
rc=0
"$DIR/fleetload" -url "https://127.0.0.1:$PORT" -state-dir "$STATE" -db "$DIR/fleet.db" -agents 100 -runs 20 \
	-heartbeat 2s -steady 5s -hostile 2 -rounds 20 -timeout 10m >"$DIR/fleet.json" || rc=$?
HWM=$(awk '/VmHWM/ {print $2}' "/proc/$CTL/status" 2>/dev/null || echo 0)
ALIVE=1
kill -0 "$CTL" 2>/dev/null || ALIVE=0
kill "$CTL" 2>/dev/null || true
wait "$CTL" 2>/dev/null || true
[ "$rc" = 0 ] || { echo "fleetload failed (exit $rc); controller log:" >&2; tail -5 "$DIR/ctl.log" >&2; exit 1; }
python3 - "$DIR/fleet.json" "$HWM" "$ALIVE" <<'PY'
import json, sys
o, hwm, alive = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
h = o["hostile"]
print(f"legitimate: {o['agents']} agents, {o['results']} results stored, {o['in_store']} read back from the store, "
      f"{o['busy']} uploads answered 429 and retried; lost {o['results'] - o['in_store']}")
print(f"hostile: {h['agents']} agents, {h['rounds']} rounds (attack: answers as owed / 429, the uploads' limit / other):")
for k, v in sorted(h["answers"].items()):
    print(f"  {k:40} {v.get('as owed', 0):4} / {v.get('busy', 0):3} / {v.get('other', 0)}")
for line in h.get("other") or []:
    print("  e.g.", line)
print(f"controller: peak RSS {hwm/1024:.0f} MiB, crashes {1 - alive}")
bad = o['results'] != o['in_store'] or not alive or any(v.get('other', 0) for v in h['answers'].values())
sys.exit(1 if bad else 0)
PY
