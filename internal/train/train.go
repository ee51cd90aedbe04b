// Package train reads what limits a path from the readings of back-to-back
// packet trains (package dispersion reads each one): a queue (a shaper,
// or a FIFO in front of a slower link), a token-bucket policer, or nothing
// below the sender's own rate; and it plans the trains (their lengths and
// packet size). It is a method's mathematics: the engine reads single
// trains (dispersion) and does not compile it. It is pure: no sockets, no
// clock.
//
// The physics it relies on (the issue "measurement truth on hard paths"):
//   - A queue in front of a link of rate B spaces the packets of a train
//     sent faster than B at B (dispersion), and delays packet i by the
//     bytes queued ahead of it: the one-way delay grows along the train
//     until the queue is full, then packets are dropped while the rest
//     still leave at B. The largest delay increase × B is the queue.
//   - A policer has no queue: what its bucket holds passes at the rate it
//     arrives (no added delay, no dispersion below that rate), then
//     packets are dropped except as tokens come back, at the policed rate.
//     So after the first loss, packets get through slower than before it,
//     and the bucket is the head's bytes less what refilled meanwhile.
//   - A path that neither spaces, delays nor drops the train has no
//     bottleneck below the sender's rate, up to the longest train sent.
//
// The readings' times are on two clocks (sender's for sending, receiver's
// for arrival); only differences along one train are used, so the clocks
// need not agree.
//
// A "median" here is the middle of a few noisy readings of one quantity
// (stats.InterpolatedMedian: the mean of the middle two for an even
// count), not the nearest-rank median of a delay distribution
// (stats.Median); stats says why the two differ.
package train

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/fullpipe/fullpipe/internal/dispersion"
	"github.com/fullpipe/fullpipe/internal/stats"
)

// Kind names what limits the path.
type Kind string

// Kinds.
const (
	Clean   Kind = "clean"   // no bottleneck below the sender's rate, up to the longest train
	Queue   Kind = "queue"   // a queue drains at a rate below the sender's: a shaper or a FIFO in front of a slower link
	Policer Kind = "policer" // a token bucket: bursts pass, then drops at the policed rate
	Lossy   Kind = "lossy"   // packets lost, no spacing, and what follows a loss as fast as it was sent: loss on the line, not a limit
	Unknown Kind = "unknown" // the trains do not tell (too few packets, or contradictory)
	// Undecided: packets were lost, the head was not spaced, and what got
	// through after the first loss was neither surely slower than the
	// head nor surely as fast as it was sent: a policer whose bucket holds
	// a few packets and loss on the line read alike. It names no cause.
	Undecided Kind = "undecided"
)

// Estimate is an estimate with its uncertainty (half-width).
type Estimate struct {
	Value float64 `json:"value"`
	Err   float64 `json:"err"`
}

func (e Estimate) String() string { return fmt.Sprintf("%.0f ± %.0f", e.Value, e.Err) }

// Verdict is what a set of trains of increasing length shows.
type Verdict struct {
	Kind Kind `json:"kind"`
	// SenderBps is the rate the trains were sent at (median).
	SenderBps float64 `json:"sender_bps"`
	// RateBps is the bottleneck's rate (Queue) or the policed rate
	// (Policer), in bit/s of the packets' Bytes.
	RateBps Estimate `json:"rate_bps"`
	// QueueBytes is the queue (Queue): its drain time × the rate. A lower
	// bound when no train overflowed it (QueueAtLeast).
	QueueBytes   Estimate `json:"queue_bytes"`
	QueueAtLeast bool     `json:"queue_at_least,omitempty"`
	// BucketBytes is the policer's bucket (Policer).
	BucketBytes Estimate `json:"bucket_bytes"`
	// LongestBytes is the longest train sent, in bytes.
	LongestBytes int `json:"longest_bytes"`
	// Why says, in words, what decided.
	Why string `json:"why"`
}

// Thresholds of the classification, each a physical margin:
const (
	// dispersed: a head arriving below this share of the sender's rate
	// was spaced by a slower link (a clean path delivers at the sender's
	// rate; receive timestamps' noise is far below 20 %).
	dispersed = 0.8
	// slower: a tail getting through below this share of the head's rate,
	// even with both rates pushed by the timestamps' noise towards each
	// other, is a policer's refill, not the same queue still draining: a
	// queue serves at one rate before and after it starts to drop.
	slower = 0.95
)

