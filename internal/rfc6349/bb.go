package rfc6349

import "math"

// Step 2's bottleneck-bandwidth search: paced UDP streams, rates at layer
// 2. The first is sent at the CIR. One that arrives at ≥ BBConfirm of its
// rate confirms it; otherwise what arrived is the bottleneck's drain rate
// (a queue or a policer passes no more than that) and the next stream is
// sent at it to confirm, at most BBMaxStreams streams. BB is the rate
// confirmed, else the highest that arrived: never above the CIR.
const (
	BBConfirm    = 0.98
	BBMaxStreams = 3
)

// BBSearch is the search's state: Next says the rate to send, Observe
// takes what arrived, BB is the answer so far.
type BBSearch struct {
	rate, bb float64
	sent     int
	done     bool
}

// NewBBSearch starts a search at the CIR.
func NewBBSearch(cirBps float64) *BBSearch { return &BBSearch{rate: cirBps} }

// Next is the rate of the next stream, and whether one is due.
func (s *BBSearch) Next() (float64, bool) { return s.rate, !s.done && s.sent < BBMaxStreams }

// Observe takes the layer-2 rate that arrived of the stream sent at
// Next's rate.
func (s *BBSearch) Observe(gotBps float64) {
	s.sent++
	switch {
	case gotBps >= BBConfirm*s.rate:
		s.bb, s.done = s.rate, true
	case gotBps <= 0:
		s.done = true
	default:
		s.bb = math.Max(s.bb, gotBps)
		s.rate = gotBps
	}
}

// BB is the bottleneck bandwidth found: the rate confirmed, else the
// highest that arrived (0 when nothing did).
func (s *BBSearch) BB() float64 { return s.bb }

// LineLoss is the line's loss, from the stream at a quarter of the CIR
// and the stream at the CIR: the latter's loss rate when the quarter
// stream lost about as much as that rate predicts for its packet count,
// not significantly fewer (Poisson, 3 standard deviations). Loss on the
// line does not depend on the load; a queue overflowing under a sending
// host's bursts loses far fewer at a quarter of it. At low rates a few
// dozen packets may lose none by chance.
func LineLoss(quarterSent, quarterLost uint64, fullLossPct float64) float64 {
	expected := fullLossPct / 100 * float64(quarterSent)
	if fullLossPct <= 0 || float64(quarterLost) < expected-3*math.Sqrt(expected) {
		return 0
	}
	if quarterSent > 0 && quarterLost > 0 {
		return math.Min(fullLossPct, float64(quarterLost)/float64(quarterSent)*100)
	}
	return fullLossPct
}
