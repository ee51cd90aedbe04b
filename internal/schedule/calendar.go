package schedule

import (
	"slices"
	"time"
)

// Interval is the half-open span [Start, End): a test booked from Start
// has the path until End, and the next may start at End. An interval
// whose End is not after its Start is empty and overlaps nothing.
type Interval struct {
	Start, End time.Time
}

// Empty reports whether iv holds no instant.
func (iv Interval) Empty() bool { return !iv.End.After(iv.Start) }

// Overlaps reports whether a and b share an instant. Touching intervals
// ([1, 2) and [2, 3)) do not overlap; an empty one overlaps nothing.
func Overlaps(a, b Interval) bool {
	return !a.Empty() && !b.Empty() && a.Start.Before(b.End) && b.Start.Before(a.End)
}

// union is busy's non-empty intervals sorted by start, with those that
// overlap or touch merged: disjoint, with gaps between them. busy itself
// is not changed.
func union(busy []Interval) []Interval {
	var out []Interval
	for _, iv := range busy {
		if !iv.Empty() {
			out = append(out, iv)
		}
	}
	slices.SortFunc(out, func(a, b Interval) int { return a.Start.Compare(b.Start) })
	merged := out[:0]
	for _, iv := range out {
		if n := len(merged); n > 0 && !iv.Start.After(merged[n-1].End) {
			if iv.End.After(merged[n-1].End) {
				merged[n-1].End = iv.End
			}
			continue
		}
		merged = append(merged, iv)
	}
	return merged
}

// FirstFree is the earliest interval of the given length that starts at
// or after notBefore, and before horizon, and overlaps none of busy
// (unsorted; its intervals may overlap each other). It reports false
// when there is none before horizon, or when length is not positive.
func FirstFree(busy []Interval, notBefore time.Time, length time.Duration, horizon time.Time) (Interval, bool) {
	if length <= 0 {
		return Interval{}, false
	}
	start := notBefore
	for _, b := range union(busy) {
		if !b.End.After(start) {
			continue // over before the candidate starts
		}
		if !start.Add(length).After(b.Start) {
			break // the candidate ends by the time b starts: it fits
		}
		start = b.End
	}
	if !start.Before(horizon) {
		return Interval{}, false
	}
	return Interval{Start: start, End: start.Add(length)}, true
}

// NextFree is the earliest instant at or after now that no interval of
// busy holds: now itself, or the end of the busy stretch now is in.
func NextFree(busy []Interval, now time.Time) time.Time {
	for _, b := range union(busy) {
		if b.Start.After(now) {
			break
		}
		if b.End.After(now) {
			now = b.End
		}
	}
	return now
}

// BusyFraction is the share of [from, to) that busy holds, counting
// each instant once however many intervals hold it: 0 (free) to 1. An
// empty span gives 0.
func BusyFraction(busy []Interval, from, to time.Time) float64 {
	if !to.After(from) {
		return 0
	}
	var held time.Duration
	for _, b := range union(busy) {
		s, e := latest(b.Start, from), earliest(b.End, to)
		if e.After(s) {
			held += e.Sub(s)
		}
	}
	return float64(held) / float64(to.Sub(from))
}

// latest is the later of a and b, earliest the earlier.
func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
