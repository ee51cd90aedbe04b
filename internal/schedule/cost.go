package schedule

// A test's cost: the sessions it opens one after another (each a control
// connection, a handshake, the test, its result) and the time of its own
// they spend (durations, drains and waits its config or the engine sets).
// The engine (package tester) says what one of its tests costs, beside
// the code that waits; a method (package method) adds up its steps with
// the same constants its runner uses. This package only does the
// arithmetic, and turns a cost into a slot (slot.go).

import (
	"math"
	"time"
)

// Cost is a test's time: sessions one after another, and the time of
// their own they spend. Every figure is an upper bound: the slot the
// controller books ends the run, so a bound too short would cut healthy
// runs.
type Cost struct {
	Run      time.Duration // the sessions' own time: durations, drains, waits
	Sessions int           // control sessions, one after another
	TCP      int           // of which TCP tests, which end in their senders' drain
	// RateBps is what a shared (non-exclusive) kind's run sends, bit/s
	// of IP packets (its probes; the replies come back as many). Plus
	// and Times drop it: it is one test's, not a sum's.
	RateBps float64
}

// Plus is c and o one after the other (saturating: a config of absurd
// durations is refused by its length, not wrapped around).
func (c Cost) Plus(o Cost) Cost {
	return Cost{Run: SatAdd(c.Run, o.Run), Sessions: c.Sessions + o.Sessions, TCP: c.TCP + o.TCP}
}

// Times is n of c one after the other.
func (c Cost) Times(n int) Cost {
	out := Cost{}
	if n > 0 {
		out = Cost{Run: SatMul(n, c.Run), Sessions: n * c.Sessions, TCP: n * c.TCP}
	}
	return out
}

// Longer is whichever of a and b takes the longer slot at rtt (its
// sessions' margins counted: a few more short tests may outweigh fewer
// long ones).
func Longer(a, b Cost, rtt time.Duration) Cost {
	if b.Slot(rtt) > a.Slot(rtt) {
		return b
	}
	return a
}

// SatAdd is a + b, saturating at the longest duration.
func SatAdd(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// SatMul is n × d, saturating at the longest duration.
func SatMul(n int, d time.Duration) time.Duration {
	if n > 0 && d > math.MaxInt64/time.Duration(n) {
		return math.MaxInt64
	}
	return time.Duration(n) * d
}

// BitsTime is how long bits take at bps, saturating (a float beyond
// int64 would convert to an undefined duration; no rate, forever).
func BitsTime(bits, bps float64) time.Duration {
	ns := bits / bps * 1e9
	if !(ns < math.MaxInt64) {
		return math.MaxInt64
	}
	return time.Duration(ns)
}
