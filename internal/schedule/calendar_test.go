package schedule

import (
	"flag"
	"math/rand/v2"
	"testing"
	"time"
)

// seed seeds the property tests: go test ./internal/schedule -seed N
// replays or explores.
var seed = flag.Uint64("seed", 1, "seed of the property tests' random cases")

// t0 is the tests' origin; at(s) is s seconds after it.
var t0 = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func iv(s, e float64) Interval { return Interval{at(s), at(e)} }

func TestOverlaps(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b Interval
		want bool
	}{
		{"apart", iv(0, 1), iv(2, 3), false},
		{"touching", iv(0, 2), iv(2, 3), false},
		{"touching the other way", iv(2, 3), iv(0, 2), false},
		{"sharing a second", iv(0, 2), iv(1, 3), true},
		{"inside", iv(0, 10), iv(4, 5), true},
		{"equal", iv(1, 2), iv(1, 2), true},
		{"empty inside", iv(0, 10), iv(4, 4), false},
		{"reversed inside", iv(0, 10), iv(5, 4), false},
	} {
		if got := Overlaps(c.a, c.b); got != c.want {
			t.Errorf("%s: Overlaps(%v, %v) = %v, want %v", c.name, c.a, c.b, got, c.want)
		}
	}
}

func TestFirstFree(t *testing.T) {
	for _, c := range []struct {
		name              string
		busy              []Interval
		notBefore, length float64
		horizon           float64
		want              float64 // start; -1: none
	}{
		{"empty calendar", nil, 5, 10, 100, 5},
		{"before the first booking", []Interval{iv(20, 30)}, 5, 10, 100, 5},
		{"exactly fills the gap", []Interval{iv(0, 5), iv(15, 20)}, 0, 10, 100, 5},
		{"gap too short", []Interval{iv(0, 5), iv(14, 20)}, 0, 10, 100, 20},
		{"unsorted and overlapping", []Interval{iv(30, 40), iv(0, 12), iv(10, 25), iv(24, 31)}, 3, 5, 100, 40},
		{"empty bookings ignored", []Interval{iv(5, 5), iv(9, 2)}, 3, 5, 100, 3},
		{"inside a booking", []Interval{iv(0, 50)}, 10, 1, 100, 50},
		{"starts at the horizon: none", []Interval{iv(0, 50)}, 10, 1, 50, -1},
		{"just before the horizon", []Interval{iv(0, 50)}, 10, 1, 50.5, 50},
		{"may end past the horizon", nil, 0, 1000, 1, 0},
		{"zero length: none", nil, 0, 0, 100, -1},
	} {
		got, ok := FirstFree(c.busy, at(c.notBefore), time.Duration(c.length*float64(time.Second)), at(c.horizon))
		switch {
		case c.want < 0 && ok:
			t.Errorf("%s: got %v, want none", c.name, got)
		case c.want >= 0 && (!ok || !got.Start.Equal(at(c.want)) || got.End.Sub(got.Start) != time.Duration(c.length*float64(time.Second))):
			t.Errorf("%s: got %v (%v), want a %vs interval from %vs", c.name, got, ok, c.length, c.want)
		}
	}
}

func TestNextFreeAndBusyFraction(t *testing.T) {
	busy := []Interval{iv(10, 20), iv(15, 30), iv(30, 35), iv(50, 60), iv(70, 70)}
	for _, c := range []struct{ now, want float64 }{{0, 0}, {10, 35}, {29.5, 35}, {35, 35}, {40, 40}, {55, 60}, {70, 70}} {
		if got := NextFree(busy, at(c.now)); !got.Equal(at(c.want)) {
			t.Errorf("NextFree at %vs = %v, want %vs", c.now, got.Sub(t0), c.want)
		}
	}
	for _, c := range []struct{ from, to, want float64 }{
		{0, 100, 0.35}, // 10-35 and 50-60, the overlap counted once
		{10, 35, 1},
		{0, 10, 0},
		{30, 55, 10.0 / 25},
		{55, 55, 0},
		{60, 50, 0},
	} {
		if got := BusyFraction(busy, at(c.from), at(c.to)); got < c.want-1e-12 || got > c.want+1e-12 {
			t.Errorf("BusyFraction %vs to %vs = %v, want %v", c.from, c.to, got, c.want)
		}
	}
}

// TestCalendarProperties checks FirstFree, NextFree and BusyFraction
// against a brute-force scan of a grid of half seconds, on random small
// calendars whose every time lies on that grid (so the scan is exact):
// FirstFree's interval overlaps no booking, and no earlier start on or
// after notBefore would do.
func TestCalendarProperties(t *testing.T) {
	const cases, step = 100_000, 0.5
	rng := rand.New(rand.NewPCG(*seed, 1))
	grid := func(lo, hi int) float64 { return float64(lo+rng.IntN(hi-lo+1)) * step } // lo..hi steps
	start := time.Now()
	for i := range cases {
		busy := make([]Interval, rng.IntN(7))
		for j := range busy {
			s := grid(0, 60)
			busy[j] = iv(s, s+grid(-4, 24)) // some empty, some reversed
		}
		notBefore, length, horizon := grid(0, 70), grid(1, 20), grid(0, 90)
		free := func(s float64) bool {
			for _, b := range busy {
				if Overlaps(b, iv(s, s+length)) {
					return false
				}
			}
			return true
		}
		want := -1.0
		for s := notBefore; s < horizon; s += step {
			if free(s) {
				want = s
				break
			}
		}
		got, ok := FirstFree(busy, at(notBefore), time.Duration(length*float64(time.Second)), at(horizon))
		if ok != (want >= 0) || ok && (!got.Start.Equal(at(want)) || !got.End.Equal(at(want+length))) {
			t.Fatalf("case %d (seed %d): FirstFree(%v, %vs, %vs, %vs) = %v %v, want start %vs", i, *seed, busy, notBefore, length, horizon, got, ok, want)
		}
		checkNextFree(t, busy, grid(0, 100), step)
		checkBusyFraction(t, busy, grid(0, 100), grid(0, 100), step)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("%d cases took %v, want well under 5s", cases, d)
	}
}

// held reports whether any non-empty booking holds the instant s.
func held(busy []Interval, s float64) bool {
	for _, b := range busy {
		if !b.Empty() && !at(s).Before(b.Start) && at(s).Before(b.End) {
			return true
		}
	}
	return false
}

func checkNextFree(t *testing.T, busy []Interval, now, step float64) {
	t.Helper()
	want := now
	for held(busy, want) {
		want += step
	}
	if got := NextFree(busy, at(now)); !got.Equal(at(want)) {
		t.Fatalf("seed %d: NextFree(%v, %vs) = %v, want %vs", *seed, busy, now, got.Sub(t0), want)
	}
}

func checkBusyFraction(t *testing.T, busy []Interval, from, to, step float64) {
	t.Helper()
	n, k := 0, 0
	for s := from; s < to; s += step {
		n++
		if held(busy, s) {
			k++
		}
	}
	want := 0.0
	if n > 0 {
		want = float64(k) / float64(n)
	}
	if got := BusyFraction(busy, at(from), at(to)); got < want-1e-9 || got > want+1e-9 {
		t.Fatalf("seed %d: BusyFraction(%v, %vs, %vs) = %v, want %v", *seed, busy, from, to, got, want)
	}
}
