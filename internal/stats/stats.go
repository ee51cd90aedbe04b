// Package stats holds the small statistics fullpipe reports: order
// statistics of samples and the one shape every delay distribution takes
// (Delays), RFC 3550 interarrival jitter, and sequence accounting (loss,
// duplicates, reordering) for datagram streams.
package stats

import (
	"math"
	"slices"
	"time"
)

// Summary is the order statistics of a sample set. All fields are zero
// when Count is 0.
type Summary struct {
	Count  int
	Min    float64
	Max    float64
	Mean   float64
	Median float64 // Median's: the 50th nearest-rank percentile
	P90    float64
	P99    float64
	StdDev float64 // population standard deviation
}

// Summarize computes the Summary of v (which it does not modify).
// Percentiles use the nearest-rank method, so each is an observed value.
func Summarize(v []float64) Summary {
	if len(v) == 0 {
		return Summary{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	var sum float64
	for _, x := range s {
		sum += x
	}
	mean := sum / float64(len(s))
	var sq float64
	for _, x := range s {
		sq += (x - mean) * (x - mean)
	}
	return Summary{
		Count:  len(s),
		Min:    s[0],
		Max:    s[len(s)-1],
		Mean:   mean,
		Median: Percentile(s, 50),
		P90:    Percentile(s, 90),
		P99:    Percentile(s, 99),
		StdDev: math.Sqrt(sq / float64(len(s))),
	}
}

// Percentile is the nearest-rank p-th percentile of sorted (ascending)
// values: the smallest value with at least p % of values at or below it.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// Median is fullpipe's one median: the 50th nearest-rank percentile of v
// (which it does not modify), the lower of the two middle values for an
// even count; 0 for none. It is an observed value, like every percentile
// fullpipe reports: a delay's median (Delays.P50Us) is the delay one
// packet had, never the mean of two (on a path with two modes, 1 ms and
// 9 ms, the mean of the middle two can be 5 ms, which no packet saw),
// and it belongs to the same family as the p90 and p99 beside it (so
// p50 ≤ p90 ≤ p99 always).
func Median(v []float64) float64 {
	return Percentile(slices.Sorted(slices.Values(v)), 50)
}

// InterpolatedMedian is the middle of v (the mean of the two middle
// values for an even count; 0 for none): not a percentile of a delay
// distribution but the estimator the packet-train readings (packages
// dispersion and train) take one quantity from a few noisy readings
// with: a tail's typical gap and rise (a trains document's tail_rise_ns),
// the rate and bucket of a policer read by several trains. There a value
// between two readings is the better estimate, and the one the error
// bars assume: an estimate is given ± half the readings' range (train's
// spread), and from two trains reading a policer at 95 and 105 Mbit/s
// the middle, 100 ± 5, covers both, where Median's 95 ± 5 would leave
// the other reading out and read every even count of trains low by half
// the middle gap.
func InterpolatedMedian(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Delays is the distribution of one delay over the packets that had it
// (a round trip, a one-way delay, a reflector's hold), in microseconds
// with nanosecond resolution: the one shape every document of fullpipe
// reports a delay distribution in (docs/json.md). Percentiles are by
// nearest rank (Percentile), so each is a delay some packet had; the
// standard deviation is the population's. All fields are zero when Count
// is 0.
type Delays struct {
	Count    int     `json:"count"` // the delays summarised: packets with a reply, or with the delay measured
	MinUs    float64 `json:"min_us"`
	MeanUs   float64 `json:"mean_us"`
	P50Us    float64 `json:"p50_us"` // the median, by nearest rank: a delay some packet had
	P90Us    float64 `json:"p90_us"`
	P99Us    float64 `json:"p99_us"`
	MaxUs    float64 `json:"max_us"`
	StdDevUs float64 `json:"stddev_us"` // population standard deviation
}

// NewDelays is the distribution of samples (which it does not modify):
// the only place a delay's figures are computed from its samples.
func NewDelays(samples []time.Duration) Delays {
	us := make([]float64, len(samples))
	for i, d := range samples {
		us[i] = float64(d.Nanoseconds()) / 1e3
	}
	s := Summarize(us)
	return Delays{Count: s.Count, MinUs: s.Min, MeanUs: s.Mean, P50Us: s.Median, P90Us: s.P90, P99Us: s.P99,
		MaxUs: s.Max, StdDevUs: s.StdDev}
}

// Jitter is the RFC 3550 (section 6.4.1) interarrival jitter estimator:
// for consecutive packets i, j, D = (Rj − Ri) − (Sj − Si) and
// J += (|D| − J) / 16. Send and receive times may be on different clocks;
// only their differences matter. The zero value is ready to use.
type Jitter struct {
	n        int
	lastSent time.Duration
	lastRecv time.Duration
	j        float64 // nanoseconds
}

// Add records a packet sent at sent (sender clock) and received at recv
// (receiver clock), in arrival order.
func (j *Jitter) Add(sent, recv time.Duration) {
	if j.n > 0 {
		d := float64((recv - j.lastRecv) - (sent - j.lastSent))
		j.j += (math.Abs(d) - j.j) / 16
	}
	j.n++
	j.lastSent, j.lastRecv = sent, recv
}

// Value is the current jitter estimate.
func (j *Jitter) Value() time.Duration { return time.Duration(math.Round(j.j)) }

// maxTracked bounds the duplicate-detection bitmap (2^28 sequence numbers,
// 32 MiB). Sequence numbers beyond it are still counted, as unique.
const maxTracked = 1 << 28

// SeqTracker accounts for a datagram stream numbered from 0.
type SeqTracker struct {
	limit     uint64   // sequence numbers tracked for duplicates: [0, limit)
	seen      []uint64 // bitmap of sequence numbers received
	received  uint64
	unique    uint64
	dups      uint64
	reordered uint64
	maxSeq    uint64
	any       bool
}

// SeqResult is what a SeqTracker saw.
type SeqResult struct {
	Received   uint64 // datagrams, duplicates included
	Unique     uint64 // distinct sequence numbers
	Duplicates uint64
	Reordered  uint64 // arrived after a higher sequence number (RFC 4737 sense)
	Lost       uint64 // expected minus unique
	MaxSeq     uint64
}

// NewSeqTracker returns an empty tracker.
func NewSeqTracker() *SeqTracker { return &SeqTracker{limit: maxTracked} }

// NewSeqTrackerFor returns an empty tracker whose duplicate detection
// covers [0, n) (at most 2^28): its bitmap is at most n/8 bytes.
func NewSeqTrackerFor(n uint64) *SeqTracker { return &SeqTracker{limit: min(max(n, 64), maxTracked)} }

// Add records the arrival of seq; dup says it was a duplicate (of a
// sequence number below the tracked limit).
func (t *SeqTracker) Add(seq uint64) (dup bool) {
	t.received++
	if seq < t.limit {
		w := seq / 64
		if w >= uint64(len(t.seen)) {
			n := max(w+1, uint64(2*len(t.seen)))
			n = min(n, (t.limit+63)/64)
			t.seen = append(t.seen, make([]uint64, n-uint64(len(t.seen)))...)
		}
		bit := uint64(1) << (seq % 64)
		if t.seen[w]&bit != 0 {
			t.dups++
			return true
		}
		t.seen[w] |= bit
	}
	t.unique++
	if t.any && seq < t.maxSeq {
		t.reordered++
	}
	if !t.any || seq > t.maxSeq {
		t.maxSeq = seq
	}
	t.any = true
	return false
}

// Result counts as lost every sequence number up to the highest seen that
// did not arrive (trailing losses are invisible; see ResultWithSent).
func (t *SeqTracker) Result() SeqResult {
	r := SeqResult{Received: t.received, Unique: t.unique, Duplicates: t.dups, Reordered: t.reordered, MaxSeq: t.maxSeq}
	if t.any && t.maxSeq+1 > t.unique {
		r.Lost = t.maxSeq + 1 - t.unique
	}
	return r
}

// ResultWithSent is Result when the sender's count is known, so losses at
// the end of the stream count too.
func (t *SeqTracker) ResultWithSent(sent uint64) SeqResult {
	r := t.Result()
	r.Lost = 0
	if sent > t.unique {
		r.Lost = sent - t.unique
	}
	return r
}
