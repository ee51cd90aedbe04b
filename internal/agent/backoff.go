package agent

import (
	"math/rand/v2"
	"time"
)

// Backoff is how an agent waits between failed calls to its controller
// (register, heartbeat, upload): Min, doubling with each failure up to
// Max, each wait drawn at random in its upper half (jitter) so that a
// fleet whose controller comes back does not call it in lockstep.
type Backoff struct {
	Min time.Duration // default 1 s
	Max time.Duration // default 1 min
}

// Defaults of Backoff.
const (
	DefaultBackoffMin = time.Second
	DefaultBackoffMax = time.Minute
)

func (b Backoff) withDefaults() Backoff {
	if b.Min <= 0 {
		b.Min = DefaultBackoffMin
	}
	if b.Max < b.Min {
		b.Max = max(DefaultBackoffMax, b.Min)
	}
	return b
}

// Delay is the wait after the failures-th failure in a row (from 1), in
// [d/2, d) with d = min(Min × 2^(failures-1), Max).
func (b Backoff) Delay(failures int) time.Duration {
	d := b.Min
	for i := 1; i < failures && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	return d/2 + rand.N(d/2+1)
}
