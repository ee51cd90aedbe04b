package ber

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/fullpipe/fullpipe/internal/frame"
)

// rates are the offered rates of the law below, bit/s, on a 2 Mbit/s line.
var rates = []float64{0.5e6, 1e6, 1.5e6, 2e6, 2.5e6, 3e6}

// sweep draws, for 1518-byte frames over secs at each rate, losses of a
// line of loss lineLoss behind a rate limit of limitBps (0: none): above
// the limit a fraction 1 − limit/rate is dropped as well.
func sweep(seed uint64, rates []float64, lineLoss, limitBps, secs float64) []RatePoint {
	src := rand.NewPCG(seed, 0x2544)
	var pts []RatePoint
	for _, r := range rates {
		n := lineFrames(r, secs, 1518)
		p := lineLoss
		if limitBps > 0 && r > limitBps {
			p = 1 - (1-lineLoss)*limitBps/r
		}
		lost := distuv.Binomial{N: float64(n), P: p, Src: src}.Rand()
		pts = append(pts, RatePoint{RateBps: r, Sent: n, Received: n - uint64(lost)})
	}
	return pts
}

// TestJudgeRateLaw: a lossy line (BER 1e-6: 1.2 % of 1518-byte frames at
// every rate) is rate-independent; a 1.5 Mbit/s limit, loss-free below,
// is rate-dependent; a limit on the lossy line too. 200 seeded sweeps of
// 60 s per rate each; false alarms at most 3 % (the test's level is 1 %).
func TestJudgeRateLaw(t *testing.T) {
	ber := LossProb(1e-6, 0, FrameBits(1518))
	cases := []struct {
		name     string
		rates    []float64
		loss     float64
		limitBps float64
		want     RateVerdict
		minRight float64
	}{
		{"lossy line, at and below its rate", rates[:4], ber, 0, RateIndependent, 0.97},
		{"1.5 Mbit/s limit", rates, 0, 1.5e6, RateDependent, 1},
		{"1.5 Mbit/s limit on a lossy line", rates, ber, 1.5e6, RateDependent, 1},
		{"limit just below the top rate", rates, ber, 2.9e6, RateDependent, 0.95},
	}
	for _, c := range cases {
		right := 0
		var wrong uint64
		for seed := uint64(1); seed <= 200; seed++ {
			j, err := JudgeRate(sweep(seed, c.rates, c.loss, c.limitBps, 60))
			if err != nil {
				t.Fatalf("%s, seed %d: %v", c.name, seed, err)
			}
			if j.Verdict == c.want {
				right++
			} else {
				wrong = seed
			}
		}
		t.Logf("%s: %v in %d of 200", c.name, c.want, right)
		if float64(right) < c.minRight*200 {
			t.Errorf("%s: %v in %d of 200, want ≥ %.0f %% (e.g. seed %d)", c.name, c.want, right, 100*c.minRight, wrong)
		}
	}
}

// TestJudgeRateTable: the statistic by hand, and the edges.
func TestJudgeRateTable(t *testing.T) {
	cases := []struct {
		name string
		pts  []RatePoint
		want RateVerdict
		chi2 float64 // checked when not NaN
	}{
		// 100 of 1000 and 200 of 1000: pooled 0.15, expected 150 each,
		// χ² = 2 × 50² / (150 × 0.85) = 39.2157
		{"by hand", []RatePoint{{1e6, 1000, 900}, {2e6, 1000, 800}}, RateDependent, 2 * 2500 / (150 * 0.85)},
		{"same ratio", []RatePoint{{1e6, 1000, 990}, {2e6, 2000, 1980}}, RateIndependent, 0},
		{"no loss", []RatePoint{{1e6, 1000, 1000}, {2e6, 1000, 1000}}, RateNoLoss, 0},
		{"too few", []RatePoint{{1e6, 100, 99}, {2e6, 100, 97}}, RateTooFewLosses, math.NaN()},
		{"all lost", []RatePoint{{1e6, 100, 0}, {2e6, 100, 0}}, RateTooFewLosses, math.NaN()},
	}
	for _, c := range cases {
		j, err := JudgeRate(c.pts)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if j.Verdict != c.want || (!math.IsNaN(c.chi2) && math.Abs(j.Chi2-c.chi2) > 1e-9*(1+c.chi2)) {
			t.Errorf("%s: %+v, want %v, χ² %g", c.name, j, c.want, c.chi2)
		}
	}
	for _, c := range []struct {
		pts  []RatePoint
		want string
	}{
		{[]RatePoint{{1e6, 10, 10}}, "at least two"},
		{[]RatePoint{{1e6, 10, 10}, {2e6, 0, 0}}, "no frames sent"},
		{[]RatePoint{{1e6, 10, 10}, {2e6, 10, 12}}, "count each frame once"},
	} {
		if _, err := JudgeRate(c.pts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one saying %q", c.pts, err, c.want)
		}
	}
}

// TestTellLossyLineFromRateLimit is the lab proof's logic on drawn data:
// a 2 Mbit/s line with BER 1e-6 (sizes at the line's rate, rates at 1518
// bytes up to it) is bit errors, rate-independent, BER within ×1.5; a
// 1.5 Mbit/s policer on a clean line is size-independent (at one bit
// rate every size loses the same share) and rate-dependent. Each of the
// three tests has its false alarms (1 % for fit and rate, 5 % for BER's
// interval reaching 0), so over 200 seeds at least 95 % of each pair of
// readings must be right, not all.
func TestTellLossyLineFromRateLimit(t *testing.T) {
	var lineRight, policeRight int
	for seed := uint64(1); seed <= 200; seed++ {
		line := mustFit(t, seed, draw(seed, 1e-6, 0, FrameBits, 2e6, 60, frame.RFC2544Sizes()))
		lineRate, _ := JudgeRate(sweep(seed, rates[:4], LossProb(1e-6, 0, FrameBits(1518)), 0, 60))
		// the policer at 2 Mbit/s offered: 25 % of every size
		police := mustFit(t, seed, draw(seed, 0, 0.25, FrameBits, 2e6, 60, frame.RFC2544Sizes()))
		policeRate, _ := JudgeRate(sweep(seed, rates[:4], 0, 1.5e6, 60))
		if line.Verdict == BitErrors && lineRate.Verdict == RateIndependent && within(line.BER, 1e-6, 1.5) {
			lineRight++
		} else {
			t.Logf("seed %d: lossy line read as %v (BER %g), %v", seed, line.Verdict, line.BER, lineRate.Verdict)
		}
		if police.Verdict == SizeIndependent && policeRate.Verdict == RateDependent {
			policeRight++
		} else {
			t.Logf("seed %d: policer read as %v, %v", seed, police.Verdict, policeRate.Verdict)
		}
	}
	t.Logf("lossy line read right in %d of 200, policer in %d", lineRight, policeRight)
	if lineRight < 190 || policeRight < 190 {
		t.Errorf("lossy line read right in %d of 200, policer in %d: want ≥ 190 each", lineRight, policeRight)
	}
}
