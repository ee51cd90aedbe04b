package flow

import (
	"testing"
	"time"
)

// TestLatencyRepliesNeverOutnumberProbes: a duplicated reply, a reply
// numbered beyond the stream's probes and one whose mirrored timestamp
// gives a round trip of 0 or less are no round trips; the rest are
// summarised in µs.
func TestLatencyRepliesNeverOutnumberProbes(t *testing.T) {
	l := NewLatency(3)
	l.Add(0, 100*time.Microsecond)
	l.Add(0, 900*time.Microsecond) // duplicate
	l.Add(1, 300*time.Microsecond)
	l.Add(3, 5*time.Millisecond) // beyond the 3 probes
	l.Add(2, -time.Millisecond)  // not this sender's timestamp
	l.Add(2, 0)
	s := l.Summary(3)
	if s.Replies != 2 || s.MinUs != 100 || s.MaxUs != 300 || s.MeanUs != 200 {
		t.Fatalf("replies %d, min %v max %v mean %v µs; want 2, 100, 300, 200", s.Replies, s.MinUs, s.MaxUs, s.MeanUs)
	}
	if s.IPDVUs != 200 { // |300 − 100| between probes 0 and 1
		t.Errorf("IPDV %v µs, want 200", s.IPDVUs)
	}
}
