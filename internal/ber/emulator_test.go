package ber

import (
	"math/rand/v2"
	"testing"

	"github.com/fullpipe/fullpipe/internal/frame"
	"github.com/fullpipe/fullpipe/internal/link"
)

// emulate sends, per RFC 2544 size, the frames a 2 Mbit/s line carries in
// 60 s through the lab emulator's own stages, as internal/lab chains them
// (random loss, then bit errors, each on its seeded stream): each frame's
// IP packet (the frame less 18 bytes) is what the stages see.
func emulate(seed uint64, ber, q float64) []Point {
	loss := link.Loss(q, rand.New(rand.NewPCG(seed, 1)))
	bits := link.BER(ber, rand.New(rand.NewPCG(seed, 2)))
	drop := func(*link.Packet, link.Cause) {}
	var pts []Point
	for _, l := range frame.RFC2544Sizes() {
		n := lineFrames(2e6, 60, l)
		data := make([]byte, l-frame.EthernetHeaderFCS)
		var got uint64
		for range n {
			loss.Push(&link.Packet{Data: data}, drop)
			if _, ok := loss.Next(); !ok {
				continue
			}
			bits.Push(loss.Pull(), drop)
			if _, ok := bits.Next(); ok {
				bits.Pull()
				got++
			}
		}
		pts = append(pts, Point{FrameBytes: l, Sent: n, Received: got})
	}
	return pts
}

// TestThroughTheEmulator: the lab's truth (link.BER, link.Loss) read back
// with EthernetIPBits: BER within ×1.5 in every one of 20 seeded runs
// (the law table's 5th–95th percentiles are 0.92–1.10), the verdict bit
// errors in at least 18.
func TestThroughTheEmulator(t *testing.T) {
	for _, c := range []struct{ ber, q float64 }{{1e-6, 0}, {1e-6, 1e-3}} {
		right, covered := 0, 0
		for seed := uint64(1); seed <= 20; seed++ {
			e, err := Fit(emulate(seed, c.ber, c.q), EthernetIPBits)
			if err != nil {
				t.Fatal(err)
			}
			if !within(e.BER, c.ber, 1.5) {
				t.Errorf("BER %g q %g, seed %d: read %+v", c.ber, c.q, seed, e)
			}
			if e.Verdict == BitErrors {
				right++
			}
			if e.BERLow <= c.ber && c.ber <= e.BERHigh {
				covered++
			}
		}
		t.Logf("BER %g q %g through the emulator: bit errors in %d of 20, interval covers in %d", c.ber, c.q, right, covered)
		if right < 18 {
			t.Errorf("BER %g q %g: bit errors in %d of 20 runs, want ≥ 18", c.ber, c.q, right)
		}
	}
}
