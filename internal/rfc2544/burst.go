package rfc2544

// BurstSearch is RFC 2544 §26.4's back-to-back search: the longest burst
// of frames at the generator's fastest that passes without loss, by
// bisection over the burst's length from Max (the RFC asks for bursts of
// at least 2 s at the line rate) down to one frame.
type BurstSearch struct {
	Max int // the longest burst tried
	// Low is the longest burst that passed (1 until one did), High the shortest
	// that lost a frame (Max + 1: none did).
	Low, High int
}

// NewBurstSearch searches bursts of 2 to max frames: one frame alone
// never waits, so it passes unless the line loses it.
func NewBurstSearch(max int) *BurstSearch {
	return &BurstSearch{Max: max, Low: 1, High: max + 1}
}

// Next is the next burst's length, and false when the search is over (the
// longest passing burst is Low, exact to the frame).
func (b *BurstSearch) Next() (int, bool) {
	switch {
	case b.High > b.Max && b.Low < b.Max:
		return b.Max, true // the longest first
	case b.High-b.Low <= 1:
		return 0, false
	}
	return (b.Low + b.High) / 2, true
}

// Record narrows the search with a burst of n frames that lost lost. A
// pass above a failure (chance, or the path changed) moves the failure
// above it.
func (b *BurstSearch) Record(n, lost int) {
	switch {
	case lost == 0 && n > b.Low:
		b.Low = n
		if n >= b.High {
			b.High = b.Max + 1
		}
	case lost > 0 && n < b.High:
		b.High = n
		if n <= b.Low {
			b.Low = 1
		}
	}
}

// MaxResends bounds the sends again of a search's longest whole burst
// when it left slower than the search's usual rate (it may have passed
// a queue it did not fill; the method's back-to-back step).
const MaxResends = 3

// MaxTrials bounds a burst search's trials: two bisections of 1 … Max
// and MaxResends.
func (b *BurstSearch) MaxTrials() int {
	n := 1
	for m := b.Max; m > 0; m /= 2 {
		n++
	}
	return 2*n + 1 + MaxResends
}

// Buffer is the queue a burst of burst frames implies on a line carrying
// lineFPS when the generator sent it at genFPS: while the burst arrives
// the line forwards part of it and the rest waits. The first frame goes
// straight onto the line; when the last arrives, (burst − 1) / genFPS
// later, the line has sent (burst − 1) × lineFPS / genFPS more, so the
// longest burst with no loss leaves (burst − 1) × (1 − lineFPS / genFPS)
// frames waiting: the buffer, to within a frame. A generator no faster
// than the line queues nothing: 0.
func Buffer(burst int, lineFPS, genFPS float64) float64 {
	if genFPS <= lineFPS || genFPS <= 0 || burst < 1 {
		return 0
	}
	return float64(burst-1) * (1 - lineFPS/genFPS)
}
