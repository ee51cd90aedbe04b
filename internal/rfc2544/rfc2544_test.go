package rfc2544

import (
	"github.com/fullpipe/fullpipe/internal/frame"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/ber"
)

// TestArithmetic: the RFC's and the industry's figures for Ethernet.
func TestArithmetic(t *testing.T) {
	for _, c := range []struct {
		rate  float64
		frame int
		fps   float64
	}{
		{100e6, 64, 148_809.52}, {100e6, 1518, 8_127.44}, {1e9, 64, 1_488_095.24}, {10e6, 128, 8_445.95}, {1e9, 9018, 13_830.49},
	} {
		if got := LineFPS(c.rate, c.frame); math.Abs(got-c.fps) > 0.01 {
			t.Errorf("LineFPS(%g, %d) = %.2f, want %.2f", c.rate, c.frame, got, c.fps)
		}
		if got := WireBps(LineFPS(c.rate, c.frame), c.frame); math.Abs(got-c.rate) > 1e-3 {
			t.Errorf("WireBps(LineFPS) = %g, want %g", got, c.rate)
		}
	}
	// The frame ↔ payload mapping is package frame's (its TestMapping).
	if got := Sizes(1500); len(got) != 7 || got[6] != 1518 {
		t.Errorf("Sizes(1500) = %v", got)
	}
	if got := Sizes(9000); len(got) != 8 || got[7] != frame.Jumbo {
		t.Errorf("Sizes(9000) = %v", got)
	}
	if CheckSize(64, 1500, true) == nil || CheckSize(1518, 1400, false) == nil || CheckSize(64, 1500, false) != nil {
		t.Error("CheckSize: 64 B over IPv6 and 1518 B over a 1400 MTU must be refused, 64 B over IPv4 allowed")
	}
	// 1518 B at 100 Mbit/s: 123.04 µs each way on top of a 2 ms round trip.
	if got := ExpectedRTT(2*time.Millisecond, 1518, 100e6); (got - 2*time.Millisecond - 2*123040*time.Nanosecond).Abs() > 2 {
		t.Errorf("ExpectedRTT = %v", got)
	}
}

// TestSearch: a path that passes every rate up to a limit, and loses
// above it the excess (a rate limit), is found to within the resolution
// for both goals, in a bounded number of trials; a lossy line (loss at
// every rate) collapses the zero-loss rate to 0 but keeps the rate at a
// loss ratio above its loss.
func TestSearch(t *testing.T) {
	const line = 148_809.0
	for _, c := range []struct {
		name           string
		limit, loss    float64 // the path: passes up to limit frames/s, loses loss at every rate
		zero, atRatio  float64 // want, frames/s (-1: within the resolution below limit)
		ratio, resolve float64
	}{
		{"clean line", 2 * line, 0, line, line, 0.005, 0.005 * line},
		{"limit at 61.3 %", 0.613 * line, 0, -1, -1, 0.005, 0.005 * line},
		{"lossy line, 0.1 %", 2 * line, 0.001, 0, line, 0.005, 0.005 * line},
		{"lossy line, 1 %", 2 * line, 0.01, 0, 0, 0.005, 0.005 * line},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := NewSearch(line, c.resolve, c.ratio)
			trials := 0
			for fps, ok := s.Next(); ok; fps, ok = s.Next() {
				if trials++; trials > s.MaxTrials() {
					t.Fatalf("more than %d trials", s.MaxTrials())
				}
				sent := uint64(fps * 10)
				got := math.Min(fps, c.limit) * 10 * (1 - c.loss)
				s.Record(fps, sent, uint64(got))
			}
			zero, at := s.Result()
			want := func(name string, got, w float64) {
				if w < 0 {
					if got > c.limit || got < c.limit-c.resolve {
						t.Errorf("%s: %.0f frames/s, want within %.0f below %.0f", name, got, c.resolve, c.limit)
					}
				} else if math.Abs(got-w) > 1e-6 {
					t.Errorf("%s: %.0f frames/s, want %.0f", name, got, w)
				}
			}
			want("zero loss", zero, c.zero)
			if c.limit < line { // the excess lost above a limit: within 0.5 % above it
				c.atRatio = -1
				c.limit = c.limit / (1 - c.ratio)
			}
			want("at the loss ratio", at, c.atRatio)
			t.Logf("%d trials", trials)
		})
	}
}

