package ber

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// The likelihood, in parameters that make it concave and well scaled:
//
//	a = −ln(1 − q),  g = −ln(1 − BER)·scale,  η_i = a + g·x_i,
//
// where x_i = n_i / scale ∈ (0, 1] is row i's bit count over the largest
// (scale). The survival of a frame is e^(−η_i), its loss u_i = 1 − e^(−η_i)
// (computed as −expm1(−η_i), exact for tiny η), and the binomial
// log-likelihood (constants dropped) is
//
//	ℓ(a, g) = Σ_i k_i·ln u_i − (N_i − k_i)·η_i.
//
// Each term is concave in η_i and η_i is linear in (a, g), so ℓ is
// concave on a, g ≥ 0: one maximum, and each profile (the maximum over
// one parameter with the other fixed) is concave too. Every search below
// is a bracketed Newton iteration on a monotone derivative.

// row is one point, scaled: x its bits over scale, n sent, k lost.
type row struct{ x, n, k float64 }

type model struct {
	rows         []row
	scale        float64 // largest bit count
	sent, lost   float64
	sentN, lostN uint64
	sizes        int // distinct bit counts
}

// deriv is ℓ and its derivatives at one (a, g).
type deriv struct{ l, da, dg, aa, ag, gg float64 }

func (m *model) at(a, g float64) deriv {
	var d deriv
	for _, r := range m.rows {
		eta := a + g*r.x
		l, s, w := -(r.n-r.k)*eta, -(r.n - r.k), 0.0 // ℓ_i, dℓ_i/dη, −d²ℓ_i/dη²
		if r.k > 0 {
			u, v := -math.Expm1(-eta), math.Exp(-eta) // loss, survival
			if u <= 0 {
				l, s, w = math.Inf(-1), math.Inf(1), math.Inf(1)
			} else {
				l += r.k * math.Log(u)
				s += r.k * v / u
				w = r.k * v / (u * u)
			}
		}
		d.l += l
		d.da += s
		d.dg += s * r.x
		d.aa -= w
		d.ag -= w * r.x
		d.gg -= w * r.x * r.x
	}
	return d
}

// ber and q turn parameters back into probabilities.
func (m *model) ber(g float64) float64 { return -math.Expm1(-g / m.scale) }
func q(a float64) float64              { return -math.Expm1(-a) }

// start is a scale for searches: the pooled loss, as η.
func (m *model) start() float64 { return max(-math.Log1p(-m.lost/m.sent), 1e-12) }

// profile is a concave function of one parameter t ≥ 0: its value, first
// and second derivatives.
type profile func(t float64) (l, d1, d2 float64)

// aGiven and gGiven maximize ℓ over one parameter with the other fixed.
func (m *model) aGiven(g float64) float64 {
	return argmax(func(a float64) (float64, float64, float64) { d := m.at(a, g); return d.l, d.da, d.aa }, m.start())
}

func (m *model) gGiven(a float64) float64 {
	return argmax(func(g float64) (float64, float64, float64) { d := m.at(a, g); return d.l, d.dg, d.gg }, m.start())
}

// profG is ℓ's profile in g (a maximized): its derivatives by the
// envelope theorem, the second through the implicit a*(g).
func (m *model) profG(g float64) (float64, float64, float64) {
	a := m.aGiven(g)
	d := m.at(a, g)
	if a > 0 && d.aa < 0 {
		return d.l, d.dg, d.gg - d.ag*d.ag/d.aa
	}
	return d.l, d.dg, d.gg
}

// profA is ℓ's profile in a (g maximized).
func (m *model) profA(a float64) (float64, float64, float64) {
	g := m.gGiven(a)
	d := m.at(a, g)
	if g > 0 && d.gg < 0 {
		return d.l, d.da, d.aa - d.ag*d.ag/d.gg
	}
	return d.l, d.da, d.aa
}

// maxDoublings bounds the searches for a bracket: 4^60 × 1e-12 is far past
// any loss (η of 1e24).
const maxDoublings = 60

// argmax maximizes the concave p over t ≥ 0, from a bracket grown from
// start; +Inf when p still rises at the bracket's bound.
func argmax(p profile, start float64) float64 {
	d := func(t float64) (float64, float64) { _, d1, d2 := p(t); return d1, d2 }
	if v, _ := d(0); v <= 0 {
		return 0
	}
	lo, hi := 0.0, start
	for i := 0; ; i++ {
		if v, _ := d(hi); v < 0 {
			break
		}
		if i == maxDoublings {
			return math.Inf(1)
		}
		lo, hi = hi, 4*hi
	}
	return solve(d, lo, hi)
}

