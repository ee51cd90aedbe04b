package schedule

import (
	"math/rand/v2"
	"time"
)

// Pair is one test's two agents: Source runs the test (the client),
// against Dest's responder.
type Pair struct {
	Source, Dest string
}

// Pairs is every agent of from against every agent of to, and with both
// also every agent of to against every agent of from: a mesh is
// Pairs(all, all, false). No agent is paired with itself and no pair
// comes twice (an agent named twice, or in both groups, counts once).
// The order is stable: from's order, then to's within it; with both, the
// reverse pairs follow in to's order, then from's.
func Pairs(from, to []string, both bool) []Pair {
	var out []Pair
	seen := map[Pair]bool{}
	add := func(srcs, dsts []string) {
		for _, s := range srcs {
			for _, d := range dsts {
				if p := (Pair{s, d}); s != d && !seen[p] {
					seen[p] = true
					out = append(out, p)
				}
			}
		}
	}
	add(from, to)
	if both {
		add(to, from)
	}
	return out
}

// Slip is t delayed by a uniformly random amount in [0, max), drawn from
// r, so that tests of the same period do not all start on the same
// second (max ≤ 0: t as is). r is the caller's, seeded as it sees fit;
// it must not be nil when max > 0.
func Slip(t time.Time, max time.Duration, r *rand.Rand) time.Time {
	if max <= 0 {
		return t
	}
	return t.Add(time.Duration(r.Int64N(int64(max))))
}
