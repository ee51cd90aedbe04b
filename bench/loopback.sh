#!/usr/bin/env bash
# Loopback data-path benchmark: fullpipe vs iperf3 vs iperf2, run one
# after another in the same run, 1 and 4 TCP streams, DURATION each
# (default 10 s). Prints each tool's goodput, the CPU the whole machine
# spent (both ends and the kernel: busy jiffies from /proc/stat over the
# run), CPU-seconds per Gbit moved, and the ratios fullpipe/iperf3 and
# fullpipe/iperf2. Absolute numbers depend on the machine; compare the
# ratios, which are measured in the same run.
#
# With --rounds N the three tools run N times in turn (the servers stay
# up) and each round prints its own ratios, then the median of each ratio
# over the rounds: on a noisy machine one round proves little.
#
# Usage: bench/loopback.sh [--rounds N] [DURATION_SECONDS]   (needs iperf3, iperf, python3)
set -euo pipefail
cd "$(dirname "$0")/.."
usage() {
	echo "usage: bench/loopback.sh [--rounds N] [DURATION_SECONDS]   (whole seconds, 1-120; default 10; N 1-20, default 1)" >&2
	exit 2
}
DUR=10 ROUNDS=1
while (( $# > 0 )); do
	case $1 in
	--rounds) (( $# >= 2 )) || usage; ROUNDS=$2; shift 2 ;;
	--rounds=*) ROUNDS=${1#--rounds=}; shift ;;
	-*) usage ;;
	*) DUR=$1; shift ;;
	esac
done
if ! [[ $DUR =~ ^[1-9][0-9]*$ ]] || (( DUR > 120 )); then usage; fi
if ! [[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || (( ROUNDS > 20 )); then usage; fi
for t in iperf3 iperf python3; do
	command -v "$t" >/dev/null || { echo "bench: $t not found (apt-get install -y iperf3 iperf python3)" >&2; exit 2; }
done
BIN=$(mktemp -d)/fullpipe
CGO_ENABLED=0 go build -o "$BIN" ./cmd/fullpipe
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

"$BIN" serve -q -l 127.0.0.1:16349 2>/dev/null & PIDS+=($!)
iperf3 -s -B 127.0.0.1 -p 15201 >/dev/null 2>&1 & PIDS+=($!)
iperf -s -B 127.0.0.1 -p 15001 >/dev/null 2>&1 & PIDS+=($!)
sleep 1

busy() { awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat; }
HZ=$(getconf CLK_TCK)

# run TOOL STREAMS -> prints "bps cpu_seconds"
run() {
	local tool=$1 p=$2 out b0 t0 b1 t1 bps
	read -r b0 t0 < <(busy)
	case $tool in
	fullpipe) out=$("$BIN" tcp 127.0.0.1:16349 -P "$p" -t "${DUR}s" --json)
		bps=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["summary"]["throughput_bps"])' <<<"$out") ;;
	iperf3) out=$(iperf3 -c 127.0.0.1 -p 15201 -P "$p" -t "$DUR" -J)
		bps=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"])' <<<"$out") ;;
	iperf2) out=$(iperf -c 127.0.0.1 -p 15001 -P "$p" -t "$DUR" -y C)
		# CSV: ...,id,interval,bytes,bits_per_second; with -P > 1 the sum line has id -1.
		bps=$(python3 -c '
import sys
rows=[l.strip().split(",") for l in sys.stdin if l.count(",")>=8]
sums=[r for r in rows if r[5]=="-1"] or rows
print(sums[-1][8])' <<<"$out") ;;
	esac
	read -r b1 t1 < <(busy)
	echo "$bps $(( b1 - b0 )) $HZ"
}

RATIOS=$(mktemp)
declare -A BPS CPU
echo "loopback, ${DUR} s per run, $(nproc) cores, $(uname -r), ${ROUNDS} round(s)"
for (( r = 1; r <= ROUNDS; r++ )); do
	(( ROUNDS == 1 )) || echo "round $r"
	printf '%-9s %-8s %14s %14s %16s\n' tool streams goodput "machine CPU" "CPU-s per Gbit"
	for p in 1 4; do
		for tool in fullpipe iperf3 iperf2; do
			read -r bps jif hz < <(run "$tool" "$p")
			BPS[$tool$p]=$bps
			CPU[$tool$p]=$(python3 -c "print($jif/$hz)")
			python3 -c "
bps=$bps; cpu=$jif/$hz; d=$DUR
print('%-9s %-8d %9.2f Gbit/s %8.2f cores %12.4f s' % ('$tool', $p, bps/1e9, cpu/d, cpu/(bps*d/1e9)))"
			sleep 1
		done
	done
	echo
	for p in 1 4; do
		python3 -c "
f,i3,i2=${BPS[fullpipe$p]},${BPS[iperf3$p]},${BPS[iperf2$p]}
cf,c3,c2=${CPU[fullpipe$p]},${CPU[iperf3$p]},${CPU[iperf2$p]}
# CPU per bit: lower is better; ratio < 1 means fullpipe spends less.
r=(f/i3, f/i2, (cf/f)/(c3/i3), (cf/f)/(c2/i2))
print('%d stream(s): goodput fullpipe/iperf3 = %.2f, fullpipe/iperf2 = %.2f; CPU per Gbit fullpipe/iperf3 = %.2f, fullpipe/iperf2 = %.2f' % (($p,)+r))
open('$RATIOS','a').write('%d %r %r %r %r\n' % (($p,)+r))"
	done
	(( r == ROUNDS )) || echo
done
if (( ROUNDS > 1 )); then
	echo
	python3 -c "
import statistics
rows=[l.split() for l in open('$RATIOS')]
for p in ('1','4'):
    m=[statistics.median(float(r[i]) for r in rows if r[0]==p) for i in range(1,5)]
    print('%s stream(s), median of $ROUNDS: goodput fullpipe/iperf3 = %.2f, fullpipe/iperf2 = %.2f; CPU per Gbit fullpipe/iperf3 = %.2f, fullpipe/iperf2 = %.2f' % tuple([p]+m))"
fi
rm -f "$RATIOS"
