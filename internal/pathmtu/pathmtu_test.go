package pathmtu

import (
	"math/bits"
	"testing"
)

// TestSearch: on paths that carry every size up to an MTU and none
// above, the search finds the MTU exactly, within its probe budget; a
// path below the floor gives 0; a stop keeps the largest size known to
// pass.
func TestSearch(t *testing.T) {
	never := func() bool { return false }
	for _, c := range []struct{ lo, hi, mtu, want int }{
		{1200, 1500, 1500, 1500}, // the local MTU passes: one probe
		{1200, 1500, 1400, 1400},
		{1200, 1500, 1201, 1201},
		{1200, 1500, 1200, 1200},
		{1200, 1500, 1499, 1499},
		{1200, 1500, 1100, 0}, // below the floor
		{1200, 9000, 8972, 8972},
		{1500, 1500, 1400, 0},
		{1500, 1200, 1400, 0}, // an empty range
	} {
		n := 0
		got := Search(c.lo, c.hi, func(s int) bool { n++; return s <= c.mtu }, never)
		budget := 2
		if c.hi > c.lo {
			budget += bits.Len(uint(c.hi - c.lo))
		}
		if got != c.want || n > budget {
			t.Errorf("lo %d hi %d path %d: found %d in %d probes; want %d in at most %d", c.lo, c.hi, c.mtu, got, n, c.want, budget)
		}
		if n > MaxSizes(c.lo, c.hi) {
			t.Errorf("lo %d hi %d path %d: %d probes, over MaxSizes %d", c.lo, c.hi, c.mtu, n, MaxSizes(c.lo, c.hi))
		}
	}
	n := 0
	got := Search(1200, 1500, func(s int) bool { return s <= 1400 }, func() bool { n++; return n > 2 })
	if got < 1200 || got > 1400 {
		t.Errorf("stopped search: %d, want a size that passed, 1200 to 1400", got)
	}
}
