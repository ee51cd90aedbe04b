package lab

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/sweep"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// Scenario 7 on the framerelay8k profile, as arithmetic (every packet is
// framed as Ethernet in the lab, +38 B on the wire):
//
//   - a full segment: 1448 B payload, 1500 B IP, 1538 B on the wire; the
//     CIR of 256,000 bit/s serialises it in 48.06 ms, the 1.5 Mbit/s
//     access line in 8.20 ms; an ACK (52 B IP, 90 B wire) takes 2.81 +
//     0.48 ms; the propagation is 20 ms each way. So a segment and its
//     ACK take RTTseg = 40 + 48.06 + 8.20 + 2.81 + 0.48 = 99.55 ms.
//   - the TCP ceiling of the CIR is 256,000 × 1448 / 1538 = 241,020
//     bit/s; the delay probes (48 B UDP payload, 76 B IP, 114 B wire,
//     one every 100 ms, DSCP 46 and 0 in turn) take 9,120 bit/s of it on
//     the wire, so the plateau is 241,020 × (1 − 9,120 / 256,000) =
//     232,434 bit/s.
//   - BDP = 241,020 × 0.09955 / 8 = 2,999 B ≈ 2.07 segments.
//   - the switch queue holds 8,000 IP bytes besides the packet in
//     service: 5 full packets (7,500 B; a sixth would make 9,000), so
//     Q = 5 × 1448 = 7,240 payload bytes, and overflow begins beyond
//     BDP + Q = 10,239 B = 7.07 segments.
const (
	frSegment    = 1448
	frPlateauBps = 232_434.0
	frBDPBytes   = 2_999.0
	frQueueBytes = 5 * frSegment
)

// sweepResult is the part of `fullpipe sweep window --json` read here.
type sweepResult struct {
	Points   []sweep.WindowPoint `json:"points"`
	Analysis sweep.SweepAnalysis `json:"analysis"`
	Partial  bool                `json:"partial"`
}

// frSweepBudget is what TestSweepWindowFrameRelay8k needs of the lab.
var frSweepBudget = medianBudget(5*time.Millisecond, "a tenth of a segment's 48 ms at the CIR and of the 54 ms delay tolerance; the delays are medians")

