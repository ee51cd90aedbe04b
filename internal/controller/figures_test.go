package controller

import (
	"bytes"
	"math"
	"os"
	"testing"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/result"
)

// TestFigures: the headline figures of the result package's own test
// documents, one per kind that has them.
func TestFigures(t *testing.T) {
	cases := []struct {
		file string
		want fleet.Figures
	}{
		{"rtt", fleet.Figures{RTTMs: 0.037653}},
		{"udp", fleet.Figures{ThroughputBps: 10002590.507141722}},
		{"trains", fleet.Figures{Verdict: "clean"}},
		{"rfc6349", fleet.Figures{Verdict: VerdictFail, RTTMs: 0.112633}},
		{"mtu", fleet.Figures{}},
	}
	for _, c := range cases {
		b, err := os.ReadFile("../result/testdata/" + c.file + ".json")
		if err != nil {
			t.Fatal(err)
		}
		d, err := result.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		got := Figures(d)
		if c.file == "rfc6349" {
			if got.ThroughputBps < 800e6 || got.BufferDelayPct == 0 && got.LossPct == 0 {
				t.Errorf("rfc6349 throughput figures %+v", got)
			}
			got.ThroughputBps, got.BufferDelayPct, got.LossPct = 0, 0, 0
		}
		if math.Abs(got.RTTMs-c.want.RTTMs) < 1e-9 {
			got.RTTMs = c.want.RTTMs
		}
		if got != c.want {
			t.Errorf("%s: figures %+v, want %+v", c.file, got, c.want)
		}
	}
	tcp, _ := os.ReadFile("../result/testdata/tcp.json")
	d, _ := result.Decode(bytes.NewReader(tcp))
	if f := Figures(d); f.ThroughputBps <= 0 || f.RTTMs <= 0 || f.Verdict != "" {
		t.Errorf("tcp figures %+v: want the up direction's throughput and RTT", f)
	}
}

// TestVerdictLabel: the metrics' verdict label is a bounded set.
func TestVerdictLabel(t *testing.T) {
	for v, want := range map[string]string{"pass": "pass", "clean": "clean", "policer": "policer", "a new word": "other", "": "other"} {
		if got := verdictLabel(v); got != want {
			t.Errorf("verdictLabel(%q) = %q, want %q", v, got, want)
		}
	}
}
