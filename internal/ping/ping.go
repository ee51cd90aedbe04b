// Package ping is the mathematics of the single-ended tests (fullpipe
// ping): what the fates of a run of probes say (no loss, a path's loss,
// a queue at the path's capacity, or an ICMP rate limiter's token
// bucket) and the echo rate search's strategy. No sockets and no clocks:
// send times are offsets passed in (docs/single.md).
package ping

import (
	"math"
	"slices"
	"time"
)

// Fate is one probe as its sender saw it.
type Fate struct {
	Sent     time.Duration // send time, from any fixed origin (monotonic)
	Answered bool
	RTT      time.Duration // when Answered
}

// Kind is what a run's losses were.
type Kind string

// The kinds of verdict.
const (
	Clean       Kind = "clean"        // every probe answered
	Loss        Kind = "loss"         // losses as a path's, with no pattern of a limiter or a queue
	RateLimited Kind = "rate-limited" // a burst answered, then replies at a steady rate below the offered one: a token bucket at the host or a router
	Capacity    Kind = "capacity"     // the same pattern with the RTT grown: a queue at the path's capacity, not a limiter
	Silent      Kind = "silent"       // no reply at all (filtered, or the host down)
)

// MinProbes is the fewest probes a pattern is judged from, and MinGaps
// the fewest gaps between replies after the burst: fewer are read as
// plain loss.
const (
	MinProbes = 20
	MinGaps   = 5
)

// Verdict is what a run's fates say.
type Verdict struct {
	Kind          Kind    `json:"kind"`
	Sent          int     `json:"sent"`
	Answered      int     `json:"answered"`
	LossPct       float64 `json:"loss_pct"`
	OfferedPerSec float64 `json:"offered_per_s"` // the probes' rate
	// LimitPerSec and Burst are the token bucket the fates show
	// (RateLimited and Capacity): its refill rate in replies/s (the rate
	// of replies after the first refusal) and its depth in replies (full
	// at the start: the smallest depth that answers the first run of
	// answers, with what refilled during it).
	LimitPerSec float64 `json:"limit_per_s,omitempty"`
	Burst       int     `json:"burst,omitempty"`
	// Explained is the share of the gaps between replies after the burst
	// that the limiter's spacing predicts.
	Explained float64 `json:"explained,omitempty"`
	// QueueDelay is how much the answered probes' median RTT late in the
	// run exceeds the smallest RTT of the burst (Capacity: a queue
	// filled).
	QueueDelay time.Duration `json:"queue_delay_ns,omitempty"`
}

// Classify reads a run of probes (in send order, sent at a steady rate).
// A limiter answers a burst, then one probe every R/r (the offered rate
// over its own): after the first refusal the gaps between answered
// probes, counted in probes, take the two values around their mean.
// Random loss spaces them geometrically. The limiter is preferred when
// its model of the gaps (those two values, a share ε of others) beats
// the geometric one by the Bayesian information criterion's margin for
// its two extra parameters plus e^5 odds. A limiter whose answers late in
// the run all wait longer than the burst's fastest is a queue at the
// path's capacity (queueDelay).
func Classify(fates []Fate) Verdict {
	n := len(fates)
	v := Verdict{Sent: n}
	for _, f := range fates {
		if f.Answered {
			v.Answered++
		}
	}
	if n == 0 {
		return v
	}
	v.LossPct = float64(n-v.Answered) / float64(n) * 100
	if n > 1 && fates[n-1].Sent > fates[0].Sent {
		v.OfferedPerSec = float64(n-1) / (fates[n-1].Sent - fates[0].Sent).Seconds()
	}
	switch {
	case v.Answered == n:
		v.Kind = Clean
		return v
	case v.Answered == 0:
		v.Kind = Silent
		return v
	}
	v.Kind = Loss
	if n < MinProbes || v.OfferedPerSec == 0 {
		return v
	}
	head, idx := split(fates)
	if len(idx) < MinGaps+1 {
		return v
	}
	gain, explained := gapGain(idx)
	rate := float64(len(idx)-1) / (fates[idx[len(idx)-1]].Sent - fates[idx[0]].Sent).Seconds()
	if gain < math.Log(float64(len(idx)-1))+5 || rate > 0.9*v.OfferedPerSec {
		return v
	}
	v.Kind, v.LimitPerSec, v.Explained = RateLimited, rate, explained
	v.Burst = max(1, int(math.Ceil(float64(head)-rate*float64(head-1)/v.OfferedPerSec-1e-6)))
	if d := queueDelay(fates, head); d > 0 {
		v.Kind, v.QueueDelay = Capacity, d
	}
	return v
}

// split is the length of the first run of answers, and the indices of
// the answered probes after it.
func split(fates []Fate) (head int, idx []int) {
	for head < len(fates) && fates[head].Answered {
		head++
	}
	for i := head; i < len(fates); i++ {
		if fates[i].Answered {
			idx = append(idx, i)
		}
	}
	return head, idx
}

// gapGain is how much better a limiter's model explains the gaps between
// the answered probes at idx than random loss does (log-likelihood,
// nats), and the share of gaps it explains. The limiter: a gap is f or
// f+1 (f the mean gap rounded down), with a share ε of other gaps
// distributed as random loss would; random loss: every gap geometric
// with the mean gap.
func gapGain(idx []int) (gain, explained float64) {
	g := len(idx) - 1
	mean := float64(idx[g]-idx[0]) / float64(g)
	q := 1 / mean // a probe's chance of an answer, under random loss
	if q >= 1 {
		return 0, 1
	}
	geom := func(gap int) float64 { return float64(gap-1)*math.Log1p(-q) + math.Log(q) }
	f := int(math.Floor(mean))
	var atF, other int
	var ll0, llOther float64
	for i := 1; i <= g; i++ {
		gap := idx[i] - idx[i-1]
		ll0 += geom(gap)
		switch gap {
		case f:
			atF++
		case f + 1:
		default:
			other++
			llOther += geom(gap)
		}
	}
	in := g - other
	ll1 := binLL(atF, in) + binLL(other, g) + llOther
	return ll1 - ll0, float64(in) / float64(g)
}

// binLL is the log-likelihood of k events in n trials at their maximum
// likelihood ratio k/n.
func binLL(k, n int) float64 {
	ll := 0.0
	if k > 0 && k < n {
		p := float64(k) / float64(n)
		ll = float64(k)*math.Log(p) + float64(n-k)*math.Log(1-p)
	}
	return ll
}

// queueDelay is how much the answered probes' RTTs in the second half
// of the run after the first refusal (head) stay above the smallest RTT
// before it: their 10th percentile's rise, when it exceeds 200 µs and a
// tenth of that smallest RTT. A queue the probes oversubscribe never
// empties, so even its fastest answers wait; a limiter's answers go
// through an empty path, and the fastest tenth of many are no slower
// than the fastest of the burst. The rise returned is the median's (the
// queue's typical delay). Zero when no queue shows.
func queueDelay(fates []Fate, head int) time.Duration {
	var before, after []time.Duration
	for i, f := range fates {
		switch {
		case !f.Answered:
		case i < head:
			before = append(before, f.RTT)
		case i >= head+(len(fates)-head)/2:
			after = append(after, f.RTT)
		}
	}
	if len(before) < 1 || len(after) < 3 {
		return 0
	}
	slices.Sort(after)
	q := func(p float64) time.Duration { return after[int(p*float64(len(after)-1))] }
	base := slices.Min(before)
	if rise := q(0.1) - base; rise > 200*time.Microsecond && rise > base/10 {
		return q(0.5) - base
	}
	return 0
}
