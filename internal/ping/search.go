package ping

import "math"

// MaxTrials bounds a rate search: a search of 5 % resolution over four
// decades needs about 20.
const MaxTrials = 32

// Search is the echo rate search's strategy, RFC 2544's throughput by
// halving, for two targets at once as FD.io's MLRsearch does: the
// highest rate with no loss, and the highest with a loss ratio at most
// Ratio. Each trial's outcome narrows both brackets; the next trial is
// the geometric middle of the zero-loss bracket until it is resolved
// (its ends within Resolution of each other), then of the other. The
// zero value is not ready: use NewSearch.
type Search struct {
	Min, Max   float64 // the rates searched, probes/s
	Resolution float64 // relative, e.g. 0.05
	Ratio      float64 // the second target's loss ratio, e.g. 0.005
	zero, loss bracket
	trials     int
}

// bracket is one target's highest rate that passed (0: none yet) and
// lowest that failed (+Inf: none yet).
type bracket struct{ lo, hi float64 }

// NewSearch searches [minRate, maxRate] probes/s to a relative
// resolution, for no loss and for a loss ratio at most ratio.
func NewSearch(minRate, maxRate, resolution, ratio float64) *Search {
	open := bracket{0, math.Inf(1)}
	return &Search{Min: minRate, Max: maxRate, Resolution: resolution, Ratio: ratio, zero: open, loss: open}
}

// Next is the rate of the next trial, or false when the search is done.
func (s *Search) Next() (float64, bool) {
	if s.trials >= MaxTrials {
		return 0, false
	}
	if r, ok := s.next(s.zero); ok {
		return r, true
	}
	return s.next(s.loss)
}

func (s *Search) next(b bracket) (float64, bool) {
	switch {
	case math.IsInf(b.hi, 1):
		return s.Max, b.lo < s.Max
	case b.hi <= s.Min:
		return 0, false // even the lowest rate failed
	case b.lo == 0 && b.hi <= s.Min*(1+s.Resolution):
		return s.Min, true
	case b.hi <= b.lo*(1+s.Resolution):
		return 0, false
	}
	return math.Sqrt(max(b.lo, s.Min) * b.hi), true
}

// Record is a trial's outcome: its rate and the ratio of its probes
// lost.
func (s *Search) Record(rate, lossRatio float64) {
	s.trials++
	s.zero.record(rate, lossRatio == 0)
	s.loss.record(rate, lossRatio <= s.Ratio)
}

func (b *bracket) record(rate float64, pass bool) {
	if pass {
		b.lo = max(b.lo, rate)
		if b.lo >= b.hi {
			b.hi = math.Inf(1) // a pass above a failure: the failure was noise; search above again
		}
		return
	}
	b.hi = min(b.hi, rate)
	if b.lo >= b.hi {
		b.lo = 0 // a failure below a pass: start over beneath it
	}
}

// Result is the highest rate that passed with no loss and with a loss
// ratio at most Ratio, probes/s (0: none passed).
func (s *Search) Result() (zeroLoss, atRatio float64) { return s.zero.lo, s.loss.lo }