// TestSearchInconsistent: a pass above an earlier failure re-opens the
// bracket above it rather than ending with low > high.
func TestSearchInconsistent(t *testing.T) {
	s := NewSearch(1000, 10, 0.005)
	s.Record(1000, 100, 90)
	s.Record(500, 100, 90)
	s.Record(700, 100, 100)
	for _, tg := range s.Targets {
		if tg.LowFPS != 700 || !math.IsInf(tg.HighFPS, 1) {
			t.Errorf("target %+v, want low 700 and the failure forgotten", tg)
		}
	}
	if fps, ok := s.Next(); !ok || fps != 1000 {
		t.Errorf("next %v %v, want the line rate again", fps, ok)
	}
}

// TestBurstSearch: a queue of Q frames behind a line 10 times slower than
// the generator passes bursts up to N with (N − 1) × 0.9 ≤ Q, and Buffer
// gives Q back within a frame.
func TestBurstSearch(t *testing.T) {
	for _, q := range []int{0, 1, 17, 100, 1000} {
		const rho = 0.1
		b := NewBurstSearch(20000)
		trials := 0
		for n, ok := b.Next(); ok; n, ok = b.Next() {
			if trials++; trials > b.MaxTrials() {
				t.Fatalf("q %d: more than %d trials", q, b.MaxTrials())
			}
			lost := 0
			if waiting := (n - 1) - int(math.Floor(float64(n-1)*rho)); waiting > q {
				lost = waiting - q
			}
			b.Record(n, lost)
		}
		buf := Buffer(b.Low, 1, 1/rho)
		if math.Abs(buf-float64(q)) > 1 {
			t.Errorf("queue %d: longest burst %d, buffer %.1f frames", q, b.Low, buf)
		}
	}
	if NewBurstSearch(100); Buffer(50, 10, 5) != 0 {
		t.Error("a generator slower than the line queues nothing")
	}
}

func TestLossTableDone(t *testing.T) {
	for _, c := range []struct {
		lost []uint64
		done bool
	}{{nil, false}, {[]uint64{5}, false}, {[]uint64{5, 0}, false}, {[]uint64{5, 0, 0}, true}, {[]uint64{0, 0}, true}, {make([]uint64, 10), true}, {[]uint64{1, 1, 1, 1, 1, 1, 1, 1, 1}, false}, {[]uint64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, true}} {
		if got := LossTableDone(c.lost); got != c.done {
			t.Errorf("LossTableDone(%v) = %v", c.lost, got)
		}
	}
	if s := LossSteps(); len(s) != 10 || s[0] != 1 || math.Abs(s[9]-0.1) > 1e-12 {
		t.Errorf("LossSteps = %v", s)
	}
}

// TestLossyLine: a 2 Mbit/s line with BER 1e-6 (the lab's scenario 6)
// loses the same share at every rate, so JudgeRate says rate-independent
// (the low-rate trials pooled into bands), and FitBER gives the BER back
// within ×1.5; a rate limit at 60 % of the line is rate-dependent.
func TestLossyLine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const rate, lineBER = 2e6, 1e-6
	var all []Trial
	for _, frame := range []int{128, 512, 1518} {
		line := LineFPS(rate, frame)
		p := ber.LossProb(lineBER, 0, ber.EthernetIPBits(frame))
		var trials, limited []Trial
		for _, step := range append([]float64{1, 0.5, 0.25, 0.125}, LossSteps()...) {
			sent := uint64(line * step * 3) // 3 s trials
			trials = append(trials, Trial{frame, line * step, sent, sent - binomial(rng, sent, p)})
			got := math.Min(line*step, 0.6*line) * 3
			limited = append(limited, Trial{frame, line * step, sent, uint64(got)})
		}
		j, err := JudgeRate(trials, line)
		if err != nil || j.Verdict != ber.RateIndependent {
			t.Errorf("%d B lossy line: %v %+v", frame, err, j)
		}
		if j, err := JudgeRate(limited, line); err != nil || j.Verdict != ber.RateDependent {
			t.Errorf("%d B rate limit: %v %+v", frame, err, j)
		}
		all = append(all, trials...)
	}
	e, err := FitBER(all, func(f int) float64 { return LineFPS(rate, f) }, ber.EthernetIPBits)
	if err != nil || e.Verdict != ber.BitErrors || e.BER < lineBER/1.5 || e.BER > lineBER*1.5 {
		t.Errorf("fit: %v %+v", err, e)
	}
	t.Logf("BER %.3g [%.3g, %.3g] from %d lost of %d", e.BER, e.BERLow, e.BERHigh, e.Lost, e.Sent)
}

// binomial draws the lost count of n frames each lost with p.
func binomial(rng *rand.Rand, n uint64, p float64) uint64 {
	var k uint64
	for range n {
		if rng.Float64() < p {
			k++
		}
	}
	return k
}
