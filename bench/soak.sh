#!/usr/bin/env bash
# Soak benchmark (not a test): for MINUTES (default 3), 20 well-behaved
# clients (each from its own 127.0.1.x address) loop over short
# tcp/udp/rtt/mtu tests at 20 Mbit/s against a `fullpipe serve` on
# 127.0.0.1:16350 while an abuse mix runs from 127.0.2.x and 127.0.3.x:
# rounds of 2,400 idle and half-open connections, oversized and garbage
# frames, a UDP flood of 12,800 datagrams/s from 64 source ports, and
# sessions whose clients stop reading. Prints legitimate tests completed
# vs refused, the responder's peak RSS and fd count, crashes (must be 0),
# recovered panics and the time to return to idle. Loopback only.
#
# Usage: bench/soak.sh [MINUTES]   (1-60; default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
MIN=${1:-3}
if ! [[ $MIN =~ ^[1-9][0-9]*$ ]] || (( MIN > 60 )); then
	echo "usage: bench/soak.sh [MINUTES]   (whole minutes, 1-60; default 3)" >&2
	exit 2
fi
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
CGO_ENABLED=0 go build -o "$DIR/fullpipe" ./cmd/fullpipe
CGO_ENABLED=0 go build -o "$DIR/soak" ./bench/soak
ulimit -n 20000 2>/dev/null || true
"$DIR/soak" -bin "$DIR/fullpipe" -minutes "$MIN" -clients 20
