package rfc6349

import "testing"

// TestBBSearch: the search from the CIR on paths whose drain rate is
// known: a path that carries the CIR confirms it in one stream; one
// that drains slower is read at its drain rate and confirmed there; a
// rate that keeps falling stops after BBMaxStreams; nothing arriving
// ends it at 0.
func TestBBSearch(t *testing.T) {
	for _, c := range []struct {
		name  string
		drain func(rate float64) float64 // what arrives of a stream at rate
		bb    float64
		sent  []float64
	}{
		{"carries the CIR", func(r float64) float64 { return r * 0.99 }, 100e6, []float64{100e6}},
		{"policed at 60M", func(r float64) float64 { return min(r, 60e6) }, 60e6, []float64{100e6, 60e6}},
		{"falling", func(r float64) float64 { return r * 0.8 }, 80e6, []float64{100e6, 80e6, 64e6}},
		{"nothing", func(float64) float64 { return 0 }, 0, []float64{100e6}},
	} {
		s := NewBBSearch(100e6)
		var sent []float64
		for rate, ok := s.Next(); ok; rate, ok = s.Next() {
			sent = append(sent, rate)
			s.Observe(c.drain(rate))
		}
		if s.BB() != c.bb || len(sent) != len(c.sent) || sent[len(sent)-1] != c.sent[len(c.sent)-1] {
			t.Errorf("%s: BB %.0f after %v; want %.0f after %v", c.name, s.BB(), sent, c.bb, c.sent)
		}
	}
}

// TestLineLoss: the quarter-CIR stream's loss decides whether the CIR
// stream's loss is the line's.
func TestLineLoss(t *testing.T) {
	for _, c := range []struct {
		sent, lost uint64
		full, want float64
	}{
		{4000, 20, 0.5, 0.5}, // as many as predicted: the line's
		{4000, 0, 0.5, 0},    // 20 expected, none: a queue's bursts
		{100, 0, 0.5, 0.5},   // 0.5 expected: none proves nothing
		{4000, 40, 0.5, 0.5}, // more than the full stream: at most its rate
		{4000, 12, 0.5, 0.3}, // within 3 σ of 20: the quarter's own rate
		{4000, 0, 0, 0},      // no loss
	} {
		if got := LineLoss(c.sent, c.lost, c.full); got != c.want {
			t.Errorf("quarter %d sent %d lost, full %.2f %%: %v, want %v", c.sent, c.lost, c.full, got, c.want)
		}
	}
}
