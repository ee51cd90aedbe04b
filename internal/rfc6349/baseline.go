package rfc6349

import (
	"fmt"
	"time"
)

// Baseline cross-check. The UDP probes and TCP's own RTT samples (the
// kernel's tcpi_min_rtt, timed from its handshake and ACKs) cross the same
// path, and neither can come back faster than the path's propagation and
// serialisation allow: a minimum is never below that floor, only above it
// (queueing, a host slow to answer). So the two minima agree to within
// what lifts one of them above the floor and not the other:
//   - the host: a minimum of a handful of TCP samples (a control
//     connection's handshake and frames) sits up to 1.3 ms above the UDP
//     minimum on the lab's 30 ms path on a busy 2-core host; 2 ms covers
//     that and the user-space wake-ups on the UDP path;
//   - the path: delay variation (jitter, a route's load) between two
//     measurements seconds apart, which a minimum of few samples keeps;
//     10 % of the RTT is more than a queue-free path varies by.
//
// A UDP baseline shorter than TCP's minimum by more than that is not a
// measurement of this path (issue 9: 15.7 ms on a 30.6 ms path, 49 %
// short); one longer by more than that saw a queue TCP did not. Either
// way TCP's figure, the lower one that is physically possible, is the
// better estimate of the floor.

// BaselineTolerance is how far apart a UDP baseline and TCP's minimum RTT
// of the same path may be: 2 ms + 10 % of TCP's minimum (see above).
func BaselineTolerance(tcpMin time.Duration) time.Duration {
	return 2*time.Millisecond + tcpMin/10
}

// BaselineAgrees reports whether a UDP baseline and TCP's minimum RTT
// agree within BaselineTolerance, and if not, says how and why in a
// sentence for the report. An unknown figure (≤ 0) agrees.
func BaselineAgrees(udp, tcpMin time.Duration) (ok bool, why string) {
	if udp <= 0 || tcpMin <= 0 {
		return true, ""
	}
	tol := BaselineTolerance(tcpMin)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	switch {
	case udp < tcpMin-tol:
		return false, fmt.Sprintf("UDP baseline %.3f ms is %.3f ms below TCP's own minimum RTT %.3f ms (tolerance %.3f ms): shorter than the path allows, so not a measurement of it",
			ms(udp), ms(tcpMin-udp), ms(tcpMin), ms(tol))
	case udp > tcpMin+tol:
		return false, fmt.Sprintf("UDP baseline %.3f ms is %.3f ms above TCP's own minimum RTT %.3f ms (tolerance %.3f ms): the probes saw a queue TCP did not",
			ms(udp), ms(udp-tcpMin), ms(tcpMin), ms(tol))
	}
	return true, ""
}