// Classify reads the readings of trains (of increasing length, as sent)
// and tells what limits the path. noise is the receive timestamps'
// uncertainty, used for the estimates' error bars and to tell two rates
// apart.
func Classify(readings []dispersion.Reading, noise time.Duration) Verdict {
	var rs []dispersion.Reading
	var v Verdict
	var send []float64
	for _, r := range readings {
		if r.Sent < 2 || r.HeadPackets < 2 || r.HeadSpan <= 0 {
			continue // no head rate: nothing through before a loss, or all within one stamp
		}
		rs = append(rs, r)
		send = append(send, r.SendBps)
		v.LongestBytes = max(v.LongestBytes, r.Bytes)
	}
	if len(rs) == 0 {
		v.Kind, v.Why = Unknown, "no train had two packets through before a loss, spread over a measurable span"
		return v
	}
	v.SenderBps = stats.InterpolatedMedian(send)
	var lossy []dispersion.Reading
	for _, r := range rs {
		if r.Got < r.Sent {
			lossy = append(lossy, r)
		}
	}
	long := rs[len(rs)-1] // the longest train
	if len(lossy) == 0 {
		if !spaced(long, v.SenderBps) {
			v.Kind = Clean
			v.Why = fmt.Sprintf("trains up to %d B arrived whole at %.1f Mbit/s, the rate they were sent at: no bottleneck below it", v.LongestBytes, long.HeadBps/1e6)
			return v
		}
		return queueVerdict(v, rs, noise, true)
	}
	// Trains that lost packets and kept enough of a tail to read a rate,
	// from a sender that kept its pace: one held for longer than
	// burstHeld sent what fell due meanwhile back to back, a burst its
	// pace never makes, which overflows a small queue (losses no line
	// made) or meets a bucket that filled while it waited; its losses
	// and its tail are the host's. (Its head's busy rate is still the
	// link's: the gaps its holds ended are not in it.)
	var withTail []dispersion.Reading
	held := 0
	for _, r := range lossy {
		switch {
		case r.TailBps > 0 && HeldBurst(r):
			held++
		case r.TailBps > 0:
			withTail = append(withTail, r)
		}
	}
	if len(withTail) == 0 {
		if spaced(long, v.SenderBps) {
			// Spaced and then overflowed, but too short a tail to read:
			// a queue at least as large as the delay it built.
			v = queueVerdict(v, rs, noise, true)
			v.Why += " (the longest trains overflowed it, but too few packets got through after the first loss to read more)"
			return v
		}
		if held > 0 {
			return undecided(v, lossy, fmt.Sprintf("the sender was held in %d of %d trains that lost packets, longer than its pace allows: what got through after their first loss is the host's, not the path's", held, len(lossy)))
		}
		return undecided(v, lossy, "too few got through after the first loss to read a rate")
	}
	ev := tailEvidence(withTail, noise)
	if ev.senderSlowed > 0 && ev.senderSlowed >= ev.slower {
		v.Kind, v.Why = Unknown, fmt.Sprintf("in %d of %d trains whose tail came slower than the head the sender sent the tail no faster than it arrived: its host fell behind, so the tails' rates are the host's, not a limit of the path", ev.senderSlowed, ev.senderSlowed+ev.slower)
		return v
	}
	// Each verdict needs its evidence from most of the tails or from two,
	// and none of the other's: a tail surely as fast as it was sent is no
	// policer's, one surely slower than it was sent no line's.
	most := func(n int) bool { return 2*n > len(withTail) || n >= 2 }
	switch {
	case most(ev.slower) && ev.asSent == 0:
		return policerVerdict(v, withTail, noise)
	case spaced(long, v.SenderBps):
		return queueVerdict(v, rs, noise, false)
	case most(ev.asSent) && ev.slower+ev.limited == 0:
		return lossyVerdict(v, rs)
	}
	return undecided(v, lossy, fmt.Sprintf("of %d trains with a tail, %d got it through surely slower than the head, %d surely as fast as it was sent, the rest within the timing noise of both", len(withTail), ev.slower, ev.asSent))
}

