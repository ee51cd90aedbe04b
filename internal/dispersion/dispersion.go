// Package dispersion reads one packet train as its receiver saw it: the
// rate its packets arrived at before and after the first loss (their
// dispersion), how far their one-way delay rose, and which of them left
// their sender late. It is the engine's arithmetic (the responder reads
// the trains it receives and sends its Reading back, the sender reports
// its Holds), apart from what a method concludes from many readings
// (package train: a queue, a policer, or nothing), so that a responder
// compiles no method's judgement. It is pure: no sockets, no clock; the
// caller passes each packet's send and receive times.
//
// The physics a reading records (package train's doc has the rest):
//   - A queue in front of a link of rate B spaces the packets of a train
//     sent faster than B at B (dispersion), and delays packet i by the
//     bytes queued ahead of it: the one-way delay grows along the train
//     until the queue is full, then packets are dropped while the rest
//     still leave at B.
//   - A policer has no queue: what its bucket holds passes at the rate it
//     arrives, then packets get through only as tokens come back, at the
//     policed rate: after the first loss, slower than before it.
//   - A sender held between its stamp and its write sends a packet later
//     than its stamp says: its one-way delay is too high by the hold.
//
// Times are on two clocks (sender's for sending, receiver's for arrival);
// only differences along one train are used, so the clocks need not agree.
//
// A "median" here is the middle of a few noisy readings of one quantity
// (stats.InterpolatedMedian: the mean of the middle two for an even
// count), not the nearest-rank median of a delay distribution
// (stats.Median); stats says why the two differ.
package dispersion

import (
	"math"
	"slices"
	"time"

	"github.com/fullpipe/fullpipe/internal/stats"
)

// Packet is one packet of a train.
type Packet struct {
	Bytes  int           // size as the rates count it (IP bytes plus any per-packet overhead the caller adds)
	SentAt time.Duration // sender's clock; only needed when Got (the receiver learns it from the packet)
	Got    bool          // arrived
	RecvAt time.Duration // receiver's clock; only when Got
	// Held is how long after SentAt the sender's write of this packet
	// returned, when it reported that (at least MinHold): the packet left
	// somewhere in between, so the stamp may be early by up to Held.
	Held time.Duration
}

// Hold is a datagram whose write returned Ns nanoseconds after the send
// stamp it carries: its sender was held (scheduled out, most often,
// between taking the stamp and the packet leaving) and the packet left
// up to that much later than its stamp says. The receiver's one-way
// delay of that packet is too high by as much, which would read a
// sender's stall as a queue's wait (Reading.BusyBps).
type Hold struct {
	Seq int   `json:"seq"`
	Ns  int64 `json:"ns"`
}

// MinHold is the least hold a sender reports: a write into a local
// stack takes 2-80 µs on the machines measured (the longer ones wake
// another core), well under half a packet's gap at the rates trains
// read (1500 B at 100 Mbit/s is 120 µs).
const MinHold = 20 * time.Microsecond

// MaxHolds bounds the holds one train's sender reports (the list
// travels on the control connection); holds after the first MaxHolds
// are not reported.
const MaxHolds = 4096

// Train is the packets of one train in the order they were sent.
type Train []Packet

