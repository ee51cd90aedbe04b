package flow

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/fullpipe/fullpipe/internal/stats"
)

// maxLatencySamples bounds the round trips a Latency keeps for its
// percentiles and standard deviation (8 MiB); past it, a uniform sample
// of them (reservoir sampling). Count, min, mean, max and IPDV are over
// all.
const maxLatencySamples = 1 << 20

// Latency records the round trips of a stream's latency probes. Safe for
// concurrent use.
type Latency struct {
	mu       sync.Mutex
	n        uint64
	sum      float64 // µs
	min, max float64
	samples  []time.Duration
	rng      *rand.Rand
	seen     *stats.SeqTracker // the probes answered: a duplicate reply is not a round trip
	limit    uint64            // probes scheduled: a reply to a higher index is bogus
	lastIdx  uint64
	lastRTT  float64
	ipdvSum  float64
	ipdvN    uint64
}

// NewLatency returns an empty recorder for a stream of at most probes
// latency probes.
func NewLatency(probes uint64) *Latency {
	return &Latency{rng: rand.New(rand.NewPCG(1, 2)), min: math.Inf(1), seen: stats.NewSeqTrackerFor(probes), limit: probes}
}

// Add records probe idx's round trip (probes numbered 0, 1, … in the
// order they were sent). A reply to a probe already answered, to one
// never scheduled (idx beyond the stream's probes), or with a round trip
// not above 0 (a mirrored timestamp that was not this sender's) is
// ignored: replies never outnumber probes.
func (l *Latency) Add(idx uint64, rtt time.Duration) {
	if idx >= l.limit || rtt <= 0 {
		return
	}
	us := float64(rtt) / 1e3
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen.Add(idx) {
		return
	}
	l.n++
	l.sum += us
	l.min, l.max = min(l.min, us), max(l.max, us)
	if len(l.samples) < maxLatencySamples {
		l.samples = append(l.samples, rtt)
	} else if j := l.rng.Uint64N(l.n); j < maxLatencySamples {
		l.samples[j] = rtt
	}
	// IPDV (RFC 3393) between consecutive probes: idx and idx−1.
	if l.n > 1 && idx == l.lastIdx+1 {
		l.ipdvSum += math.Abs(us - l.lastRTT)
		l.ipdvN++
	}
	l.lastIdx, l.lastRTT = idx, us
}

// LatencySummary is a stream's probes' round trips, µs (the fields of
// result.UDPLatency, which a tester converts it to: the engine returns
// its own types and compiles no method's maths).
type LatencySummary struct {
	Probes, Replies uint64
	stats.Delays            // of the Replies
	IPDVUs          float64 // mean absolute difference of consecutive probes' round trips (RFC 3393)
}

// Summary is the latency of probes sent probes, nil when none were sent.
func (l *Latency) Summary(probes uint64) *LatencySummary {
	if probes == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := &LatencySummary{Probes: probes, Replies: l.n}
	if l.n == 0 {
		return out
	}
	out.Delays = stats.NewDelays(l.samples)
	// Over all replies, not only the sample kept.
	out.Count, out.MinUs, out.MaxUs, out.MeanUs = int(l.n), l.min, l.max, l.sum/float64(l.n)
	if l.ipdvN > 0 {
		out.IPDVUs = l.ipdvSum / float64(l.ipdvN)
	}
	return out
}