// HeldBurst reports whether a train lost packets after its sender was
// held longer than its pace allows (burstHeld) and, for a train whose
// head a queue spaced, longer than a fifth of the full queue's wait it
// read (TailRise): Classify reads neither its losses nor its tail, so a
// method that can sends it again. A policer's head passes unspaced, and
// what its bucket regains in a hold is not bounded by any queue's wait:
// such a train keeps the pace's bound.
//
// A hold moves what a queue does only by the time its link runs idle:
// what falls due meanwhile leaves back to back when the sender runs
// again, which brings the queue to where the paced packets would have
// (less what drained in the hold, the same with them or without), so
// the two differ only when the queue emptied during the hold. A hold of
// h behind a queue of wait D loses at most h/D of the queue's bytes of
// service, and the tail that passes after the first loss comes at the
// link's rate while the queue is not empty. Under D/5 the queue read
// moves by under 20 %, the accuracy the trains are held to. Beside a
// busy core (CI, TestRFC6349SmallBuffer) the sender was held 0.16-1.5
// ms in trains at 4 × 300 Mbit/s whose queue waited 1.7 ms; 8 packets
// at the send rate are 80 µs.
func HeldBurst(r dispersion.Reading) bool {
	allow := burstHeld(r)
	if spaced(r, r.SendBps) { // a queue's head; a policer's passes unspaced, its bucket refilling in a hold
		allow = max(allow, r.TailRise/5)
	}
	return r.Got < r.Sent && r.SenderHeld > allow
}

// burstHeld is how long a train's sender may be held before what falls
// due meanwhile, sent back to back when it runs again, is a burst beyond
// its pace's own: 8 packets at the train's send rate (its pace sends up
// to 5 back to back; dispersion.MinTail).
func burstHeld(r dispersion.Reading) time.Duration {
	if r.SendBps <= 0 || r.Sent == 0 {
		return 0
	}
	return time.Duration(float64(dispersion.MinTail*r.Bytes/r.Sent) * 8 / r.SendBps * 1e9)
}

// spaced reports whether a train's head arrived slower than it was sent:
// below dispersed of the trains' send rate, or of the head's own (the
// sender's clock over the same packets) when that is lower: a sender
// that fell behind within the head sent it as slowly as it came, and a
// head it sent late got more tokens from a policer, not a queue's spacing.
func spaced(r dispersion.Reading, senderBps float64) bool {
	ref := senderBps
	if r.HeadSendSpan > 0 && r.HeadPackets > 1 {
		ref = min(ref, headBits(r)/r.HeadSendSpan.Seconds())
	}
	return r.HeadBps < dispersed*ref
}

// headBits is the bits of the head after its first packet: what its
// span carried.
func headBits(r dispersion.Reading) float64 {
	return float64((r.HeadBytes - r.HeadBytes/r.HeadPackets) * 8)
}

// evidence is what the tails of trains that lost packets show, each
// tail's rate pushed by two timestamps' noise against the finding:
//   - slower: the tail came slower than the head (a policer's refill) and
//     slower than it was sent;
//   - senderSlowed: slower than the head, but sent about as slowly as it
//     came (the sending host fell behind);
//   - limited: not surely slower than the head, but surely slower than it
//     was sent (a limit whose head the stamps do not resolve, or a
//     queue's tail at its head's rate);
//   - asSent: surely at least dispersed of the rate it was sent at:
//     nothing held it back after the loss (loss on the line).
//
// A tail in none of them is within the noise of both readings.
type evidence struct{ slower, senderSlowed, limited, asSent int }

// tailEvidence sorts the tails of trains that lost packets (see evidence).
func tailEvidence(withTail []dispersion.Reading, noise time.Duration) evidence {
	var e evidence
	for _, r := range withTail {
		switch tailOf(r, noise) {
		case tailSlower:
			e.slower++
		case tailSenderSlowed:
			e.senderSlowed++
		case tailLimited:
			e.limited++
		case tailAsSent:
			e.asSent++
		}
	}
	return e
}

// tailClass is what one train's tail shows (see evidence).
type tailClass int

const (
	tailNone tailClass = iota // no tail, or within the noise of both
	tailSlower
	tailSenderSlowed
	tailLimited
	tailAsSent
)

