package result

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/jsondoc"
)

func TestEfficiencyRFC6349(t *testing.T) {
	// RFC 6349 §4.2.1: 100,000 original bytes and 2,000 retransmitted,
	// so 102,000 transmitted: (102,000 − 2,000) / 102,000 = 98.0392 %
	// (the RFC prints 98.03 %).
	if got := Efficiency(102_000, 2_000); math.Abs(got-98.0392157) > 1e-6 {
		t.Fatalf("Efficiency = %v", got)
	}
	if Efficiency(0, 0) != 0 || Efficiency(1000, 0) != 100 {
		t.Fatal("edge cases")
	}
	if Efficiency(10, 20) != 0 { // more retransmitted than sent cannot go negative
		t.Fatal("negative efficiency")
	}
}

func TestRTTStats(t *testing.T) {
	s := NewRTTStats(4, []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond})
	if s.Received != 3 || s.LossPct != 25 || s.MinUs != 1000 || s.MaxUs != 3000 || s.MeanUs != 2000 || s.P50Us != 2000 {
		t.Fatalf("%+v", s)
	}
}

// TestJSONDocumented: every JSON key of the result model is in docs/json.md.
func TestJSONDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range jsondoc.Missing(string(doc), false, TCP{}, UDP{}, RTT{}) {
		t.Errorf("%s is not documented in docs/json.md", m)
	}
}
