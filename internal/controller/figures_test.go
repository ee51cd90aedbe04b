package controller

import "testing"

// TestVerdictLabel: the metrics' verdict label is a bounded set, with
// the single-ended verdicts in it (they were "other" before).
func TestVerdictLabel(t *testing.T) {
	for v, want := range map[string]string{"pass": "pass", "clean": "clean", "policer": "policer", "rate-limited": "rate-limited", "silent": "silent",
		"loss": "loss", "capacity": "capacity", "a new word": "other", "": "other"} {
		if got := verdictLabel(v); got != want {
			t.Errorf("verdictLabel(%q) = %q, want %q", v, got, want)
		}
	}
}
