package schedule

import (
	"encoding/json"
	"time"

	"github.com/fullpipe/fullpipe/internal/wire"
)

// The margin around a test: what the engine does before and after the
// time of its own (Length), read from its code. Per session (each
// control connection a test or a method's step opens):
//
//   - handshakeRTTs round trips from the dial to the start, each a wait
//     for the other end (tester/session.go open and startTest,
//     serve/auth.go): the TCP connect; TLS 1.3's handshake (with --tls);
//     the client's preamble to the responder's preamble and hello (the
//     responder speaks second); the request (and the proof, sent with
//     it) to auth_ok and accept; the data connections' connect, all at
//     once, their hellos arriving with the start; start to started.
//   - endRTTs round trips from the end of the test's own time to its
//     result in the client's hands: the responder's clock starts half a
//     round trip before the client's; the last bytes, FIN or stop take
//     half a round trip to the far end; the result half a round trip
//     back (and a TCP sender's drain at least one, within wire.EndGrace).
//   - sessionSetup, the work between the round trips: a DNS answer from
//     a local cache, the dials, TLS's key exchange and certificate check,
//     sockets and goroutines, on a busy host.
//   - wire.EndGrace for a TCP test, the responder's hard bound on a
//     session past its duration (package serve keeps it): the sender's
//     wait for its last acknowledgements (wire.DrainMax, 5 s, a full send
//     buffer into a slow bottleneck, package flow's) and a second for the
//     result. A healthy test takes a round trip or two of it; the slot
//     takes all of it, so that the agent's cancel at the slot's end
//     never cuts one.
//
// And once per slot, guard: the agent's timer and the start of its run,
// and the offset between the two agents' clocks (NTP holds it to
// milliseconds), so a run that starts a little late still ends inside
// its slot.
//
// The RTT terms are what makes a far path's slot longer: 8 round trips a
// session, 2.4 s on a 300 ms path, 8 ms on a 1 ms one. (perfSONAR's
// pScheduler sized a throughput run's slot from its duration, and on a
// 560 ms satellite path its runs overran it and failed: its issue 868.)
const (
	handshakeRTTs = 6
	endRTTs       = 2
	sessionSetup  = 100 * time.Millisecond
	guard         = time.Second
)

// sessionMargin is one session's time beyond its own, at rtt.
func sessionMargin(rtt time.Duration) time.Duration {
	return SatAdd(SatMul(handshakeRTTs+endRTTs, max(rtt, 0)), sessionSetup)
}

// Slot is c's slot at rtt: its own time, each session's margin, each
// TCP test's end grace, and the guard.
func (c Cost) Slot(rtt time.Duration) time.Duration {
	s := SatAdd(guard, c.Run)
	s = SatAdd(s, SatMul(c.Sessions, sessionMargin(rtt)))
	return SatAdd(s, SatMul(c.TCP, wire.EndGrace))
}

// Slot is the time to book for one session of length on a path of round
// trip rtt: length, the margin of one session of any kind (its
// handshake, its end, a TCP sender's drain) and the guard; see the terms
// above. It is a bound for a test of one session whose length does not
// depend on the RTT: tcp, udp, rtt. The methods open a session per step
// and the path MTU search waits for timeouts of 4 RTTs: SlotFor costs
// any kind whole.
func Slot(length, rtt time.Duration) time.Duration {
	return Cost{Run: length, Sessions: 1, TCP: 1}.Slot(rtt)
}

// SlotFor is the time to book for a test of this kind with cfg (as
// Length takes it) on a path of round trip rtt: every session's own time
// at that RTT (probe timeouts and trains grow with it), each one's
// margin, each TCP test's end grace and the guard. The agent cancels a
// run at its slot's end, so this is an upper bound, not an estimate:
// pass the largest RTT the path is expected to have (an rtt test's
// maximum, not its mean), and a pessimistic one for a path not yet
// measured.
func (k Costing) SlotFor(cfg json.RawMessage, rtt time.Duration) (time.Duration, error) {
	c, err := k.CostAt(cfg, rtt)
	if err != nil {
		return 0, err
	}
	return c.Slot(rtt), nil
}
