package result

import (
	"testing"
	"time"
)

// TestRateSeries: 100 ms windows every 50 ms over 10 ms bins; the values
// are the bins' sums × 8 / 0.1 s, computed by hand.
func TestRateSeries(t *testing.T) {
	bins := make([]int64, 24)
	for i := range bins {
		bins[i] = int64(i + 1) // bytes
	}
	got := RateSeries(bins, 10*time.Millisecond)
	want := []RatePoint{{0.1, 55 * 80}, {0.15, 105 * 80}, {0.2, 155 * 80}} // 1..10, 6..15, 11..20; the 25th bin is missing for 0.25
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("point %d: %v, want %v", i, got[i], want[i])
		}
	}
	if RateSeries(bins, 30*time.Millisecond) != nil {
		t.Error("a bin that does not divide the window must give no series")
	}
}
