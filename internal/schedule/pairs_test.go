package schedule

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestPairs(t *testing.T) {
	p := func(s, d string) Pair { return Pair{s, d} }
	for _, c := range []struct {
		name     string
		from, to []string
		both     bool
		want     []Pair
	}{
		{"one way", []string{"a", "b"}, []string{"x", "y"}, false,
			[]Pair{p("a", "x"), p("a", "y"), p("b", "x"), p("b", "y")}},
		{"both ways", []string{"a", "b"}, []string{"x"}, true,
			[]Pair{p("a", "x"), p("b", "x"), p("x", "a"), p("x", "b")}},
		{"mesh", []string{"a", "b", "c"}, []string{"a", "b", "c"}, false,
			[]Pair{p("a", "b"), p("a", "c"), p("b", "a"), p("b", "c"), p("c", "a"), p("c", "b")}},
		{"mesh both ways adds nothing", []string{"a", "b"}, []string{"a", "b"}, true,
			[]Pair{p("a", "b"), p("b", "a")}},
		{"shared agent, no self pair", []string{"a", "b"}, []string{"b", "c"}, true,
			[]Pair{p("a", "b"), p("a", "c"), p("b", "c"), p("b", "a"), p("c", "a"), p("c", "b")}},
		{"named twice", []string{"a", "a"}, []string{"x", "x"}, false, []Pair{p("a", "x")}},
		{"empty group", []string{"a"}, nil, true, nil},
		{"alone", []string{"a"}, []string{"a"}, true, nil},
	} {
		if got := Pairs(c.from, c.to, c.both); !slices.Equal(got, c.want) {
			t.Errorf("%s: Pairs(%q, %q, %v) = %v, want %v", c.name, c.from, c.to, c.both, got, c.want)
		}
	}
}

// TestPairsProperties: on random groups, no self pair, no repeat, every
// pair the groups call for, and the same answer twice.
func TestPairsProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(*seed, 2))
	names := []string{"a", "b", "c", "d", "e"}
	group := func() []string {
		g := make([]string, rng.IntN(5))
		for i := range g {
			g[i] = names[rng.IntN(len(names))]
		}
		return g
	}
	for i := range 10_000 {
		from, to, both := group(), group(), rng.IntN(2) == 0
		got := Pairs(from, to, both)
		if !slices.Equal(got, Pairs(from, to, both)) {
			t.Fatalf("case %d (seed %d): not stable", i, *seed)
		}
		want := map[Pair]bool{}
		for _, s := range from {
			for _, d := range to {
				if s != d {
					want[Pair{s, d}] = true
					if both {
						want[Pair{d, s}] = true
					}
				}
			}
		}
		seen := map[Pair]bool{}
		for _, p := range got {
			if p.Source == p.Dest || seen[p] || !want[p] {
				t.Fatalf("case %d (seed %d): Pairs(%q, %q, %v) = %v: %v is a self pair, a repeat or not asked for", i, *seed, from, to, both, got, p)
			}
			seen[p] = true
		}
		if len(seen) != len(want) {
			t.Fatalf("case %d (seed %d): Pairs(%q, %q, %v) = %v: %d pairs, want %d", i, *seed, from, to, both, got, len(seen), len(want))
		}
	}
}

// TestSlip: within [0, max), spread over all of it (each tenth of the
// range gets about a tenth of 100,000 draws), none for max ≤ 0.
func TestSlip(t *testing.T) {
	rng := rand.New(rand.NewPCG(*seed, 3))
	const n, max = 100_000, 10 * time.Minute
	var bins [10]int
	for range n {
		d := Slip(t0, max, rng).Sub(t0)
		if d < 0 || d >= max {
			t.Fatalf("seed %d: slip %v is outside [0, %v)", *seed, d, max)
		}
		bins[d*10/max]++
	}
	for i, k := range bins { // binomial: sd ≈ 95, 6 sd either side
		if k < n/10-570 || k > n/10+570 {
			t.Errorf("seed %d: tenth %d of the range got %d of %d slips, want about %d", *seed, i, k, n, n/10)
		}
	}
	for _, m := range []time.Duration{0, -time.Second} {
		if got := Slip(t0, m, nil); !got.Equal(t0) {
			t.Errorf("Slip with max %v moved the start to %v", m, got)
		}
	}
	if got := Slip(t0, 1, rng); !got.Equal(t0) {
		t.Errorf("Slip with max 1ns = %v, want the start itself", got)
	}
}
