package ber

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fullpipe/fullpipe/internal/frame"
)

// TestNoLoss: nothing lost bounds BER exactly where no loss has
// probability 5 %: (1 − BER)^(Σ sent·bits) = 0.05 (≈ 3 / bits sent).
func TestNoLoss(t *testing.T) {
	pts := []Point{{64, 1_000_000, 1_000_000}, {1518, 100_000, 100_000}}
	e, err := Fit(pts, FrameBits)
	if err != nil {
		t.Fatal(err)
	}
	bits := 1e6*8*64 + 1e5*8*1518
	if e.Verdict != NoLoss || e.BER != 0 || e.BERLow != 0 || e.Q != 0 {
		t.Fatalf("no loss: %+v", e)
	}
	if got := math.Pow(1-e.BERHigh, bits); math.Abs(got-0.05) > 1e-9 {
		t.Errorf("BER < %g: (1 − BER)^bits = %g, want 0.05", e.BERHigh, got)
	}
	if got := math.Pow(1-e.QHigh, 1.1e6); math.Abs(got-0.05) > 1e-9 {
		t.Errorf("q < %g: (1 − q)^frames = %g, want 0.05", e.QHigh, got)
	}
	if r := e.BERHigh * bits; r < 2.99 || r > 3.0 {
		t.Errorf("BER bound × bits = %g, want ≈ 3 (the rule of three)", r)
	}
}

// TestEdges: the cases with nothing, or too little, to separate.
func TestEdges(t *testing.T) {
	cases := []struct {
		name    string
		pts     []Point
		verdict Verdict
		check   func(e Estimate) string
	}{
		{"all lost", []Point{{64, 100, 0}, {1518, 100, 0}}, AllLost, nil},
		{"one size: bounds, each as if the other were zero", []Point{{1518, 10_000, 9_880}}, OneSize, func(e Estimate) string {
			// 120 of 10,000 lost: BER 1e-6 alone, or q 1.2 % alone
			if !within(e.BER, 1e-6, 1.02) || !within(e.Q, 0.012, 1e-9+1) || e.BERLow != 0 || e.QLow != 0 {
				return "estimates"
			}
			if e.BERHigh <= e.BER || e.QHigh <= e.Q || e.BERHigh > 1.3e-6 {
				return "upper bounds"
			}
			return ""
		}},
		{"one size twice", []Point{{512, 1000, 990}, {512, 1000, 992}}, OneSize, nil},
		{"tiny sample", []Point{{64, 10, 10}, {1518, 10, 9}}, TooFewLosses, func(e Estimate) string {
			if e.BERHigh < 1e-5 || e.BERLow != 0 {
				return "one loss in 20 frames should leave BER wide open"
			}
			return ""
		}},
		{"two sizes: fit not testable", []Point{{64, 100_000, 99_950}, {1518, 10_000, 9_880}}, BitErrors, func(e Estimate) string {
			if e.DF != 0 || e.FitP != 1 {
				return "DF and FitP"
			}
			return ""
		}},
		{"BER 0: size-independent", flat(0.01), SizeIndependent, func(e Estimate) string {
			if e.BER > 1e-9 || e.BERLow != 0 || !within(e.Q, 0.01, 1.01) {
				return "BER 0, q 1 %"
			}
			return ""
		}},
		{"all lost at one size only", []Point{{64, 1000, 999}, {512, 1000, 980}, {1518, 1000, 0}}, NotRandom, nil},
	}
	for _, c := range cases {
		e, err := Fit(c.pts, FrameBits)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if e.Verdict != c.verdict {
			t.Errorf("%s: verdict %v, want %v: %+v", c.name, e.Verdict, c.verdict, e)
		}
		if c.check != nil {
			if why := c.check(e); why != "" {
				t.Errorf("%s: %s: %+v", c.name, why, e)
			}
		}
		if !(e.BERLow <= e.BER && e.BER <= e.BERHigh && e.QLow <= e.Q && e.Q <= e.QHigh) {
			t.Errorf("%s: estimates outside their intervals: %+v", c.name, e)
		}
	}
}

// flat is 1 % lost at every RFC 2544 size, 100,000 frames each.
func flat(loss float64) []Point {
	var pts []Point
	for _, l := range frame.RFC2544Sizes() {
		pts = append(pts, Point{l, 100_000, 100_000 - uint64(loss*100_000)})
	}
	return pts
}

