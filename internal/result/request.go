package result

// The request each engine config asks the responder for. Its rules
// (wire.Request.Validate) are the same on both ends: the client checks
// them before it sends, the responder when it receives.

import (
	"time"

	"github.com/fullpipe/fullpipe/internal/wire"
)

// Sessions of the probing tests.
const (
	// ReplyWait is how long an rtt test waits for its last replies.
	ReplyWait = time.Second
	// PMTUSession is the session a path MTU search asks for: it fits a
	// responder's --public limit and a search of 20 sizes with timeouts
	// up to 500 ms.
	PMTUSession = 30 * time.Second
	// LatencyIdleProbes are the probes of a tcp test's --latency before
	// the load, and LatencyProbeGap their period during it.
	LatencyIdleProbes = 10
	LatencyProbeGap   = 100 * time.Millisecond
)

// Request is the TCP test's request.
func (c TCPConfig) Request() wire.Request {
	return wire.Request{Kind: wire.KindTCP, Streams: c.Streams, Duration: c.Duration, Bytes: c.Bytes,
		Reverse: c.Reverse, Bidir: c.Bidir, Window: c.Window, CC: c.CC, MSS: c.MSS, PacingBps: c.PacingBps,
		DSCP: c.DSCP, Interval: c.Interval, Latency: c.Latency, WriteSize: c.WriteSize, Probes: c.probes()}
}

// probes is how many echo probes the test sends (0: no estimate, the
// responder's default budget applies).
func (c TCPConfig) probes() int {
	if !c.Latency || c.Duration <= 0 {
		return 0
	}
	return LatencyIdleProbes + int(c.Duration/LatencyProbeGap) + 10
}

// Request is the UDP test's request.
func (c UDPConfig) Request() wire.Request {
	return wire.Request{Kind: wire.KindUDP, RateBps: c.RateBps, Size: c.Size, Duration: c.Duration, Reverse: c.Reverse, Interval: c.Interval,
		DSCP: c.DSCP, EchoEvery: c.EchoEvery}
}

// Request is the rtt test's session: it lasts the probes, the wait for
// the last replies and 5 s of slack.
func (c RTTConfig) Request() wire.Request {
	span := time.Duration(c.Count)*c.Interval + ReplyWait + 5*time.Second
	return wire.Request{Kind: wire.KindRTT, Duration: span, Interval: max(c.Interval, time.Second), Probes: c.Count, ProbeSize: c.Size}
}

// Request is the search's session: at most Tries probes per size, over
// two directions of up to 2 + 16 sizes each (a binary search of 16-bit
// sizes), after 5 idle probes.
func (c PMTUConfig) Request() wire.Request {
	probes := 5 + 2*c.Tries*(2+16)
	return wire.Request{Kind: wire.KindRTT, Duration: PMTUSession, Interval: time.Second, MTU: true, Probes: probes}
}

// Request is the train's session: it lasts the train at 10 Mbit/s at
// the least, plus the drain and the handshake's slack.
func (c TrainConfig) Request() wire.Request {
	span := time.Duration(float64(c.Packets*(c.Size+c.Overhead)) * 8 / 10e6 * 1e9)
	return wire.Request{Kind: wire.KindTrain, TrainPackets: c.Packets, Size: c.Size, OverheadBytes: c.Overhead, Reverse: c.Reverse, RateBps: c.RateBps,
		Duration: span + c.Drain + 3*time.Second, Interval: time.Second}
}
