package rfc6349

import (
	"slices"
	"strings"
	"testing"

	"github.com/fullpipe/fullpipe/internal/train"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// Vector 37 and the notes' §7 table: BB 100 Mbit/s, base RTT 10 ms (BDP
// 125,000 B), queue 62,500 B.
func TestModelRegions(t *testing.T) {
	const bb, q = 100e6, 62_500
	rtt := ms(10)
	cases := []struct {
		w      float64
		tput   float64
		bdPct  float64
		region vocab.Region
	}{
		{31_250, 25e6, 0, vocab.Linear},
		{62_500, 50e6, 0, vocab.Linear},
		{125_000, 100e6, 0, vocab.Saturation},
		{187_500, 100e6, 50, vocab.Saturation}, // RTT 15 ms
		{250_000, 100e6, 50, vocab.Overflow},   // capped at BDP + queue
	}
	for _, c := range cases {
		tput, _, bd, r := Model(bb, rtt, c.w, q)
		near(t, "tput", tput, c.tput, 1)
		near(t, "buffer delay", bd, c.bdPct, 1e-6)
		if r != c.region {
			t.Errorf("W %v: region %s, want %s", c.w, r, c.region)
		}
	}
}

func TestClassifyShaping(t *testing.T) {
	cases := []struct {
		e    ShapingEvidence
		want vocab.Shaping
	}{
		{ShapingEvidence{LossPct: 3, BufferDelayPct: 2, PerConnBps: []float64{60e6, 20e6, 10e6, 10e6}}, vocab.Policed},
		{ShapingEvidence{LossPct: 3, BufferDelayPct: 2, TotalBps: 80e6, CIRBps: 100e6, PerConnBps: []float64{40e6, 40e6}}, vocab.Policed},
		// Loss, no queueing, and far below the CIR: a small buffer, not a policer.
		{ShapingEvidence{LossPct: 2.8, BufferDelayPct: 3, TotalBps: 19e6, CIRBps: 300e6, PerConnBps: []float64{5e6, 5e6, 5e6, 4e6}}, vocab.None},
		{ShapingEvidence{LossPct: 0.01, BufferDelayPct: 180, PerConnBps: []float64{25e6, 25e6, 24e6, 26e6}}, vocab.Shaped},
		{ShapingEvidence{LossPct: 0, BufferDelayPct: 3, PerConnBps: []float64{25e6, 25e6}}, vocab.None},
		{ShapingEvidence{LossPct: 0.01, BufferDelayPct: 300, TotalBps: 940e6, CIRBps: 100e6, PerConnBps: []float64{235e6, 235e6, 235e6, 235e6}}, vocab.None},
	}
	for _, c := range cases {
		if got, why := ClassifyShaping(c.e); got != c.want || why == "" {
			t.Errorf("%+v: %s (%s), want %s", c.e, got, why, c.want)
		}
	}
	near(t, "spread", RateSpreadPct([]float64{90, 110}), 10, 1e-12)
	near(t, "no spread", RateSpreadPct([]float64{5, 5, 5}), 0, 1e-12)
	near(t, "one rate", RateSpreadPct([]float64{5}), 0, 1e-12)
	_, why := ClassifyShaping(ShapingEvidence{LossPct: 3, BufferDelayPct: 2, PerConnBps: []float64{40e6, 40e6}, RateSpreadPct: 14.1})
	if !strings.Contains(why, "rate spread 14.1 %") {
		t.Errorf("the spread is not in the evidence: %s", why)
	}
	near(t, "fair", Fairness([]float64{1, 1, 1, 1}), 1, 1e-12)
	near(t, "one takes all", Fairness([]float64{4, 0, 0, 0}), 0.25, 1e-12)
}

func TestDiagnose(t *testing.T) {
	// Scenario 1: a 64 KiB host window on 100 Mbit/s, 20 ms.
	f := Diagnose(Evidence{BBBps: 100e6, RTT: ms(20), MaxWindowBytes: 65536, IdealBps: 94e6, ActualBps: 25e6, EfficiencyPct: 100}, DefaultThresholds)
	if len(f) == 0 || f[0].Cause != "window" || !strings.Contains(f[0].Detail, "250000 B") || !strings.Contains(f[0].Detail, "4 connections") {
		t.Fatalf("window case: %+v", f)
	}
	// Scenario 2: loss at full window with little queueing, no policer,
	// a clean line.
	f = Diagnose(Evidence{BBBps: 300e6, RTT: ms(50), IdealBps: 282e6, ActualBps: 95e6, EfficiencyPct: 99.2, BufferDelayPct: 4, Shaping: vocab.None}, DefaultThresholds)
	if len(f) != 1 || f[0].Cause != "buffer" {
		t.Fatalf("buffer case: %+v", f)
	}
	// The same shortfall with loss on a smooth UDP stream: the line.
	f = Diagnose(Evidence{BBBps: 2e6, RTT: ms(100), IdealBps: 1.8e6, ActualBps: 0.9e6, EfficiencyPct: 98, BufferDelayPct: 4, LineLossPct: 1.2}, DefaultThresholds)
	if len(f) != 1 || f[0].Cause != "loss" {
		t.Fatalf("lossy line case: %+v", f)
	}
	// A black hole.
	f = Diagnose(Evidence{BBBps: 100e6, RTT: ms(20), IdealBps: 94e6, ActualBps: 94e6, EfficiencyPct: 100, MTUUp: 1400, LocalMTU: 1500}, DefaultThresholds)
	if len(f) != 1 || f[0].Cause != "mtu" || !strings.Contains(f[0].Detail, "black hole") {
		t.Fatalf("mtu case: %+v", f)
	}
	// A clean path: nothing to say.
	if f := Diagnose(Evidence{BBBps: 100e6, RTT: ms(20), IdealBps: 94e6, ActualBps: 93e6, EfficiencyPct: 100, BufferDelayPct: 3}, DefaultThresholds); len(f) != 0 {
		t.Fatalf("clean path diagnosed: %+v", f)
	}
}

func TestPass(t *testing.T) {
	if ok, _ := Pass(94e6, 90e6, 99.5, DefaultThresholds); !ok {
		t.Error("95.7 % and 99.5 % should pass")
	}
	if ok, why := Pass(94e6, 80e6, 100, DefaultThresholds); ok || !strings.Contains(why, "85.1 %") {
		t.Errorf("85 %% passed: %s", why)
	}
	if ok, _ := Pass(94e6, 94e6, 98, DefaultThresholds); ok {
		t.Error("98 % efficiency passed")
	}
}

// TestTrainsDecide: when packet trains named the limit, it decides the
// shaping verdict and the buffer finding, whatever TCP's loss and delay
// suggest. The misread case: a 60 Mbit/s policer with a 30 kB
// bucket gave TCP loss without queueing at well under half the CIR,
// which the TCP rule alone calls "a queue too small for TCP's bursts".
func TestTrainsDecide(t *testing.T) {
	bdp := BDPBytes(60e6, ms(20)) // 150,000 B
	tcp := ShapingEvidence{LossPct: 2, BufferDelayPct: 3, PerConnBps: []float64{10e6, 12e6}, TotalBps: 22e6, CIRBps: 60e6, RateSpreadPct: -1, BDPBytes: bdp}
	if v, _ := ClassifyShaping(tcp); v != vocab.None {
		t.Fatalf("without trains the TCP rule gives %s; this test expects the misread vocab.None", v)
	}
	policer := &train.Verdict{Kind: train.Policer, RateBps: train.Estimate{Value: 60.3e6, Err: 1e6}, BucketBytes: train.Estimate{Value: 30_400, Err: 600}, Why: "w"}
	smallQ := &train.Verdict{Kind: train.Queue, RateBps: train.Estimate{Value: 60e6, Err: 1e5}, QueueBytes: train.Estimate{Value: 20_000, Err: 900}, Why: "w"}
	bigQ := &train.Verdict{Kind: train.Queue, RateBps: train.Estimate{Value: 60e6, Err: 1e5}, QueueBytes: train.Estimate{Value: 200_000, Err: 900}, Why: "w"}
	clean := &train.Verdict{Kind: train.Clean, Why: "w"}
	for _, c := range []struct {
		name   string
		trains *train.Verdict
		want   vocab.Shaping
		words  string
		buffer bool
	}{
		{"policer", policer, vocab.Policed, "shape to 60.3 Mbit/s at your CPE", false},
		{"small queue", smallQ, vocab.Shaped, "too small for TCP's bursts", true},
		{"queue of a BDP", bigQ, vocab.Shaped, "holds the rate", false},
		{"clean", clean, vocab.None, "no limit below", true}, // no train verdict on the buffer: TCP's rule applies
	} {
		t.Run(c.name, func(t *testing.T) {
			e := tcp
			e.Trains = c.trains
			v, why := ClassifyShaping(e)
			if v != c.want || !strings.Contains(why, c.words) {
				t.Errorf("got %s: %q; want %s saying %q", v, why, c.want, c.words)
			}
			fs := Diagnose(Evidence{BBBps: 60e6, RTT: ms(20), IdealBps: 56e6, ActualBps: 22e6, EfficiencyPct: 98, BufferDelayPct: 3, Shaping: v, ShapingDetail: why, Trains: c.trains}, DefaultThresholds)
			var causes []vocab.Cause
			for _, f := range fs {
				causes = append(causes, f.Cause)
			}
			if got := slices.Contains(causes, vocab.CauseBuffer); got != c.buffer {
				t.Errorf("causes %v: buffer named %v, want %v", causes, got, c.buffer)
			}
			if got := slices.Contains(causes, vocab.CausePolicer); got != (c.want == vocab.Policed) {
				t.Errorf("causes %v: policer named %v, want %v", causes, got, c.want == vocab.Policed)
			}
		})
	}
	// The paced quarter-CIR stream lost 0.27 % on the policed path (its
	// sender's bursts overflowed the 30 kB bucket): with the trains naming
	// the policer that is not a lossy line; without them it would be.
	for _, c := range []struct {
		trains *train.Verdict
		loss   bool
	}{{policer, false}, {nil, true}} {
		fs := Diagnose(Evidence{BBBps: 60e6, RTT: ms(20), IdealBps: 56e6, ActualBps: 22e6, EfficiencyPct: 98, LineLossPct: 0.27, Trains: c.trains}, DefaultThresholds)
		named := slices.ContainsFunc(fs, func(f Finding) bool { return f.Cause == "loss" })
		if named != c.loss {
			t.Errorf("trains %v: lossy line named %v, want %v (%+v)", c.trains != nil, named, c.loss, fs)
		}
	}
}

// TestUndecidedNamesNoCause: the tiny bucket (120 Mbit/s, 15 kB,
// 10 ms) when the trains could not tell it from a lossy line. TCP's
// evidence alone (loss, no queueing, a shortfall) would name a buffer
// too small, and the quarter-CIR stream's loss a lossy line: both
// wrong for a policer. The verdict says it cannot tell, in words, and
// the diagnosis names no buffer, policer or line loss.
func TestUndecidedNamesNoCause(t *testing.T) {
	bdp := BDPBytes(120e6, ms(10))
	tcp := ShapingEvidence{LossPct: 1.5, BufferDelayPct: 2, PerConnBps: []float64{20e6, 25e6}, TotalBps: 45e6, CIRBps: 120e6, RateSpreadPct: -1, BDPBytes: bdp}
	e := tcp
	e.Trains = &train.Verdict{Kind: train.Undecided, Why: "trains lost 142 of 240 packets"}
	v, why := ClassifyShaping(e)
	if v != vocab.Undecided || !strings.Contains(why, "cannot tell") || !strings.Contains(why, "no cause") {
		t.Errorf("got %s: %q; want undecided, saying it cannot tell and names no cause", v, why)
	}
	for _, line := range []float64{0, 0.3} {
		fs := Diagnose(Evidence{BBBps: 120e6, RTT: ms(10), IdealBps: 113e6, ActualBps: 45e6, EfficiencyPct: 98.5, BufferDelayPct: 2, LineLossPct: line,
			Shaping: v, ShapingDetail: why, Trains: e.Trains}, DefaultThresholds)
		for _, f := range fs {
			if f.Cause == vocab.CauseBuffer || f.Cause == vocab.CausePolicer || f.Cause == vocab.CauseLoss {
				t.Errorf("line loss %.1f %%: named %s: %s", line, f.Cause, f.Detail)
			}
		}
	}
	// Without the trains' verdict the TCP rule names the buffer: the
	// misread this guards against.
	fs := Diagnose(Evidence{BBBps: 120e6, RTT: ms(10), IdealBps: 113e6, ActualBps: 45e6, EfficiencyPct: 98.5, BufferDelayPct: 2}, DefaultThresholds)
	if !slices.ContainsFunc(fs, func(f Finding) bool { return f.Cause == vocab.CauseBuffer }) {
		t.Errorf("without trains the TCP rule named %+v; this test expects it to name the buffer", fs)
	}
}
