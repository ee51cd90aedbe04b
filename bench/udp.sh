#!/usr/bin/env bash
# Loopback UDP benchmark: fullpipe vs iperf3 -u vs iperf2 -u, one after
# another in the same run, at UDP payloads of 18, 82 and 470 bytes
# (RFC 2544's 64-, 128- and 512-byte Ethernet frames over IPv4: payload
# = frame - 46) and 1472 bytes (a 1500-byte IP packet), each at a very
# high asked rate (what the generator manages: fullpipe --rate 100G,
# iperf3 -b 0, iperf2 -b 100G) and at a fixed 100,000 datagrams/s.
# DURATION seconds each (default 5).
#
# Per run: datagrams sent and received (each tool's own count, as
# payload bytes / size), received datagrams/s, goodput (received payload
# bit/s), loss (1 - received / sent), the CPU the tool's two processes
# spent (client and server, user + system: on loopback the system part
# includes the delivery their system calls do) per datagram sent, and
# for fullpipe whether it said generator-limited and the receiving
# socket's own drops it reported (receiver_drops: a lower bound, one per
# coalesced buffer). (Not the machine's
# busy time: on a shared machine that counts other jobs.) Then the
# ratios fullpipe/iperf3 and fullpipe/iperf2 of received datagrams/s
# (goodput at 1472 B) and of CPU per datagram. Absolute numbers depend
# on the machine and on what else runs on it; the ratios are measured
# in the same run.
#
# Usage: bench/udp.sh [DURATION_SECONDS]   (needs iperf3, iperf, python3)
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-5}
if ! [[ $DUR =~ ^[1-9][0-9]*$ ]] || (( DUR > 60 )); then
	echo "usage: bench/udp.sh [DURATION_SECONDS]   (whole seconds, 1-60; default 5)" >&2
	exit 2
fi
for t in iperf3 iperf python3; do
	command -v "$t" >/dev/null || { echo "bench: $t not found (apt-get install -y iperf3 iperf python3)" >&2; exit 2; }
done
TMP=$(mktemp -d)
BIN=$TMP/fullpipe
CGO_ENABLED=0 go build -o "$BIN" ./cmd/fullpipe
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT

declare -A SRV
"$BIN" serve -q -l 127.0.0.1:16350 2>/dev/null & PIDS+=($!); SRV[fullpipe]=$!
iperf3 -s -B 127.0.0.1 -p 15202 >/dev/null 2>&1 & PIDS+=($!); SRV[iperf3]=$!
# iperf2's loss is in its server's report: one CSV line per test.
iperf -s -u -B 127.0.0.1 -p 15002 -y C >"$TMP/iperf2.csv" 2>/dev/null & PIDS+=($!); SRV[iperf2]=$!
sleep 1

# cpu PID: the process's user + system CPU so far, in clock ticks
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
# the client's user + system CPU, in seconds, written by /usr/bin/time
CT=$TMP/client-time
FIXED_PPS=100000

# run TOOL SIZE MODE -> prints "sent received limited cpu_seconds"
# (cpu: the client's and the server's processes, user + system: the
# system part includes the loopback delivery their system calls do)
run() {
	local tool=$1 size=$2 mode=$3 out b0 b1 rate res lines
	rate=$(( size * 8 * FIXED_PPS ))
	b0=$(cpu "${SRV[$tool]}")
	case $tool in
	fullpipe)
		[[ $mode == max ]] && rate=100G
		[[ $mode == max ]] || rate="${rate}bit/s"
		out=$(/usr/bin/time -f '%U %S' -o "$CT" "$BIN" udp 127.0.0.1:16350 --rate "$rate" --size "$size" -t "${DUR}s" --json || true)
		res=$(python3 -c '
import json,sys
s=json.load(sys.stdin)["summary"]
print(s["sent_packets"], s["received_packets"], ("yes" if s.get("generator_limited") else "no")+"/%d" % s.get("receiver_drops",0))' <<<"$out") ;;
	iperf3)
		[[ $mode == max ]] && rate=0
		out=$(/usr/bin/time -f '%U %S' -o "$CT" iperf3 -c 127.0.0.1 -p 15202 -u -b "$rate" -l "$size" -t "$DUR" -J)
		res=$(python3 -c '
import json,sys
e=json.load(sys.stdin)["end"]; n='"$size"'
print(e["sum_sent"]["bytes"]//n, e["sum_received"]["bytes"]//n, "-")' <<<"$out") ;;
	iperf2)
		[[ $mode == max ]] && rate=100G
		lines=$(wc -l <"$TMP/iperf2.csv")
		out=$(/usr/bin/time -f '%U %S' -o "$CT" iperf -c 127.0.0.1 -p 15002 -u -b "$rate" -l "$size" -t "$DUR" -y C 2>/dev/null | head -1)
		for _ in $(seq 50); do (( $(wc -l <"$TMP/iperf2.csv") > lines )) && break; sleep 0.1; done
		res=$(python3 -c '
import sys
n='"$size"'
sent=int(sys.argv[1].split(",")[7])//n
rows=[l for l in open(sys.argv[2]) if l.count(",")>=8]
got=int(rows[-1].split(",")[7])//n if len(rows)>'"$lines"' else 0
print(sent, got, "-")' "$out" "$TMP/iperf2.csv") ;;
	esac
	b1=$(cpu "${SRV[$tool]}")
	echo "$res $(python3 -c "u,s=open('$CT').read().split()[-2:]; print(float(u)+float(s)+($b1-$b0)/$HZ)")"
}

RES=$TMP/results
echo "loopback UDP, ${DUR} s per run, $(nproc) cores, $(uname -r), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-5s %-6s %-9s %11s %11s %12s %13s %8s %12s %8s\n' size rate tool sent received "received/s" goodput loss "CPU/datagram" "limited/host drops"
for size in 18 82 470 1472; do
	for mode in max fixed; do
		for tool in fullpipe iperf3 iperf2; do
			read -r sent got lim cpus < <(run "$tool" "$size" "$mode")
			python3 -c "
sent,got,d,cpus=$sent,$got,$DUR,$cpus
loss=(1-got/sent)*100 if sent else float('nan')
ns=cpus/sent*1e9 if sent else float('nan')
print('%-5d %-6s %-9s %11d %11d %12.0f %8.1f Mbit/s %7.2f%% %9.0f ns %8s' % ($size,'$mode','$tool',sent,got,got/d,got*$size*8/d/1e6,loss,ns,'$lim'))
open('$RES','a').write('%d %s %s %d %d %r\n' % ($size,'$mode','$tool',sent,got,ns))"
			sleep 1
		done
	done
done
echo
python3 -c "
rows={}
for l in open('$RES'):
    size,mode,tool,sent,got,ns=l.split()
    rows[(int(size),mode,tool)]=(int(sent),int(got),float(ns))
for size in (18,82,470,1472):
    for mode in ('max','fixed'):
        f=rows[(size,mode,'fullpipe')]
        what='goodput' if size==1472 else 'received datagrams/s'
        out=[]
        for o in ('iperf3','iperf2'):
            r=rows[(size,mode,o)]
            rr=f[1]/r[1] if r[1] else float('inf')
            cr=f[2]/r[2] if r[2] else float('nan')
            out.append('%s fullpipe/%s = %.2f, CPU per datagram %.2f' % (what,o,rr,cr))
        print('%4d B %-5s: %s' % (size,mode,'; '.join(out)))"
