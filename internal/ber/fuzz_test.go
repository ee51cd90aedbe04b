package ber

import (
	"math"
	"testing"
)

// FuzzFit: any counts of three sizes give an answer or an error, never a
// panic, a NaN, or an estimate outside its interval or [0, 1].
func FuzzFit(f *testing.F) {
	f.Add(uint64(178571), uint64(69), uint64(28195), uint64(112), uint64(9752), uint64(99))
	f.Add(uint64(10), uint64(10), uint64(10), uint64(0), uint64(10), uint64(5))
	f.Add(uint64(1e15), uint64(1), uint64(1e15), uint64(0), uint64(1e15), uint64(1e15-1))
	f.Add(uint64(1), uint64(0), uint64(1), uint64(1), uint64(1), uint64(0))
	f.Fuzz(func(t *testing.T, n1, k1, n2, k2, n3, k3 uint64) {
		pts := []Point{{64, n1, n1 - min(k1, n1)}, {512, n2, n2 - min(k2, n2)}, {1518, n3, n3 - min(k3, n3)}}
		e, err := Fit(pts, FrameBits)
		if err != nil {
			return
		}
		for _, v := range []float64{e.BER, e.BERLow, e.BERHigh, e.Q, e.QLow, e.QHigh, e.Deviance, e.FitP} {
			if math.IsNaN(v) || v < 0 || v > 1 && v != e.Deviance {
				t.Fatalf("%v: %+v", pts, e)
			}
		}
		if e.Verdict != AllLost && !(e.BERLow <= e.BER && e.BER <= e.BERHigh && e.QLow <= e.Q && e.Q <= e.QHigh) {
			t.Fatalf("%v: estimate outside its interval: %+v", pts, e)
		}
	})
}
