package kinds

import (
	"bytes"
	"math"
	"os"
	"testing"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/stats"
	"github.com/fullpipe/fullpipe/internal/vocab"
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
		{"rfc6349", fleet.Figures{Verdict: fleet.VerdictFail, RTTMs: 0.112633}},
		{"mtu", fleet.Figures{}},
		{"stamp", fleet.Figures{RTTMs: 0.022108}},
		// up: 1518 B at 8,127.44 frames/s with no loss, the whole line:
		// (1518 + 20) × 8 × 8127.44 = 100 Mbit/s at the line's layer, the
		// line rate its ideal; down, a 2 Mbit/s line with BER 1e-6, read
		// as lossy: no throughput, its loss instead (55 of 30,402).
		{"rfc2544", fleet.Figures{ThroughputBps: 1e8, IdealBps: 1e8, DownLossPct: 55.0 / 30402 * 100}},
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
			// One direction (up): ideal 998.5 Mbit/s, buffer delay 3.88 %
			// over the 0.112633 ms baseline.
			if got.ThroughputBps < 800e6 || got.BufferDelayPct == 0 && got.LossPct == 0 || got.IdealBps != 998484784 ||
				math.Abs(got.RTTLoadedMs-0.112633*1.03877194072785058) > 1e-9 {
				t.Errorf("rfc6349 throughput figures %+v", got)
			}
			if _, ok := got.Down(); ok {
				t.Errorf("rfc6349 of one direction has down figures %+v", got)
			}
			got.ThroughputBps, got.BufferDelayPct, got.LossPct, got.IdealBps, got.RTTLoadedMs = 0, 0, 0, 0, 0
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
	// Bidirectional: up 10.54 Gbit/s, mean smoothed RTT 66 µs, 1,708,070
	// of 1,322,651,795 bytes retransmitted; down 9.41 Gbit/s, 48 µs.
	f := Figures(d)
	if f.ThroughputBps != 10539506242.411184 || f.RTTMs != 0.001 || f.Verdict != "" || f.RTTLoadedMs != 0.066 ||
		math.Abs(f.LossPct-1708070.0/1322651795*100) > 1e-12 {
		t.Errorf("tcp figures %+v: want the up direction's throughput, RTTs and loss", f)
	}
	if f.DownThroughputBps != 9409604621.478945 || f.DownRTTLoadedMs != 0.048 || math.Abs(f.DownLossPct-1032951.0/1179894519*100) > 1e-12 {
		t.Errorf("tcp figures %+v: want the down direction's", f)
	}
}

// TestDirectionFigures: documents made here, of each shape a test's
// directions take.
func TestDirectionFigures(t *testing.T) {
	dir := func(bps float64, meanUs int64, sent, retrans uint64) *result.TCPDirection {
		return &result.TCPDirection{ThroughputBps: bps, RTTMinUs: 1000, RTTMeanUs: meanUs, BytesSent: sent, BytesRetrans: retrans}
	}
	row := func(ideal, actual, eff, bd float64) *result.ThroughputRow {
		return &result.ThroughputRow{IdealBps: ideal, ActualBps: actual, EfficiencyPct: eff, BufferDelayPct: bd}
	}
	rfc := func(rows map[vocab.Direction]*result.ThroughputRow) *result.RFC6349 {
		return &result.RFC6349{RTT: result.Baseline{BaselineMs: 20}, Throughput: rows, Verdict: result.Verdict{Pass: true}}
	}
	for _, c := range []struct {
		name string
		doc  result.Doc
		want fleet.Figures
	}{
		{"tcp up", &result.TCP{Summary: result.TCPSummary{Directions: map[vocab.Direction]*result.TCPDirection{vocab.Up: dir(90e6, 25000, 1000, 10)}}},
			fleet.Figures{ThroughputBps: 90e6, RTTMs: 1, RTTLoadedMs: 25, LossPct: 1}},
		{"tcp reverse: the only direction", &result.TCP{Summary: result.TCPSummary{Directions: map[vocab.Direction]*result.TCPDirection{vocab.Down: dir(80e6, 30000, 0, 0)}}},
			fleet.Figures{ThroughputBps: 80e6, RTTMs: 1, RTTLoadedMs: 30}},
		{"tcp bidir", &result.TCP{Summary: result.TCPSummary{Directions: map[vocab.Direction]*result.TCPDirection{
			vocab.Up: dir(90e6, 25000, 1000, 10), vocab.Down: dir(40e6, 50000, 1000, 20)}}},
			fleet.Figures{ThroughputBps: 90e6, RTTMs: 1, RTTLoadedMs: 25, LossPct: 1, DownThroughputBps: 40e6, DownRTTLoadedMs: 50, DownLossPct: 2}},
		{"tcp, loaded latency probes only", &result.TCP{Summary: result.TCPSummary{TCPDirection: result.TCPDirection{ThroughputBps: 1e6, RTTMinUs: 2000},
			LatencyLoaded: &result.RTTStats{Sent: 3, Received: 3, Delays: stats.Delays{MeanUs: 7500}}}},
			fleet.Figures{ThroughputBps: 1e6, RTTMs: 2, RTTLoadedMs: 7.5}},
		{"rfc6349 up", rfc(map[vocab.Direction]*result.ThroughputRow{vocab.Up: row(100e6, 95e6, 99, 50)}),
			fleet.Figures{ThroughputBps: 95e6, IdealBps: 100e6, RTTMs: 20, RTTLoadedMs: 30, LossPct: 1, BufferDelayPct: 50, Verdict: fleet.VerdictPass}},
		{"rfc6349 both ways, asymmetric", rfc(map[vocab.Direction]*result.ThroughputRow{vocab.Up: row(100e6, 95e6, 100, 10), vocab.Down: row(20e6, 10e6, 97, 200)}),
			fleet.Figures{ThroughputBps: 95e6, IdealBps: 100e6, RTTMs: 20, RTTLoadedMs: 22, BufferDelayPct: 10, Verdict: fleet.VerdictPass,
				DownThroughputBps: 10e6, DownIdealBps: 20e6, DownRTTLoadedMs: 60, DownLossPct: 3, DownBufferDelayPct: 200}},
		{"rfc6349 down only", rfc(map[vocab.Direction]*result.ThroughputRow{vocab.Down: row(20e6, 10e6, 100, 0)}),
			fleet.Figures{ThroughputBps: 10e6, IdealBps: 20e6, RTTMs: 20, RTTLoadedMs: 20, Verdict: fleet.VerdictPass}},
	} {
		got := Figures(c.doc)
		for _, v := range []*float64{&got.RTTLoadedMs, &got.DownRTTLoadedMs, &got.LossPct, &got.DownLossPct} {
			*v = math.Round(*v*1e9) / 1e9
		}
		if got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}
