package ber

import (
	"errors"
	"fmt"
	"math"
)

// RatePoint is what one offered rate saw, for one frame size: frames sent
// and frames received (counts).
type RatePoint struct {
	RateBps  float64 // offered, as the caller counts it (label only)
	Sent     uint64
	Received uint64
}

// RateVerdict is whether loss depends on the offered rate.
type RateVerdict int

// Rate verdicts; the zero value is none (JudgeRate returned an error).
const (
	NoRateVerdict RateVerdict = iota
	// RateIndependent: the loss ratio is the same at every rate (within
	// chance): a lossy line, not a rate limit, at the rates tried. RFC
	// 2544's zero-loss throughput is then not meaningful (no rate is
	// loss-free); report loss against rate instead.
	RateIndependent
	// RateDependent: the loss ratios differ beyond chance (at RateAlpha):
	// a rate limit (policer, queue) or congestion at some rates tried.
	RateDependent
	// RateNoLoss: nothing lost at any rate.
	RateNoLoss
	// RateTooFewLosses: some expected count under homogeneity is below
	// MinExpected, too few for the chi-square test.
	RateTooFewLosses
)

var rateNames = [...]string{"no verdict", "rate-independent loss", "rate-dependent loss", "no loss", "too few losses"}

func (v RateVerdict) String() string {
	if v >= 0 && int(v) < len(rateNames) {
		return rateNames[v]
	}
	return fmt.Sprintf("rate verdict(%d)", int(v))
}

const (
	// RateAlpha is the significance level of the homogeneity test: loss
	// ratios this improbably different under one common ratio are
	// RateDependent. As FitAlpha, one false alarm in a hundred.
	RateAlpha = 0.01
	// MinExpected is the fewest frames, lost and received, each rate must
	// be expected to have under the pooled loss ratio (Cochran's rule for
	// the chi-square approximation): a rate of N frames at pooled loss p
	// needs N·p ≥ 5 and N·(1 − p) ≥ 5.
	MinExpected = 5
)

// RateJudgement is JudgeRate's answer.
type RateJudgement struct {
	Verdict     RateVerdict
	Loss        float64 // pooled loss ratio, all rates together
	Chi2        float64 // Pearson's statistic
	DF          int     // rates − 1
	P           float64 // p-value; 1 when not tested
	MinExpected float64 // the smallest expected count, lost or received, under Loss
}

// JudgeRate tests whether the loss ratio at several offered rates (one
// frame size) is one ratio: Pearson's chi-square test of homogeneity of
// the 2 × R table of lost and received frames, R − 1 degrees of freedom.
// It needs at least two rates. Loss that is the same at every rate is a
// lossy line (a rate limit drops only above its rate); the test says
// nothing about rates not tried, so include some below any suspected
// limit and at least one at the rate whose loss matters.
func JudgeRate(points []RatePoint) (RateJudgement, error) {
	if len(points) < 2 {
		return RateJudgement{}, errors.New("ber: JudgeRate needs at least two rates: send at several offered rates")
	}
	var sent, lost float64
	for _, p := range points {
		switch {
		case p.Sent == 0:
			return RateJudgement{}, fmt.Errorf("ber: rate %.0f bit/s: no frames sent: drop the rate or send some", p.RateBps)
		case p.Received > p.Sent:
			return RateJudgement{}, fmt.Errorf("ber: rate %.0f bit/s: %d received of %d sent: count each frame once (duplicates?)", p.RateBps, p.Received, p.Sent)
		}
		sent += float64(p.Sent)
		lost += float64(p.Sent - p.Received)
	}
	j := RateJudgement{Loss: lost / sent, DF: len(points) - 1, P: 1, MinExpected: math.Inf(1)}
	if lost == 0 {
		j.Verdict, j.MinExpected = RateNoLoss, 0
		return j, nil
	}
	for _, p := range points {
		n, k := float64(p.Sent), float64(p.Sent-p.Received)
		e := n * j.Loss
		j.MinExpected = min(j.MinExpected, e, n-e)
		if j.Loss < 1 {
			j.Chi2 += (k - e) * (k - e) / (e * (1 - j.Loss))
		}
	}
	if j.MinExpected < MinExpected {
		j.Verdict = RateTooFewLosses
		return j, nil
	}
	j.P = chi2Survival(j.Chi2, j.DF)
	j.Verdict = RateIndependent
	if j.P < RateAlpha {
		j.Verdict = RateDependent
	}
	return j, nil
}