// interval is the profile-likelihood interval of p around its maximum
// t0 (value lmax): where 2·(lmax − p(t)) ≤ c. The lower end is 0 when
// p(0) is within it, the upper +Inf when no bracket reaches below it.
func interval(p profile, t0, lmax, c float64) (lo, hi float64) {
	if math.IsInf(t0, 1) {
		return 0, t0
	}
	target := lmax - c/2
	f := func(t float64) (float64, float64) { l, d1, _ := p(t); return l - target, d1 }
	if l0, _, _ := p(0); t0 > 0 && l0 < target {
		lo = solve(func(t float64) (float64, float64) { v, d := f(t); return -v, -d }, 0, t0)
	}
	top := max(2*t0, 1e-12)
	for i := 0; ; i++ {
		if v, _ := f(top); v < 0 {
			break
		}
		if i == maxDoublings || math.IsInf(t0, 1) {
			return lo, math.Inf(1)
		}
		top *= 4
	}
	return lo, solve(f, t0, top)
}

// solve finds the root of f, decreasing on [lo, hi] with f(lo) > 0 >
// f(hi): a Newton step when it stays in the bracket and halves the last
// step, a bisection otherwise (Numerical Recipes' rtsafe), at most 300
// steps, to a relative 1e-13.
func solve(f func(t float64) (v, dv float64), lo, hi float64) float64 {
	t, step := (lo+hi)/2, hi-lo
	for range 300 {
		v, dv := f(t)
		if v == 0 {
			return t
		}
		if v > 0 {
			lo = t
		} else {
			hi = t
		}
		next := t - v/dv
		if !(next > lo && next < hi) || math.Abs(next-t) > step/2 {
			next = (lo + hi) / 2
		}
		step = math.Abs(next - t)
		t = next
		if step <= 1e-13*t || hi-lo <= 1e-13*hi {
			break
		}
	}
	return t
}

// chi2Quantile and chi2Survival are the chi-square distribution's.
func chi2Quantile(p float64, df int) float64 { return distuv.ChiSquared{K: float64(df)}.Quantile(p) }
func chi2Survival(x float64, df int) float64 { return distuv.ChiSquared{K: float64(df)}.Survival(x) }

// fit estimates both parameters, their intervals, the fit test and the
// verdict, for at least two sizes and some but not all frames lost.
func (m *model) fit(e *Estimate) {
	c := chi2Quantile(Confidence, 1)
	g := argmax(m.profG, m.start())
	a := m.aGiven(g)
	lmax := m.at(a, g).l
	glo, ghi := interval(m.profG, g, lmax, c)
	alo, ahi := interval(m.profA, a, lmax, c)
	e.BER, e.BERLow, e.BERHigh = m.ber(g), m.ber(glo), m.ber(ghi)
	e.Q, e.QLow, e.QHigh = q(a), q(alo), q(ahi)
	e.Deviance, e.DF = m.deviance(a, g), len(m.rows)-2
	if e.DF > 0 {
		e.FitP = chi2Survival(e.Deviance, e.DF)
	}
	switch {
	case math.IsInf(g, 1) || math.IsInf(a, 1):
		e.Verdict = NotRandom // ℓ rises without end: cannot happen while some size has survivors
	case m.lost < MinLosses:
		e.Verdict = TooFewLosses
	case e.DF > 0 && e.FitP < FitAlpha:
		e.Verdict = NotRandom
	case glo > 0:
		e.Verdict = BitErrors
	default:
		e.Verdict = SizeIndependent
	}
}

// deviance is twice the log-likelihood ratio of the saturated model (each
// row its own loss ratio) to the fit at (a, g).
func (m *model) deviance(a, g float64) float64 {
	var d float64
	for _, r := range m.rows {
		eta := a + g*r.x
		if r.k > 0 {
			d += r.k * (math.Log(r.k/r.n) - math.Log(-math.Expm1(-eta)))
		}
		if r.k < r.n {
			d += (r.n - r.k) * (math.Log1p(-r.k/r.n) + eta)
		}
	}
	return max(2*d, 0)
}

// noLoss bounds both parameters when nothing was lost: the exact
// one-sided bound, where seeing no loss has probability 1 − Confidence
// with the other parameter zero (any of it makes no loss rarer still).
func (m *model) noLoss(e *Estimate) {
	e.Verdict = NoLoss
	z := math.Log(1 - Confidence)
	var bits float64
	for _, r := range m.rows {
		bits += r.n * r.x * m.scale
	}
	e.BERHigh, e.QHigh = -math.Expm1(z/bits), -math.Expm1(z/m.sent)
}

// oneSize bounds each parameter as if the other were zero: BER is at most
// what all the loss as bit errors would need, q likewise.
func (m *model) oneSize(e *Estimate) {
	e.Verdict = OneSize
	c := chi2Quantile(Confidence, 1)
	pg := func(g float64) (float64, float64, float64) { d := m.at(0, g); return d.l, d.dg, d.gg }
	g := argmax(pg, m.start())
	_, ghi := interval(pg, g, m.at(0, g).l, c)
	pa := func(a float64) (float64, float64, float64) { d := m.at(a, 0); return d.l, d.da, d.aa }
	a := argmax(pa, m.start())
	_, ahi := interval(pa, a, m.at(a, 0).l, c)
	e.BER, e.BERHigh = m.ber(g), m.ber(ghi)
	e.Q, e.QHigh = q(a), q(ahi)
}