// TestSweepWindowFrameRelay8k sweeps 1..10 segments of window, 3 s each
// (about 45 s), on the framerelay8k profile with priority queueing in the
// access router (DSCP 46 first), and checks the regions against the
// arithmetic above. Tolerances, and why:
//
//   - plateau within ±4 % of 232,434 bit/s: goodput over a saturated
//     point's first-to-last byte is the CIR's rate exactly, save for the
//     span's end effects (one segment of ~60 in 3 s, 1.7 %) and the count
//     of probes that fall in the span (±1 of 30, 0.1 %).
//   - overflow edge (first window from which all lose) within [W − 1
//     segment, W + 2 segments] of W = BDP + Q = 10,239 B: the sweep's
//     1-segment grid puts the first lossy window up to one segment past
//     W; delayed ACKs (one ACK per two segments) keep up to one more
//     segment in the pipe, moving the edge up by one; an ACK for two
//     segments releases two back-to-back, a transient extra segment in
//     the queue that moves the edge down by one.
//   - queue estimate (edge − measured BDP) within ±2 segments of Q, for
//     the same reasons (the measured BDP carries the delayed ACK).
//   - each saturation point's delay increment (DSCP 46 probes) within
//     54 ms of its model
//     (W − BDP + MSS/2) × 8 / plateau (a probe at a random time waits for
//     the queue and half the segment in service): the probes sample the
//     queue's sawtooth, up to two segment times (96 ms) high when ACKs
//     release segments in pairs, and the median of ~10 samples (one class
//     of two, a probe per 100 ms, over the 2 s after the settle time)
//     spread uniformly over it has a standard deviation of 96 / (2 × √10)
//     = 15.2 ms, so 46 ms is 3σ; 8 ms more for waiting behind a data
//     packet on the 1.5 Mbit/s access line (8.2 ms each).
//   - the DSCP 46 and DSCP 0 probes' medians within 65 + 8 ms of each
//     other at every saturation point (3σ of the difference of two such
//     medians, 3 × √2 × 15.2 = 65 ms; the access line's 8.2 ms is the
//     most the router's priority can save, against 100-250 ms waited in
//     the switch): the design's lesson, priority queueing in the router
//     does not help when the frames wait in the switch.
//   - the rate from the delay increments' slope within ±20 % of 241,020
//     bit/s (the queue drains at the CIR: 241,020 bit/s of TCP payload,
//     or the plateau's 223,848 when the probes queued among the data are
//     counted, 7 % apart): five
//     saturation points over 4 segments of window, each median off by
//     up to ~10 ms against a 190 ms spread.
//   - windows of 1 and 2 segments are linear, no loss below the edge.
//
// The sweep is one the lab held (frSweepBudget): at most a quarter of
// the packets written more than 5 ms late, a tenth of a full segment's
// 48 ms at the CIR and of the delay tolerance's 54 ms. The delay
// increments are medians of ~10 probes, which move only if more than
// half of them are late; the plateau is a rate over 3 s (±4 % is 120 ms;
// RateBudget's 5 ms); the edge and the queue are read from losses, which
// only the forwarder's own (never allowed) would move.
func TestSweepWindowFrameRelay8k(t *testing.T) {
	needRoot(t)
	bin := buildFullpipe(t)
	d := Profiles["framerelay8k"].Up
	d.Priority = true
	l := startLab(t, "tswfr", d)
	r := runSweep(t, bin, l)
	for _, p := range r.Points {
		t.Logf("%5.1f mss %8.0f bit/s  retr %3d  delay %6.1f ms (max %6.1f, model %6.1f)  rate p10..p90 %6.0f..%6.0f  %s",
			p.WindowMSS, p.GoodputBps, p.RetransSegs, p.DelayIncrementMs, p.DelayIncrementMaxMs, p.ModelIncrementMs, p.RateP10Bps, p.RateP90Bps, p.Region)
		for _, c := range p.Classes {
			t.Logf("        DSCP %2d: forward %6.1f ms, reverse %5.1f ms, %d/%d replies", c.DSCP, c.FwdMedianMs, c.RevMedianMs, c.Received, c.Sent)
		}
	}
	a := r.Analysis
	t.Logf("analysis: %+v", a)

	if math.Abs(a.PlateauBps-frPlateauBps)/frPlateauBps > 0.04 {
		t.Errorf("plateau %.0f bit/s, want %.0f ± 4 %%", a.PlateauBps, frPlateauBps)
	}
	edge := frBDPBytes + frQueueBytes
	if lo, hi := edge-frSegment, edge+2*frSegment; float64(a.OverflowEdgeBytes) < lo || float64(a.OverflowEdgeBytes) > hi {
		t.Errorf("overflow edge %d B, want BDP + Q = %.0f B within [%.0f, %.0f]", a.OverflowEdgeBytes, edge, lo, hi)
	}
	if math.Abs(a.QueueBytes-frQueueBytes) > 2*frSegment {
		t.Errorf("queue estimate %.0f B, want %d ± %d B", a.QueueBytes, frQueueBytes, 2*frSegment)
	}
	const delayTol = 54.0 // ms, see above
	sat := 0
	for _, p := range r.Points {
		switch {
		case p.WindowMSS <= 2 && p.Region != vocab.Linear:
			t.Errorf("%.0f segments: region %s, want linear", p.WindowMSS, p.Region)
		case p.Region == vocab.Saturation:
			sat++
			if !p.HasDelay || math.Abs(p.DelayIncrementMs-p.ModelIncrementMs) > delayTol {
				t.Errorf("%.0f segments: delay increment %.1f ms, model (W − BDP + MSS/2) × 8 / rate = %.1f ms ± %.0f", p.WindowMSS, p.DelayIncrementMs, p.ModelIncrementMs, delayTol)
			}
			if len(p.Classes) != 2 || math.Abs(p.Classes[0].FwdMedianMs-p.Classes[1].FwdMedianMs) > 73 {
				t.Errorf("%.0f segments: DSCP 46 and 0 probes differ by more than 73 ms: %+v", p.WindowMSS, p.Classes)
			}
		}
		// Below the edge the switch queue never overflows, so TCP loses
		// nothing; it may still retransmit once on its own: the first
		// flight of a small window waits ~100 ms behind the 256 kbit/s
		// line while the smoothed RTT still holds the SYN's 40 ms sample,
		// and the tail-loss probe (2 × SRTT) fires. Seen once in ~6 runs.
		if p.RetransSegs > 1 && p.WindowBytes < a.OverflowEdgeBytes {
			t.Errorf("%.0f segments: %d retransmissions below the overflow edge, more than one spurious probe", p.WindowMSS, p.RetransSegs)
		}
	}
	if sat < 3 {
		t.Errorf("%d saturation points, want at least 3 (windows 3..7 segments)", sat)
	}
	if math.Abs(a.RateFromDelayBps-241_020)/241_020 > 0.20 {
		t.Errorf("rate from the delay slope %.0f bit/s, want 241,020 ± 20 %%", a.RateFromDelayBps)
	}
}

// runSweep runs the sweep of TestSweepWindowFrameRelay8k until the lab
// held its path over a run (frSweepBudget).
func runSweep(t *testing.T, bin string, l *Lab) sweepResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // 3 runs of about 45 s, 2 pauses
	defer cancel()
	startResponder(t, ctx, bin, l)
	argv := []string{bin, "sweep", "window", l.Server.Addr.String(), "--from", "1mss", "--to", "10mss", "--step", "1mss",
		"--duration", "3s", "--dscp-probes", "46,0", "--json"}
	var r sweepResult
	held(t, l, frSweepBudget, func(int) {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		r = sweepResult{}
		if err := clientJSON(t, ctx, l, &r, argv...); err != nil || r.Partial {
			t.Fatalf("sweep: %v, partial %v", err, r.Partial)
		}
	})
	return r
}
