package stamp

import (
	"cmp"
	"slices"
	"time"

	"github.com/fullpipe/fullpipe/internal/stats"
)

// Result is a Sender's session: every packet's record and their summary.
type Result struct {
	Records []Record

	Sent     int // packets sent
	Received int // packets with at least one reply
	Lost     int // Sent − Received
	// In stateful mode, the reflector's sequence numbers count the packets
	// it received from us, which tells where each loss happened: between
	// two replies, LostForward = the sender sequence numbers skipped − the
	// reflector's skipped; LostBackward = the reflector's skipped. Packets
	// after the last reply cannot be placed: LostUnknown. In stateless mode
	// every loss is LostUnknown.
	LostForward, LostBackward, LostUnknown int
	Duplicates                             int  // replies past the first for a packet
	OutOfOrder                             int  // first replies that came after a reply to a later packet
	Unknown                                int  // replies we could not match to a packet we sent
	BadAuth                                int  // authenticated mode: replies whose HMAC did not match
	KernelStamps                           bool // T4 is the kernel's receive timestamp (SO_TIMESTAMPNS)

	RTT       stats.Delays // (T4−T1) − (T3−T2): the round trip without the reflector's residence
	Residence stats.Delays // T3−T2: time the reflector held each packet
	// One-way delays mix the two hosts' clocks: Forward is T2−T1 and
	// Backward T4−T3. They mean something only if both clocks are
	// synchronized (see each packet's Error Estimate, S bit); otherwise
	// they carry the clocks' offset, and may be negative.
	Forward, Backward stats.Delays
}

// Summarize computes a session's figures from its records (recs[k] is
// the packet of sequence k, sent or not). Records with a zero T1 were
// not sent (the session was cut short) and count for nothing.
func Summarize(recs []Record, stateful bool) Result {
	res := Result{Records: recs}
	var rtt, res1, fwd, back []time.Duration
	for _, r := range recs {
		if r.T1.IsZero() {
			continue
		}
		res.Sent++
		if !r.Replied() {
			continue
		}
		res.Received++
		res.Duplicates += r.Replies - 1
		rtt = append(rtt, r.RTT())
		res1 = append(res1, r.T3.Sub(r.T2))
		fwd = append(fwd, r.T2.Sub(r.T1))
		back = append(back, r.T4.Sub(r.T3))
	}
	res.Lost = res.Sent - res.Received
	res.RTT, res.Residence = stats.NewDelays(rtt), stats.NewDelays(res1)
	res.Forward, res.Backward = stats.NewDelays(fwd), stats.NewDelays(back)
	res.OutOfOrder = outOfOrder(recs)
	res.LostForward, res.LostBackward, res.LostUnknown = lossByDirection(recs[:res.Sent], stateful)
	return res
}

// outOfOrder counts first replies that arrived after the first reply to
// a later packet.
func outOfOrder(recs []Record) int {
	got := make([]Record, 0, len(recs))
	for _, r := range recs {
		if r.Arrival > 0 {
			got = append(got, r)
		}
	}
	slices.SortFunc(got, func(a, b Record) int { return cmp.Compare(a.Arrival, b.Arrival) })
	n, highest := 0, -1
	for _, r := range got {
		if int(r.Seq) < highest {
			n++
		} else {
			highest = int(r.Seq)
		}
	}
	return n
}

// lossByDirection places the losses of sent (sender sequence 0..len−1,
// all sent). In stateful mode the reflector's counter started at 0 for
// us (a fresh source port), so before the first reply, at sender
// sequence s with reflector sequence r, the reflector missed s − r of
// our packets and the rest of the gap was lost on the way back; between
// replies likewise on the differences. A duplicate on the way out makes
// a gap negative: it is counted as no loss.
func lossByDirection(sent []Record, stateful bool) (fwd, back, unknown int) {
	prevS, prevR := -1, -1
	for _, r := range sent {
		if !r.Replied() {
			continue
		}
		s, rs := int(r.Seq), int(r.ReflectorSeq)
		gap := s - prevS - 1
		if stateful {
			b := max(0, rs-prevR-1)
			b = min(b, max(0, gap))
			back += b
			fwd += max(0, gap-b)
			prevR = rs
		} else {
			unknown += max(0, gap)
		}
		prevS = s
	}
	unknown += len(sent) - 1 - prevS
	return fwd, back, unknown
}
