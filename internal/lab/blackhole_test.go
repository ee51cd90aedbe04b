package lab

import (
	"context"
	"testing"
	"time"
)

// blackHolePath is issue 9's hard path: 80 Mbit/s, 30 ms RTT, a queue of
// 2 MB (200 ms at the rate, about 7 BDPs), and a path MTU of 1400 B in
// both directions with ICMP fragmentation-needed dropped (a PMTUD black
// hole). The interfaces' MTU is 1500 B.
func blackHolePath() Direction {
	return Direction{RateBps: 80e6, Delay: 15 * time.Millisecond, QueueBytes: 2_000_000, MTU: 1400}
}

// TestBlackHoleControlFrames: on a black-holed path, TCP tests shaped like
// RFC 6349's shaping step (4 cubic streams, unbounded windows, MSS from
// the probed MTU: 1400 − 40) deliver every interval and their result, 6
// times in a row, alternating up and down. Their interval and result
// frames carry per-stream TCP_INFO and series data, 1-3 kB: before the
// control connection took the test's MSS, such a frame went out in a
// 1448 B segment, was dropped at every retransmission, and the test ended
// "no result from the responder 15s after the test's end" (3 of 3 runs of
// rfc6349 --quick on this path). The first lost result fails the test, so
// a regression costs one 17 s wait, not six.
func TestBlackHoleControlFrames(t *testing.T) {
	needRoot(t)
	bin := buildFullpipe(t)
	l := startLab(t, "trbhc", blackHolePath())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	startResponder(t, ctx, bin, l)
	for i := range 6 {
		args := []string{bin, "tcp", l.Server.Addr.String(), "--json", "-P", "4", "--cc", "cubic", "-t", "2s", "--mss", "1360"}
		if i%2 == 1 {
			args = append(args, "--reverse")
		}
		var s tcpSummary
		err := clientJSON(t, ctx, l, &s, args...)
		if err != nil || s.Summary.Partial {
			t.Fatalf("run %d (reverse %v): error %v, partial %v: a control frame was lost on the black-holed path", i+1, i%2 == 1, err, s.Summary.Partial)
		}
	}
}