// TestHugeCounts: 10^12 frames per size with the model's expected losses
// give the truth back to six digits (no overflow, no lost digits).
func TestHugeCounts(t *testing.T) {
	for _, c := range []struct{ ber, q float64 }{{1e-9, 0}, {1e-6, 1e-4}, {1e-10, 1e-6}} {
		var pts []Point
		for _, l := range frame.RFC2544Sizes() {
			n := uint64(1e12)
			pts = append(pts, Point{l, n, n - uint64(math.Round(LossProb(c.ber, c.q, FrameBits(l))*1e12))})
		}
		e, err := Fit(pts, FrameBits)
		if err != nil {
			t.Fatal(err)
		}
		if e.Verdict != BitErrors || !within(e.BER, c.ber, 1+1e-6) || (c.q > 0 && !within(e.Q, c.q, 1+1e-6)) || e.Q > c.q+1e-12 {
			t.Errorf("BER %g q %g from 10^12 frames: %+v", c.ber, c.q, e)
		}
		if e.BERHigh/e.BERLow > 1.01 {
			t.Errorf("BER %g: interval [%g, %g] too wide for 10^12 frames", c.ber, e.BERLow, e.BERHigh)
		}
	}
}

// TestNotRandom: loss against size that is not bit errors.
func TestNotRandom(t *testing.T) {
	// A device forwarding at most 1,500 frames/s, offered 2 Mbit/s at
	// each size: small frames lose most, large ones none.
	var pps []Point
	for _, l := range frame.RFC2544Sizes() {
		n := lineFrames(2e6, 60, l)
		passed := min(n, 1500*60)
		pps = append(pps, Point{l, n, passed})
	}
	// A path MTU of 1280 bytes: 1518-byte frames all lost, 1 % elsewhere.
	mtu := flat(0.01)
	mtu[len(mtu)-1].Received = 0
	for name, pts := range map[string][]Point{"packet-rate limit": pps, "MTU": mtu} {
		e, err := Fit(pts, FrameBits)
		if err != nil {
			t.Fatal(err)
		}
		if e.Verdict != NotRandom {
			t.Errorf("%s: verdict %v, want not random: %+v", name, e.Verdict, e)
		}
	}
}

// TestFitErrors: bad input is refused, naming the fix.
func TestFitErrors(t *testing.T) {
	cases := []struct {
		name string
		pts  []Point
		bits Bits
		want string
	}{
		{"nothing", nil, FrameBits, "no frames"},
		{"no bits", flat(0), nil, "Bits"},
		{"none sent", []Point{{64, 0, 0}}, FrameBits, "no frames sent"},
		{"duplicates", []Point{{64, 10, 11}}, FrameBits, "count each frame once"},
		{"smaller than its overhead", []Point{{18, 10, 10}}, EthernetIPBits, "positive"},
	}
	for _, c := range cases {
		e, err := Fit(c.pts, c.bits)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
		if e.Verdict != NoVerdict {
			t.Errorf("%s: verdict %v beside an error, want %v", c.name, e.Verdict, NoVerdict)
		}
	}
}

// TestProperties: monotonicity and invariance, on random counts.
func TestProperties(t *testing.T) {
	for seed := uint64(1); seed <= 100; seed++ {
		pts := draw(seed, 1e-6*rand.New(rand.NewPCG(seed, 1)).Float64()*4, 1e-3, FrameBits, 2e6, 60, frame.RFC2544Sizes())
		e := mustFit(t, seed, pts)
		// Every count ×10: the likelihood scales, its maximum stays; the
		// interval narrows inside the old one.
		ten := make([]Point, len(pts))
		for i, p := range pts {
			ten[i] = Point{p.FrameBytes, 10 * p.Sent, 10 * p.Received}
		}
		e10 := mustFit(t, seed, ten)
		if !within(e10.BER, e.BER, 1+1e-6) && math.Abs(e10.BER-e.BER) > 1e-15 {
			t.Errorf("seed %d: counts ×10 moved BER %g → %g", seed, e.BER, e10.BER)
		}
		if e10.BERLow < e.BERLow || e10.BERHigh > e.BERHigh {
			t.Errorf("seed %d: counts ×10 widened [%g, %g] to [%g, %g]", seed, e.BERLow, e.BERHigh, e10.BERLow, e10.BERHigh)
		}
		// More loss at the largest size: BER does not fall.
		more := append([]Point(nil), pts...)
		more[len(more)-1].Received -= 20
		if em := mustFit(t, seed, more); em.BER < e.BER*(1-1e-9) {
			t.Errorf("seed %d: 20 more lost at 1518 B lowered BER %g → %g", seed, e.BER, em.BER)
		}
		// The model: loss grows with size, BER and q.
		l := frame.RFC2544Sizes()[seed%7]
		if LossProb(2e-6, 1e-3, FrameBits(l)) <= LossProb(1e-6, 1e-3, FrameBits(l)) ||
			LossProb(1e-6, 1e-3, FrameBits(l+1)) <= LossProb(1e-6, 1e-3, FrameBits(l)) ||
			LossProb(1e-6, 2e-3, FrameBits(l)) <= LossProb(1e-6, 1e-3, FrameBits(l)) {
			t.Errorf("LossProb not increasing at %d B", l)
		}
	}
	// No loss: the bound falls as more frames are sent.
	prev := 1.0
	for _, n := range []uint64{10, 1000, 1e5, 1e7, 1e9} {
		e := mustFit(t, 0, []Point{{64, n, n}, {1518, n, n}})
		if e.BERHigh >= prev {
			t.Errorf("no loss in %d frames: BER < %g, not below %g", n, e.BERHigh, prev)
		}
		prev = e.BERHigh
	}
}