// Reading is what one train shows.
type Reading struct {
	Sent    int     `json:"sent"`
	Got     int     `json:"got"`
	Bytes   int     `json:"bytes"`    // sent, all packets
	SendBps float64 `json:"send_bps"` // the sender's rate over the train
	// Head: the packets before the first loss (all of them without loss).
	HeadPackets int           `json:"head_packets"`
	HeadBytes   int           `json:"head_bytes"`
	HeadSpan    time.Duration `json:"head_span_ns"` // receiver's clock, first to last head packet
	HeadBps     float64       `json:"head_bps"`     // arrival rate of the head (bytes after the first / span)
	// BusyBps is the head's arrival rate over the gaps in which its link
	// was busy: the bytes of the packets that waited behind the one
	// before (a one-way delay above the head's least by more than half
	// the head's median gap) over their gaps. A queue spaces such
	// packets at its rate exactly; a sender that stalled long enough for
	// the queue to drain left the link idle, and the gap before the
	// packet it sent next holds that idle time, which says nothing of
	// the link. 0 when fewer than half of the head's gaps, or fewer than
	// MinTail, were busy (a head that did not queue, a policer's or a
	// clean path's, or too short a head to tell its busy gaps within the
	// stamps' noise).
	BusyBps float64 `json:"busy_bps,omitempty"`
	// SenderHeld is the longest hold (Hold) its sender reported for any
	// packet of the train, and HeldGaps how many of the head's gaps were
	// left out of BusyBps because the packet that ended them may have
	// left late rather than waited in a queue.
	SenderHeld time.Duration `json:"sender_held_ns,omitempty"`
	HeldGaps   int           `json:"held_gaps,omitempty"`
	// HeadSendSpan is the head's span on the sender's clock.
	HeadSendSpan time.Duration `json:"head_send_span_ns"`
	// Tail: the packets that got through after the first loss.
	TailPackets int `json:"tail_packets"`
	// TailBunched is how many of the tail's first packets came out
	// bunched right behind the head (a queue after the limit held them),
	// left out of the tail's rate.
	TailBunched int           `json:"tail_bunched"`
	TailSpan    time.Duration `json:"tail_span_ns"` // receiver's clock, first to last tail packet
	TailBps     float64       `json:"tail_bps"`     // arrival rate of the tail; 0 when fewer than MinTail
	// TailSendBps is the rate the sender sent at over the tail's span
	// (its clock; every packet it sent in that span, lost or not): a
	// policer's tail arrives slower than it was sent, a sender that fell
	// behind (its host starved of CPU) sends the tail as slowly as it
	// arrives. 0 when TailBps is.
	TailSendBps float64 `json:"tail_send_bps,omitempty"`
	// DelayRise is the largest one-way delay increase over the first
	// packet's, anywhere in the train; TailRise the median increase of
	// the tail's packets (a full queue's wait, read from many packets so
	// that timestamp noise averages out; 0 without a tail).
	DelayRise time.Duration `json:"delay_rise_ns"`
	TailRise  time.Duration `json:"tail_rise_ns"`
	// TailRiseIQR is the interquartile range of the tail's delay rises:
	// behind a full queue they would all be equal, so it measures the
	// timing noise of this path and these hosts (0 with fewer than 4).
	TailRiseIQR time.Duration `json:"tail_rise_iqr_ns"`
}

// MinTail is how many packets must get through after the first loss
// before a tail rate is read from them.
const MinTail = 8

// Read computes a train's reading. Packets must be in send order.
func Read(t Train) Reading {
	var r Reading
	r.Sent, r.Bytes = len(t), totalBytes(t)
	if len(t) == 0 {
		return r
	}
	r.SendBps = sendRate(t)
	for _, p := range t {
		r.SenderHeld = max(r.SenderHeld, p.Held)
	}
	// One-way delays (on two clocks: only their differences count) rise
	// over the least of them, the packet that queued least; not over the
	// first packet's, whose send stamp a slow first write may inflate.
	first, firstLoss := -1, len(t)
	var got []int
	base := time.Duration(math.MaxInt64)
	for i, p := range t {
		if !p.Got {
			if firstLoss == len(t) {
				firstLoss = i
			}
			continue
		}
		r.Got++
		got = append(got, i)
		if first < 0 {
			first = i
		}
		if p.Held == 0 {
			base = min(base, p.RecvAt-p.SentAt)
		}
	}
	if base == math.MaxInt64 { // every packet held: the least of their shortest
		for _, i := range got {
			base = min(base, oneWay(t[i]))
		}
	}
	for _, i := range got {
		r.DelayRise = max(r.DelayRise, oneWay(t[i])-base)
	}
	if first != 0 { // the very first packet was lost: no head
		return r
	}
	head := t[:firstLoss]
	r.HeadPackets, r.HeadBytes = len(head), totalBytes(head)
	r.HeadSpan = head[len(head)-1].RecvAt - head[0].RecvAt
	r.HeadSendSpan = head[len(head)-1].SentAt - head[0].SentAt
	r.HeadBps = rate(head)
	r.BusyBps, r.HeldGaps = busyRate(head)
	var tail Train
	var tailAt []int // each tail packet's place in the train
	for _, i := range got {
		if i > firstLoss {
			tail = append(tail, t[i])
			tailAt = append(tailAt, i)
		}
	}
	r.TailPackets = len(tail)
	if len(tail) > 0 {
		rises := make([]float64, len(tail))
		for i, p := range tail {
			rises[i] = float64(oneWay(p) - base)
		}
		r.TailRise = time.Duration(stats.InterpolatedMedian(rises))
		if len(rises) >= 4 {
			r.TailRiseIQR = time.Duration(quantile(rises, 0.75) - quantile(rises, 0.25))
		}
	}
	// The tail's first packets may come out bunched behind the head's
	// backlog in a queue after the limit (a policer on a port with a
	// queue): the rate is read from where the tail's own spacing starts.
	r.TailBunched = settled(head[len(head)-1].RecvAt, tail)
	tail = tail[r.TailBunched:]
	if len(tail) >= MinTail {
		r.TailSpan = tail[len(tail)-1].RecvAt - tail[0].RecvAt
		r.TailBps = unheldRate(t, tailAt[r.TailBunched:])
		r.TailSendBps = sendRate(t[tailAt[r.TailBunched] : tailAt[len(tailAt)-1]+1])
	}
	return r
}