// tailOf classifies r's tail with the receive stamps' noise.
func tailOf(r dispersion.Reading, noise time.Duration) tailClass {
	if r.TailBps <= 0 {
		return tailNone
	}
	// The slowest the head and the fastest and slowest the tail can have
	// been, each span off by two timestamps' noise.
	headLow := headBits(r) / (max(r.HeadSpan, 0) + 2*noise).Seconds()
	tailHigh := math.Inf(1)
	if r.TailSpan > 2*noise {
		tailHigh = r.TailBps * r.TailSpan.Seconds() / (r.TailSpan - 2*noise).Seconds()
	}
	tailLow := r.TailBps * r.TailSpan.Seconds() / (r.TailSpan + 2*noise).Seconds()
	switch {
	case tailHigh < slower*headLow && r.TailSendBps > 0 && r.TailSendBps*slower < r.TailBps:
		// Slower than the head, but the sender itself sent the tail
		// about as slowly as it came: its host fell behind, and the
		// tail's rate is the host's, not a policer's.
		return tailSenderSlowed
	case tailHigh < slower*headLow:
		return tailSlower
	case r.TailSendBps <= 0:
		return tailNone
	case tailHigh < slower*r.TailSendBps:
		return tailLimited
	case tailLow >= dispersed*r.TailSendBps:
		return tailAsSent
	}
	return tailNone
}

// undecided: the trains lost packets without spacing, and their tails do
// not tell a policer with a bucket of a few packets from loss on the
// line. The verdict says so and names neither.
func undecided(v Verdict, lossy []dispersion.Reading, why string) Verdict {
	lost, sent, head := 0, 0, math.MaxInt
	for _, r := range lossy {
		lost, sent = lost+r.Sent-r.Got, sent+r.Sent
		head = min(head, r.HeadPackets)
	}
	v.Kind = Undecided
	v.Why = fmt.Sprintf("trains lost %d of %d packets, the first loss within %d packets and the head not spaced, but %s: a policer whose bucket holds a few packets and loss on the line read alike here, so the trains name neither", lost, sent, head, why)
	return v
}

// lossyVerdict: the trains lost packets, their heads were not spaced, and
// what got through after a loss came as fast as it was sent.
func lossyVerdict(v Verdict, rs []dispersion.Reading) Verdict {
	lost, sent := 0, 0
	for _, r := range rs {
		lost, sent = lost+r.Sent-r.Got, sent+r.Sent
	}
	long := rs[len(rs)-1]
	v.Kind = Lossy
	v.Why = fmt.Sprintf("trains lost %d of %d packets but arrived at %.1f Mbit/s, the rate they were sent at, and got through as fast as they were sent after a loss: loss on the line, neither a queue nor a policer", lost, sent, long.HeadBps/1e6)
	return v
}

// queueVerdict: the head is spaced at the bottleneck's rate and the delay
// rises until the queue is full. The rate is read from the longest
// train's head (the most bytes, so the least relative noise); the queue
// from the largest delay rise of the trains that overflowed it (or, with
// atLeast, of any train: a lower bound).
func queueVerdict(v Verdict, rs []dispersion.Reading, noise time.Duration, atLeast bool) Verdict {
	long := rs[len(rs)-1]
	v.Kind = Queue
	b := long.HeadBps
	if long.BusyBps > 0 {
		b = long.BusyBps
	}
	// Rate: the head's over its busy gaps (a stall of the sender that let
	// the queue drain is not the link's), or its whole span from a
	// responder that does not send that; ± the timestamps' noise at both
	// ends of that span; a head that arrived within one stamp says
	// nothing of it (± all of it, not a division by zero).
	v.RateBps = Estimate{b, b}
	if span := long.HeadSpan; span > 0 {
		if long.BusyBps > 0 {
			// The busy gaps spanned at least half the head's service
			// time (at least half its gaps were busy, each one packet's
			// service at b): the shortest span, the widest error.
			span = time.Duration(headBits(long) / b / 2 * 1e9)
		}
		v.RateBps.Err = math.Min(b, b*2*noise.Seconds()/span.Seconds())
	}
	// A full queue's wait: the median rise of the packets that got through
	// after the first loss (the queue is full whenever one arrives), the
	// median over the trains (one train whose receiver was late does not
	// decide); or, when nothing overflowed it, the largest rise seen (a
	// lower bound).
	var rises []float64
	for _, r := range rs {
		switch {
		case atLeast:
			rises = append(rises, r.DelayRise.Seconds())
		case r.TailPackets > 0:
			rises = append(rises, r.TailRise.Seconds())
		}
	}
	if len(rises) == 0 {
		v.Kind, v.Why = Unknown, "the trains overflowed a queue but none got a packet through after the first loss"
		return v
	}
	rise := stats.InterpolatedMedian(rises)
	if atLeast {
		rise = slices.Max(rises)
	}
	q := rise * b / 8
	// Queue: ± the timing noise of a delay rise (two timestamps' noise,
	// or what the tails showed of it: their rises' interquartile range,
	// the median over the trains, when that is more), the spread between
	// the trains, the rate's error, and one packet (the one in service
	// when the queue filled).
	pkt := float64(long.HeadBytes) / float64(long.HeadPackets)
	var iqrs []float64
	for _, r := range rs {
		if r.TailRiseIQR > 0 {
			iqrs = append(iqrs, r.TailRiseIQR.Seconds())
		}
	}
	timing := max(2*noise.Seconds(), stats.InterpolatedMedian(iqrs))
	v.QueueBytes = Estimate{q, (timing+spread(rises))*b/8 + q*v.RateBps.Err/b + pkt}
	v.QueueAtLeast = atLeast
	if atLeast {
		lossless := ", with no loss"
		for _, r := range rs {
			if r.Got < r.Sent {
				lossless = ""
			}
		}
		v.Why = fmt.Sprintf("trains up to %d B were spaced to %.1f Mbit/s (sent at %.1f Mbit/s) and delayed up to %.2f ms more along the train%s: a queue of at least %.0f B in front of a %.1f Mbit/s link",
			v.LongestBytes, b/1e6, v.SenderBps/1e6, rise*1e3, lossless, q, b/1e6)
	} else {
		v.Why = fmt.Sprintf("the trains were spaced to %.1f Mbit/s (sent at %.1f Mbit/s), delayed up to %.2f ms more along the train, then lost packets while the rest still arrived at that rate: a queue of %.0f B (%.2f ms) in front of a %.1f Mbit/s link",
			b/1e6, v.SenderBps/1e6, rise*1e3, q, rise*1e3, b/1e6)
	}
	return v
}

