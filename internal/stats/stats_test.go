package stats

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	v := make([]float64, 100)
	for i := range v {
		v[i] = float64(100 - i) // 100..1, unsorted
	}
	s := Summarize(v)
	if s.Count != 100 || s.Min != 1 || s.Max != 100 || s.Mean != 50.5 {
		t.Fatalf("%+v", s)
	}
	if s.Median != 50 || s.P90 != 90 || s.P99 != 99 {
		t.Fatalf("median %v p90 %v p99 %v (nearest rank: 50, 90, 99)", s.Median, s.P90, s.P99)
	}
	// population stddev of 1..100 = sqrt((100²−1)/12)
	if want := math.Sqrt((100*100 - 1) / 12.0); math.Abs(s.StdDev-want) > 1e-9 {
		t.Fatalf("stddev %v want %v", s.StdDev, want)
	}
	if v[0] != 100 {
		t.Fatal("Summarize modified its input")
	}
	if (Summarize(nil) != Summary{}) {
		t.Fatal("empty summary not zero")
	}
}

// TestMedians: the one median is an observed value (the lower middle
// of an even count), the same as the 50th nearest-rank percentile; the
// trains' estimator takes the middle of the middle two.
func TestMedians(t *testing.T) {
	for _, tc := range []struct {
		name           string
		v              []float64
		median, interp float64
	}{
		{"none", nil, 0, 0},
		{"one", []float64{7}, 7, 7},
		{"two", []float64{105, 95}, 95, 100},
		{"odd", []float64{3, 1, 2}, 2, 2},
		{"two modes", []float64{9, 1, 9, 1}, 1, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.v)
			if got := Median(tc.v); got != tc.median {
				t.Errorf("Median = %v, want %v", got, tc.median)
			}
			if got := Percentile(slices.Sorted(slices.Values(tc.v)), 50); got != Median(tc.v) {
				t.Errorf("Percentile 50 = %v, Median %v: want the same", got, Median(tc.v))
			}
			if got := InterpolatedMedian(tc.v); got != tc.interp {
				t.Errorf("InterpolatedMedian = %v, want %v", got, tc.interp)
			}
			if !slices.Equal(in, tc.v) {
				t.Errorf("input changed to %v", tc.v)
			}
		})
	}
}

// TestNewDelays: samples in ns become µs with ns resolution; the
// percentiles are nearest-rank (observed values), p50 the Median.
func TestNewDelays(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- { // 100..1 µs and 1 ns, unsorted
		d = append(d, time.Duration(i)*time.Microsecond+1)
	}
	got := NewDelays(d)
	want := Delays{Count: 100, MinUs: 1.001, MeanUs: 50.501, P50Us: 50.001, P90Us: 90.001, P99Us: 99.001, MaxUs: 100.001,
		StdDevUs: math.Sqrt((100*100 - 1) / 12.0)}
	if got.Count != want.Count || got.MinUs != want.MinUs || got.P50Us != want.P50Us || got.P90Us != want.P90Us ||
		got.P99Us != want.P99Us || got.MaxUs != want.MaxUs || math.Abs(got.MeanUs-want.MeanUs) > 1e-9 || math.Abs(got.StdDevUs-want.StdDevUs) > 1e-9 {
		t.Errorf("NewDelays = %+v, want %+v", got, want)
	}
	if d[0] != 100*time.Microsecond+1 {
		t.Error("NewDelays modified its input")
	}
	if (NewDelays(nil) != Delays{}) {
		t.Error("no samples: want the zero Delays")
	}
}

func TestJitterConstantDelay(t *testing.T) {
	var j Jitter
	for i := range 100 {
		s := time.Duration(i) * time.Millisecond
		j.Add(s, s+40*time.Millisecond)
	}
	if j.Value() != 0 {
		t.Fatalf("constant delay gave jitter %v", j.Value())
	}
}

func TestJitterConverges(t *testing.T) {
	// Transit alternates 10 ms and 12 ms: |D| = 2 ms every packet, so J
	// converges to 2 ms: after n packets J = 2 ms × (1 − (15/16)^(n−1)).
	var j Jitter
	n := 200
	for i := range n {
		s := time.Duration(i) * 20 * time.Millisecond
		d := 10 * time.Millisecond
		if i%2 == 1 {
			d = 12 * time.Millisecond
		}
		j.Add(s, s+d)
	}
	want := 2e6 * (1 - math.Pow(15.0/16, float64(n-1)))
	if math.Abs(float64(j.Value())-want) > 1 {
		t.Fatalf("jitter %v want %v ns", j.Value(), want)
	}
}

func TestSeqTracker(t *testing.T) {
	tr := NewSeqTracker()
	for _, s := range []uint64{0, 1, 3, 2, 2, 5, 6, 4} {
		tr.Add(s)
	}
	r := tr.Result()
	want := SeqResult{Received: 8, Unique: 7, Duplicates: 1, Reordered: 2, Lost: 0, MaxSeq: 6}
	if r != want {
		t.Fatalf("got %+v want %+v", r, want)
	}
	r = tr.ResultWithSent(10)
	if r.Lost != 3 {
		t.Fatalf("lost with sent=10: %d, want 3", r.Lost)
	}
	tr2 := NewSeqTracker()
	for _, s := range []uint64{0, 2, 4, 100000} {
		tr2.Add(s)
	}
	if r := tr2.Result(); r.Lost != 100001-4 || r.Reordered != 0 {
		t.Fatalf("gaps: %+v", r)
	}
}
