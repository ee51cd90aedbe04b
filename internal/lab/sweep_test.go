package lab

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/sweep"
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
//     every 100 ms) take 9,120 bit/s of it on the wire, so the plateau is
//     241,020 × (1 − 9,120 / 256,000) = 232,434 bit/s.
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

// TestSweepWindowFrameRelay8k sweeps 1..10 segments of window, 3 s each
// (about 45 s), on the framerelay8k profile, and checks the regions
// against the arithmetic above. Tolerances, and why:
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
//   - each saturation point's delay increment within one segment time at
//     the plateau (1448 × 8 / 232,434 = 49.8 ms) + 10 ms of its model
//     (W − BDP) × 8 / plateau: a probe also waits for the rest of the
//     segment in service (0 to 48 ms), and the pipe moves by up to half a
//     segment with the ACK pattern; 10 ms covers the access line (8.2 ms
//     behind one data packet) and the TUN path.
//   - the rate from the delay increments' slope within ±20 % of 241,020
//     bit/s (the queue drains at the CIR, probes included): five
//     saturation points over 4 segments of window, each median off by
//     up to ~10 ms against a 190 ms spread.
//   - windows of 1 and 2 segments are linear, no loss below the edge.
func TestSweepWindowFrameRelay8k(t *testing.T) {
	needRoot(t)
	bin := buildFullpipe(t)
	l := startLab(t, "tswfr", Profiles["framerelay8k"].Up)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := inNSCmd(ctx, l.Server.NetNS, bin, "serve", "-q", "-l", l.Server.Addr.String()+":6349")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	time.Sleep(200 * time.Millisecond) // the responder listens before its first log line
	argv := []string{bin, "sweep", "window", l.Server.Addr.String(), "--from", "1mss", "--to", "10mss", "--step", "1mss",
		"--duration", "3s", "--json"}
	start := time.Now()
	cmd := inNSCmd(ctx, l.Client.NetNS, argv...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	t.Logf("%s: %v in %v\n%s", strings.Join(argv[1:], " "), err, time.Since(start).Round(time.Second), stderr.String())
	var r sweepResult
	if jerr := json.Unmarshal(out, &r); jerr != nil || r.Partial {
		t.Fatalf("sweep: %v / %v, partial %v\n%s", err, jerr, r.Partial, out)
	}
	for _, p := range r.Points {
		t.Logf("%5.1f mss %8.0f bit/s  retr %3d  delay %6.1f ms (max %6.1f, model %6.1f)  rate p10..p90 %6.0f..%6.0f  %s",
			p.WindowMSS, p.GoodputBps, p.RetransSegs, p.DelayIncrementMs, p.DelayIncrementMaxMs, p.ModelIncrementMs, p.RateP10Bps, p.RateP90Bps, p.Region)
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
	segTime := frSegment * 8 / frPlateauBps * 1e3
	sat := 0
	for _, p := range r.Points {
		switch {
		case p.WindowMSS <= 2 && p.Region != sweep.RegionLinear:
			t.Errorf("%.0f segments: region %s, want linear", p.WindowMSS, p.Region)
		case p.Region == sweep.RegionSaturation:
			sat++
			if !p.HasDelay || math.Abs(p.DelayIncrementMs-p.ModelIncrementMs) > segTime+10 {
				t.Errorf("%.0f segments: delay increment %.1f ms, model (W − BDP) × 8 / rate = %.1f ms ± %.1f", p.WindowMSS, p.DelayIncrementMs, p.ModelIncrementMs, segTime+10)
			}
		}
		if p.RetransSegs > 0 && p.WindowBytes < a.OverflowEdgeBytes {
			t.Errorf("%.0f segments: %d retransmissions below the overflow edge", p.WindowMSS, p.RetransSegs)
		}
	}
	if sat < 3 {
		t.Errorf("%d saturation points, want at least 3 (windows 3..7 segments)", sat)
	}
	if math.Abs(a.RateFromDelayBps-241_020)/241_020 > 0.20 {
		t.Errorf("rate from the delay slope %.0f bit/s, want 241,020 ± 20 %%", a.RateFromDelayBps)
	}
}