// policerVerdict: the head passes at the rate it arrives, then packets get
// through only as tokens return. The policed rate is the tail's rate; the
// bucket is the head's bytes less the tokens that came back while the
// head passed (rate × the head's span), the first packet included (the
// bucket starts full).
func policerVerdict(v Verdict, rs []dispersion.Reading, noise time.Duration) Verdict {
	// The rate from the tails that decide and carried tailHeads × their
	// head (readable, and long even when their own head came spaced: a
	// policer does not space, a host or lab that fell behind does), when
	// any: a short tail after a tiny bucket is sped up by what refilled
	// it while its sender stalled.
	var rates, buckets []float64
	for _, r := range rs {
		if readable(r, noise) && longTail(r) {
			rates = append(rates, r.TailBps)
		}
	}
	if len(rates) == 0 {
		for _, r := range rs {
			rates = append(rates, r.TailBps)
		}
	}
	cir := stats.InterpolatedMedian(rates)
	pkt := float64(rs[0].HeadBytes) / float64(rs[0].HeadPackets)
	for _, r := range rs {
		// Tokens came back while the head passed the policer: over the
		// head's span as it arrived there. A queue after the policer
		// (the tail's first packets bunched behind the head) spread the
		// head only later, so the sender's span is the policer's; else a
		// link before it spaced the head as received. The next packet
		// found fewer tokens than its size: the bucket held between 0 and
		// one packet more than the head used; take the middle.
		span := r.HeadSpan
		if r.TailBunched > 0 {
			span = r.HeadSendSpan
		}
		buckets = append(buckets, float64(r.HeadBytes)-cir/8*span.Seconds()+pkt/2)
	}
	b := stats.InterpolatedMedian(buckets)
	v.Kind = Policer
	v.RateBps = Estimate{cir, spread(rates) + cir*0.02}
	// Bucket: ± one packet (a packet passes whole or not at all), the
	// spread between trains, and the rate's error over the head's span.
	v.BucketBytes = Estimate{b, pkt/2 + spread(buckets) + v.RateBps.Err/8*rs[len(rs)-1].HeadSpan.Seconds()}
	var rise time.Duration
	for _, r := range rs {
		rise = max(rise, r.DelayRise)
	}
	head := rs[len(rs)-1]
	pass := fmt.Sprintf("at %.1f Mbit/s", head.HeadBps/1e6)
	if head.HeadSpan <= 2*noise {
		pass = fmt.Sprintf("faster than the receive stamps resolve (%.0f B within %v)", float64(head.HeadBytes), head.HeadSpan)
	}
	v.Why = fmt.Sprintf("the first %.0f B of each train passed %s with the delay rising at most %.2f ms, then only %.1f Mbit/s got through with losses: a policer at %.1f Mbit/s with a bucket of %.0f B (%.1f ms at that rate)",
		float64(head.HeadBytes), pass, rise.Seconds()*1e3, cir/1e6, cir/1e6, b, b*8/cir*1e3)
	return v
}