func mustFit(t *testing.T, seed uint64, pts []Point) Estimate {
	t.Helper()
	e, err := Fit(pts, FrameBits)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	return e
}

// TestIntervalIsLikelihoodRatio checks the searches against the
// definition, by brute force: at each end of BER's interval the profile
// (ℓ maximized over q by golden section, no derivatives) lies c/2 = 1.92
// below the maximum, and no grid point beats the maximum.
func TestIntervalIsLikelihoodRatio(t *testing.T) {
	pts := draw(7, 1e-6, 1e-3, FrameBits, 2e6, 60, frame.RFC2544Sizes())
	e := mustFit(t, 7, pts)
	m, _ := newModel(pts, FrameBits)
	ll := func(ber, q float64) float64 { return m.at(-math.Log1p(-q), -math.Log1p(-ber)*m.scale).l }
	prof := func(ber float64) float64 { // golden section over q in [0, 0.01]
		lo, hi := 0.0, 0.01
		for range 200 {
			a, b := hi-0.618*(hi-lo), lo+0.618*(hi-lo)
			if ll(ber, a) < ll(ber, b) {
				lo = a
			} else {
				hi = b
			}
		}
		return ll(ber, (lo+hi)/2)
	}
	lmax := ll(e.BER, e.Q)
	for _, end := range []float64{e.BERLow, e.BERHigh} {
		if d := 2 * (lmax - prof(end)); math.Abs(d-3.8415) > 1e-3 {
			t.Errorf("at BER %g: 2Δℓ = %g, want 3.8415", end, d)
		}
	}
	for i := -10; i <= 10; i++ {
		for j := -10; j <= 10; j++ {
			if l := ll(e.BER*(1+float64(i)/1000), e.Q*(1+float64(j)/1000)); l > lmax+1e-9 {
				t.Errorf("ℓ at BER×%g, q×%g = %g beats the maximum %g", 1+float64(i)/1000, 1+float64(j)/1000, l, lmax)
			}
		}
	}
}

// TestBitsMapping: the law of a wrong Bits mapping, on 10^12 frames per
// size with the expected losses (no noise). Bits short by a constant (the
// frame's 18 bytes of Ethernet counted nowhere) leave BER exact and put
// the missing bits' loss in q: 144 × BER. Bits counted that the line does
// not corrupt would need q < 0: BER comes out low and the fit fails.
func TestBitsMapping(t *testing.T) {
	expected := func(truth Bits) []Point {
		var pts []Point
		for _, l := range frame.RFC2544Sizes() {
			n := uint64(1e12)
			pts = append(pts, Point{l, n, n - uint64(math.Round(LossProb(1e-6, 0, truth(l))*1e12))})
		}
		return pts
	}
	short, err := Fit(expected(FrameBits), EthernetIPBits)
	if err != nil || short.Verdict != BitErrors || !within(short.BER, 1e-6, 1+1e-6) || !within(short.Q, LossProb(1e-6, 0, 8*frame.EthernetHeaderFCS), 1.001) {
		t.Errorf("frame's bits read as the IP packet's: %+v, want BER 1e-6 and q %g", short, LossProb(1e-6, 0, 8*frame.EthernetHeaderFCS))
	}
	long, err := Fit(expected(EthernetIPBits), FrameBits)
	if err != nil || long.Verdict != NotRandom || long.BER > 0.98e-6 {
		t.Errorf("IP packet's bits read as the frame's: %+v, want BER low and not random", long)
	}
}
