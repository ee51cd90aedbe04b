package lab

import (
	"context"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"
)

// pinged is one ping as ping saw it and as the forwarder recorded it.
type pinged struct {
	Seq     int
	RTT     time.Duration // ping's figure (printed to 0.1 ms at 10-100 ms)
	Virtual time.Duration // the emulated path's hold of the request plus the reply
	// Late is how long after their virtual departures the forwarder's
	// writes of them returned: its lateness plus the kernels' work within
	// the writes (the reply made and sent on within the request's), time
	// the hosts add that the forwarder measures.
	Late time.Duration
	Up   TraceRecord // the request
	Down TraceRecord // the reply
}

// Excess is what the hosts added to the emulated path: ping's RTT minus
// the time the emulator held the request and the reply.
func (p pinged) Excess() time.Duration { return p.RTT - p.Virtual }

var pingSeqTime = regexp.MustCompile(`icmp_seq=([0-9]+) .*time=([0-9.]+) ms`)

// pingTraced pings from the client count times every gap and joins each
// answered ping with the forwarder's records of its request and reply
// (new records only, so earlier pings of the same test do not match).
func pingTraced(t *testing.T, l *Lab, count int, gap time.Duration, size int) []pinged {
	t.Helper()
	return pingTrace(t, l.Client.NetNS, l.Server.Addr, count, gap, size, l.Trace)
}

// pingTrace pings addr from namespace ns and joins each answered ping
// with the records trace returns: requests from up, replies from down (a
// sites lab returns all its records as both).
func pingTrace(t *testing.T, ns string, addr netip.Addr, count int, gap time.Duration, size int, trace func() (up, down []TraceRecord)) []pinged {
	t.Helper()
	up0, down0 := trace()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second+time.Duration(count)*gap)
	defer cancel()
	out, err := inNSCmd(ctx, ns, "ping", "-n", "-c", strconv.Itoa(count), "-i", strconv.FormatFloat(gap.Seconds(), 'f', 3, 64),
		"-s", strconv.Itoa(size), addr.String()).CombinedOutput()
	if err != nil {
		t.Fatalf("ping: %v\n%s", err, out)
	}
	answered := pingSeqTime.FindAllStringSubmatch(string(out), -1)
	req, rep := traceByICMP(trace, len(up0), len(down0)) // every write ping saw is stamped (pipe.records)
	var ps []pinged
	for _, m := range answered {
		seq, _ := strconv.Atoi(m[1])
		ms, _ := strconv.ParseFloat(m[2], 64)
		u, okU := req[uint16(seq)]
		d, okD := rep[uint16(seq)]
		if !okU || !okD || u.Written == 0 || d.Written == 0 {
			t.Fatalf("ping %d answered but the forwarder has no record of its request and reply", seq)
		}
		ps = append(ps, pinged{Seq: seq, RTT: time.Duration(ms * float64(time.Millisecond)), Virtual: u.Virtual() + d.Virtual(),
			Late: u.Late() + u.Work() + d.Late() + d.Work(), Up: u, Down: d})
	}
	if len(ps) == 0 {
		t.Fatalf("no ping answered:\n%s", out)
	}
	return ps
}

// traceByICMP is the trace's echo requests going up and replies coming
// down, after the first up0 and down0 records, by ICMP sequence.
func traceByICMP(trace func() (up, down []TraceRecord), up0, down0 int) (req, rep map[uint16]TraceRecord) {
	up, down := trace()
	req, rep = map[uint16]TraceRecord{}, map[uint16]TraceRecord{}
	for _, r := range up[up0:] {
		if r.ICMPType == 8 {
			req[r.Seq] = r
		}
	}
	for _, r := range down[down0:] {
		if r.ICMPType == 0 {
			rep[r.Seq] = r
		}
	}
	return req, rep
}

// quantile is the q-quantile (nearest rank) of ds.
func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func excesses(ps []pinged) []time.Duration {
	out := make([]time.Duration, len(ps))
	for i, p := range ps {
		out[i] = p.Excess()
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
