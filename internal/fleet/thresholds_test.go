package fleet

import (
	"errors"
	"testing"
)

// TestHealth: a result is the worse of its directions; the down
// direction is judged against its own ideal rate when it has one.
func TestHealth(t *testing.T) {
	th := Thresholds{MinThroughputPct: 90, MaxRTTMs: 50}
	for _, c := range []struct {
		name string
		f    Figures
		want Health
	}{
		{"nothing judged", Figures{Verdict: "pass"}, ""},
		{"up ok", Figures{ThroughputBps: 95e6, IdealBps: 100e6, RTTMs: 10}, HealthOK},
		{"up slow", Figures{ThroughputBps: 80e6, IdealBps: 100e6, RTTMs: 10}, HealthAlert},
		{"down slow", Figures{ThroughputBps: 95e6, IdealBps: 100e6, RTTMs: 10, DownThroughputBps: 50e6}, HealthAlert},
		{"down at its own ideal", Figures{ThroughputBps: 95e6, IdealBps: 100e6, RTTMs: 10, DownThroughputBps: 19e6, DownIdealBps: 20e6}, HealthOK},
		{"rtt high", Figures{RTTMs: 51}, HealthAlert},
	} {
		if got := th.Health(c.f); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	var fe *FieldError
	if err := (Thresholds{MaxLossPct: 101}).Check(); !errors.As(err, &fe) || fe.Field != "thresholds.max_loss_pct" {
		t.Errorf("loss over 100 %%: %v", err)
	}
}