// oneWay is a packet's one-way delay, on two clocks. A held packet left
// up to Held after its stamp, so its delay is the shortest it may have
// been: a rise read from it is never more than the queue's.
func oneWay(p Packet) time.Duration {
	return p.RecvAt - p.SentAt - p.Held
}

// sendRate is the rate a train left at, from the send stamps of the
// second and the last packet that arrived (a lost packet's stamp never
// reached the receiver; the first write of a train can be slow).
func sendRate(t Train) float64 {
	lo, hi := -1, -1
	for i, p := range t[1:] {
		if p.Got {
			if lo < 0 {
				lo = i + 1
			}
			hi = i + 1
		}
	}
	if lo < 0 {
		return 0
	}
	if span := t[hi].SentAt - t[lo].SentAt; span > 0 {
		return float64(totalBytes(t[lo+1:hi+1])) * 8 / span.Seconds()
	}
	return 0
}

// settled is how many of the tail's first packets arrived less than half
// the tail's median gap after the packet before them (the last of the
// head for the first): bunched behind a backlog, not spaced by the limit.
func settled(lastHead time.Duration, tail Train) int {
	if len(tail) < 2 {
		return 0
	}
	prev := lastHead
	gaps := make([]float64, len(tail))
	for i, p := range tail {
		if i > 0 {
			prev = tail[i-1].RecvAt
		}
		gaps[i] = float64(p.RecvAt - prev)
	}
	m := stats.InterpolatedMedian(gaps[1:])
	k := 0
	for k < len(tail)-1 && gaps[k] < m/2 {
		k++
	}
	return k
}

func totalBytes(t Train) int {
	n := 0
	for _, p := range t {
		n += p.Bytes
	}
	return n
}

// rate is the arrival rate of delivered packets: the bytes after the
// first over the receiver's span from the first to the last (0 when the
// span is empty).
func rate(t Train) float64 {
	if len(t) < 2 {
		return 0
	}
	span := t[len(t)-1].RecvAt - t[0].RecvAt
	if span <= 0 {
		return 0
	}
	return float64(totalBytes(t[1:])) * 8 / span.Seconds()
}

// unheldRate is the arrival rate of the received packets of t at places
// at (in order) over the gaps that no held packet ended: a hold of the
// sender (Hold) lets a queue drain or a policer's bucket fill, and the
// first packet through after it, the held one or, when that was lost,
// the next, ends a gap that holds the sender's idle time, not the
// path's rate. rate when nothing was held; 0 when fewer than half the
// gaps, or fewer than MinTail, are left.
func unheldRate(t Train, at []int) float64 {
	var bytes, n int
	var span time.Duration
	for j := 1; j < len(at); j++ {
		held := false
		for _, p := range t[at[j-1]+1 : at[j]+1] {
			held = held || p.Held > 0
		}
		if !held {
			bytes += t[at[j]].Bytes
			span += t[at[j]].RecvAt - t[at[j-1]].RecvAt
			n++
		}
	}
	if n < MinTail || 2*n < len(at)-1 || span <= 0 {
		return 0
	}
	return float64(bytes) * 8 / span.Seconds()
}

// busyRate is the arrival rate of a head (all arrived, in send order)
// over its busy gaps (Reading.BusyBps), and how many gaps it left out
// because their packet's sender was held: a held packet's rise is its
// wait plus up to its hold, and which share was which the stamps cannot
// tell (a packet held 1.7 ms that found the link idle read a rise of
// its hold plus 28 µs of stamp noise, over the half gap of 20 µs at 300
// Mbit/s), so its gap, which may hold idle time, is never a busy one.
func busyRate(head Train) (bps float64, held int) {
	if len(head) <= MinTail {
		return 0, 0
	}
	gaps := make([]float64, 0, len(head)-1)
	base := time.Duration(math.MaxInt64)
	for i, p := range head {
		base = min(base, p.RecvAt-p.SentAt)
		if i > 0 {
			gaps = append(gaps, float64(p.RecvAt-head[i-1].RecvAt))
		}
	}
	half := time.Duration(stats.InterpolatedMedian(gaps) / 2)
	var bytes, busy int
	var span time.Duration
	for i := 1; i < len(head); i++ {
		rise := head[i].RecvAt - head[i].SentAt - base
		if rise <= half {
			continue
		}
		if head[i].Held > 0 {
			held++
			continue
		}
		bytes += head[i].Bytes
		span += head[i].RecvAt - head[i-1].RecvAt
		busy++
	}
	if busy < MinTail || 2*busy < len(head)-1-held || span <= 0 {
		return 0, held
	}
	return float64(bytes) * 8 / span.Seconds(), held
}

// quantile is the q-quantile of v (nearest rank; 0 for none).
func quantile(v []float64, q float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return stats.Percentile(s, q*100)
}
