package dispersion_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	. "github.com/fullpipe/fullpipe/internal/dispersion"
	"github.com/fullpipe/fullpipe/internal/dispersion/dispersiontest"
	"github.com/fullpipe/fullpipe/internal/link"
)

// send runs one train through a fresh chain from mk (dispersiontest.Send),
// the packets counting as large as they are.
func send(mk func() *link.Chain, n, size int, senderBps float64, noise time.Duration, rng *rand.Rand) Train {
	return dispersiontest.Send(mk, n, size, size, senderBps, noise, rng)
}

func within(got, want, tol float64) bool { return math.Abs(got-want) <= tol*want }

// TestRead: one train through a 10 Mbit/s queue of 3,000 bytes, sent at
// 100 Mbit/s: the queue holds two 1500-byte packets behind the one in
// service, so the head is 3 packets spaced at 10 Mbit/s; then one packet
// in ten gets through, still at 10 Mbit/s, each having waited about two
// services (2.4 ms, less up to one 120-µs send gap) more than the first.
func TestRead(t *testing.T) {
	mk := func() *link.Chain { return link.NewChain(nil, &link.Bottleneck{RateBps: 10e6, QueueBytes: 3000}) }
	r := Read(send(mk, 200, 1500, 100e6, 0, nil))
	t.Logf("%+v", r)
	if r.HeadPackets != 3 || !within(r.HeadBps, 10e6, 0.001) || !within(r.SendBps, 100e6, 0.001) {
		t.Errorf("head %d packets at %.0f bit/s (sent at %.0f), want 3 at 10 Mbit/s (sent at 100)", r.HeadPackets, r.HeadBps, r.SendBps)
	}
	if !within(r.TailBps, 10e6, 0.001) {
		t.Errorf("tail at %.0f bit/s, want the queue's 10 Mbit/s", r.TailBps)
	}
	if r.TailRise < 2280*time.Microsecond || r.TailRise > 2400*time.Microsecond {
		t.Errorf("tail delay rise %v, want 2.28-2.4 ms", r.TailRise)
	}
}

// TestHeldDelayRise: a held packet carries the stamp taken before its
// sender was held, so its one-way delay read from the stamp holds the
// hold too. On a path with no queue (a 10 ms delay, a sender at 100
// Mbit/s) a 2 ms hold at packet 20 of 64 reads no delay rise beyond the
// stamps' noise: the rise, and a queue's lower bound built on it, is the
// queue's, not the host's. Without the hold reported it reads 2 ms.
func TestHeldDelayRise(t *testing.T) {
	mk := func() *link.Chain { return link.NewChain(nil, &link.Delay{Delay: 10 * time.Millisecond}) }
	const noise = 30 * time.Microsecond
	held := dispersiontest.SendHeldOnce(mk, 64, 1500, 1500, 100e6, 20, 2*time.Millisecond, noise, rand.New(rand.NewPCG(1, 1)))
	r := Read(held)
	if r.SenderHeld != 2*time.Millisecond || r.DelayRise > noise {
		t.Errorf("held %v, delay rise %v: want 2 ms held and a rise within %v", r.SenderHeld, r.DelayRise, noise)
	}
	held[20].Held = 0 // a sender that does not say
	if r := Read(held); r.DelayRise < 2*time.Millisecond-noise {
		t.Errorf("unreported hold: delay rise %v, want about 2 ms (the test's own check)", r.DelayRise)
	}
}
