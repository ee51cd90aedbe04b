// Package pathmtu is the path MTU search's strategy, without sockets:
// which packet sizes to try, and what the answers add up to
// (packetization-layer PMTU discovery, RFC 4821 / RFC 8899 style).
package pathmtu

import "math/bits"

// Search finds the largest size in [lo, hi] that passes: hi first (the
// common case: the path carries the local MTU), then lo (the floor),
// then a binary search between them. passes probes one size (the probe
// layer retries it as it sees fit); stopped ends the search early with
// the largest size known to pass. It returns 0 when not even lo passes.
// It probes at most MaxSizes(lo, hi) sizes.
func Search(lo, hi int, passes func(size int) bool, stopped func() bool) int {
	if hi < lo {
		return 0
	}
	if passes(hi) {
		return hi
	}
	if lo == hi || !passes(lo) {
		return 0 // below the search floor: none found
	}
	a, b := lo, hi // a passes, b fails
	for b-a > 1 && !stopped() {
		m := (a + b) / 2
		if passes(m) {
			a = m
		} else {
			b = m
		}
	}
	return a
}

// MaxSizes is the most sizes Search probes in [lo, hi]: hi, lo, then
// the binary search's ⌈log2(hi − lo)⌉ halvings (each size once, however
// the path answers).
func MaxSizes(lo, hi int) int {
	switch {
	case hi < lo:
		return 0
	case hi == lo:
		return 1
	}
	return 2 + bits.Len(uint(hi-lo))
}

// Floor is the smallest IP packet a search starts from when not told:
// RFC 8899's BASE_PLPMTU, 1200 bytes, or IPv6's minimum link MTU, 1280.
func Floor(ipv6 bool) int {
	if ipv6 {
		return 1280
	}
	return 1200
}
