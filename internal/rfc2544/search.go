package rfc2544

import "math"

// Target is one goal of the throughput search: the highest rate whose
// trial lost at most LossRatio of its frames (0: none).
type Target struct {
	LossRatio float64 `json:"loss_ratio"`
	// LowFPS is the highest rate that met the goal (0: none did),
	// HighFPS the lowest that did not (+Inf: none failed; in JSON the
	// runner stores what it saw).
	LowFPS  float64 `json:"low_fps"`
	HighFPS float64 `json:"high_fps"`
}

func (t Target) width() float64 { return t.HighFPS - t.LowFPS }

// Search is RFC 2544 §26.1's throughput search for two goals at once, in
// the spirit of FD.io CSIT's MLRsearch: every trial narrows both the
// zero-loss bracket and the bracket at a loss ratio, and the next trial
// halves the wider bracket. It first offers the line rate (MaxFPS); it
// ends when each bracket is within Resolution frames/s, or when the line
// rate met the goal. Not safe for concurrent use.
type Search struct {
	MaxFPS     float64  // the ceiling: the line rate, frames/s
	Resolution float64  // the search stops when a bracket is this narrow, frames/s
	Targets    []Target // [0]: zero loss; [1]: at the loss ratio asked
}

// NewSearch searches up to maxFPS to within resolution frames/s for the
// zero-loss rate and the rate at lossRatio (0 < lossRatio < 1; a ratio of
// 0 makes the second goal the first).
func NewSearch(maxFPS, resolution, lossRatio float64) *Search {
	s := &Search{MaxFPS: maxFPS, Resolution: math.Max(resolution, maxFPS*1e-6)}
	for _, r := range []float64{0, lossRatio} {
		s.Targets = append(s.Targets, Target{LossRatio: r, HighFPS: math.Inf(1)})
	}
	return s
}

// done says whether t needs no more trials.
func (s *Search) done(t Target) bool {
	return t.LowFPS >= s.MaxFPS || (!math.IsInf(t.HighFPS, 1) && t.width() <= s.Resolution)
}

// Next is the rate of the next trial, frames/s, and false when the search
// is over.
func (s *Search) Next() (float64, bool) {
	best, width := -1, 0.0
	for i, t := range s.Targets {
		if s.done(t) {
			continue
		}
		if math.IsInf(t.HighFPS, 1) {
			return s.MaxFPS, true // the line rate first
		}
		if w := t.width(); w > width {
			best, width = i, w
		}
	}
	if best < 0 {
		return 0, false
	}
	t := s.Targets[best]
	return (t.LowFPS + t.HighFPS) / 2, true
}

// Record narrows the brackets with a trial at fps that sent and received
// frames. A goal met above a rate that failed it (the path changed, or
// chance) moves the failure above: the bracket is searched again there.
func (s *Search) Record(fps float64, sent, received uint64) {
	lost := float64(sent - min(received, sent))
	for i := range s.Targets {
		t := &s.Targets[i]
		ok := sent > 0 && lost <= t.LossRatio*float64(sent)
		if t.LossRatio == 0 {
			ok = sent > 0 && lost == 0
		}
		switch {
		case ok && fps > t.LowFPS:
			t.LowFPS = fps
			if fps >= t.HighFPS {
				t.HighFPS = math.Inf(1)
			}
		case !ok && fps < t.HighFPS:
			t.HighFPS = fps
			if fps <= t.LowFPS {
				t.LowFPS = 0
			}
		}
	}
}

// Settled says whether a trial at fps, whatever it showed, could move
// no goal's result by more than the resolution: each goal is done, or
// met at a rate within Resolution below fps. A trial there that cannot
// be read (its generator fell behind) leaves the result as asked.
func (s *Search) Settled(fps float64) bool {
	for _, t := range s.Targets {
		if !s.done(t) && (t.LowFPS <= 0 || fps-t.LowFPS > s.Resolution) {
			return false
		}
	}
	return true
}

// Result is the highest rate found at zero loss and at the loss ratio,
// frames/s (0: no rate tried met it).
func (s *Search) Result() (zeroLoss, atRatio float64) {
	return s.Targets[0].LowFPS, s.Targets[len(s.Targets)-1].LowFPS
}

// MaxTrials bounds a search's trials: two bisections from the line rate
// to the resolution, each twice over (re-searched after an inconsistent
// trial), and the first.
func (s *Search) MaxTrials() int {
	n := int(math.Ceil(math.Log2(s.MaxFPS/s.Resolution))) + 1
	return 4*n + 1
}