// spread is half the range of v (0 for fewer than two values).
func spread(v []float64) float64 {
	if len(v) < 2 {
		return 0
	}
	return (slices.Max(v) - slices.Min(v)) / 2
}

// Lengths returns train lengths in packets, doubling from first until a
// train of maxBytes (of packets of size bytes), the last one capped.
func Lengths(first, size, maxBytes int) []int {
	var out []int
	for n := max(first, 2); ; n *= 2 {
		if n*size >= maxBytes {
			out = append(out, max(2, maxBytes/size))
			return out
		}
		out = append(out, n)
	}
}

// SmallBufferShare is the share of the BDP below which a queue is too
// small for one TCP flow: after a loss a CUBIC sender cuts its window to
// β = 0.7 of what filled pipe and queue, and keeps the link busy only if
// that still covers the BDP: 0.7 × (BDP + Q) ≥ BDP, so Q ≥ 0.3/0.7 × BDP.
const SmallBufferShare = 0.3 / 0.7

// SmallBuffer reports whether a queue of q bytes is too small for one
// TCP flow on a path whose BDP is bdp bytes.
func SmallBuffer(q, bdp float64) bool { return q < SmallBufferShare*bdp }

// Enough reports whether the trains so far decide: two that lost packets
// with a tail that, against the receive stamps' noise, came surely
// slower than the head or than it was sent (a policer's rate and bucket
// from two, a queue's tail at its head's rate), or surely as fast as it
// was sent (loss on the line). A tail within the noise of both (a few
// packets after a bucket of a few packets) asks for a longer train.
func Enough(rs []dispersion.Reading, noise time.Duration) bool {
	n := 0
	for _, r := range rs {
		if readable(r, noise) {
			n++
		}
	}
	return n >= 2
}

// tailHeads is how many of its head's bytes a tail must carry to read a
// rate: a sender that stalls as the tail starts lets a policer's bucket
// fill again, up to what the head used, and that passes in a burst at
// the tail's start; over 4 × the head's bytes it speeds the tail's rate
// up by at most a quarter (the rate's error bar holds what it does).
const tailHeads = 4

// readable reports whether a train's tail decides (tailOf: surely slower
// than the head or than it was sent, or surely as fast as sent, and not
// a sender that fell behind) and, unless a queue spaced its head (a
// queue fills again in a stall, it does not pass a burst), carried
// tailHeads × its head's bytes.
func readable(r dispersion.Reading, noise time.Duration) bool {
	c := tailOf(r, noise)
	if c == tailNone || c == tailSenderSlowed {
		return false
	}
	return spaced(r, math.Inf(1)) || longTail(r)
}

// longTail reports whether a train's tail carried tailHeads × its
// head's bytes.
func longTail(r dispersion.Reading) bool {
	return r.TailBps*r.TailSpan.Seconds() >= tailHeads*headBits(r)
}

// MinPacket is the smallest train packet: small enough that a bucket or
// queue of a few kB still holds several, large enough that a sender and
// a receiver keep up with the packet rate.
const MinPacket = 200

// PacketSize picks a train's packet size for a bucket or queue of about
// limit bytes: full-size (1500) when that holds at least 8 of them,
// smaller down to MinPacket so it holds 8.
func PacketSize(limit float64) int {
	return int(max(MinPacket, min(1500, limit/8)))
}

// Longest bounds the trains' size: long enough to overflow a queue of 4
// × the BDP (3 × and the margin a queue counted in IP bytes needs against
// rates that count framing) or to empty a bucket of 250 ms of the rate, both while the
// bottleneck drains at rateBps under a sender at senderBps (a train of L
// bytes fills a queue or empties a bucket by L × (1 − rate/sender)), plus
// a tail that gets 2 × dispersion.MinTail packets of size bytes through
// after the first loss (at rate/sender of what is sent); at most
// MaxBytes. A bigger
// bucket or queue reads as clean, or as a queue of at least the longest
// train's rise, and says so.
func Longest(rateBps, bdpBytes, senderBps float64, size int) int {
	fill := max(0.1, 1-rateBps/senderBps)
	need := max(4*bdpBytes, 0.25*rateBps/8) / fill
	tail := 2 * dispersion.MinTail * float64(size) * senderBps / rateBps
	return int(min(MaxBytes, max(need+tail, 64e3)))
}

// MaxBytes is the most one train may carry.
const MaxBytes = 32 << 20
