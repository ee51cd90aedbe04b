package sweep

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fullpipe/fullpipe/internal/vocab"
)

// physics is the window law on a path of rate R (payload bit/s), an RTT
// of rtt for a full segment, a queue of q payload bytes: goodput =
// min(W × 8 / rtt, R); the queue holds W − BDP, so the one-way delay
// increment is (W − BDP + MSS/2) × 8 / R; beyond BDP + q segments are lost.
type physics struct {
	rateBps float64
	rtt     float64 // s
	queue   float64 // bytes
}

func (ph physics) bdp() float64 { return ph.rateBps * ph.rtt / 8 }

// point is what a sweep would measure at w, with a relative goodput noise:
// a probe waits for the queue and half of the segment in service.
func (ph physics) point(w, mss int, noise float64) WindowPoint {
	g := min(float64(w)*8/ph.rtt, ph.rateBps) * (1 + noise)
	p := WindowPoint{WindowBytes: w, GoodputBps: g, HasDelay: true}
	if float64(w) > ph.bdp() {
		p.DelayIncrementMs = (float64(w) - ph.bdp() + float64(mss)/2) * 8 / ph.rateBps * 1e3
	}
	if float64(w) > ph.bdp()+ph.queue {
		p.RetransSegs = 3
		p.GoodputBps *= 0.75
	}
	return p
}

// TestClassifyFrameRelay: scenario 7's 8 kB switch on a 256 kbit/s CIR
// (241 kbit/s of TCP payload, a segment-and-ACK RTT of 99.6 ms, so BDP
// 3,000 B; 5 segments of queue, 7,240 payload bytes), windows 1..12 MSS
// with ±2 % seeded noise: 1-2 MSS linear, 3-7 saturation, 8+ overflow; the
// plateau, BDP and queue come back within the noise and one step.
func TestClassifyFrameRelay(t *testing.T) {
	const mss = 1448
	ph := physics{rateBps: 241_000, rtt: 0.0996, queue: 5 * mss}
	rng := rand.New(rand.NewPCG(7, 7))
	t.Logf("seed 7; BDP %.0f B, overflow beyond %.0f B", ph.bdp(), ph.bdp()+ph.queue)
	var pts []WindowPoint
	for k := 12; k >= 1; k-- { // out of order: Classify sorts
		pts = append(pts, ph.point(k*mss, mss, (rng.Float64()-0.5)*0.04))
	}
	a := Classify(pts, mss)
	want := map[int]vocab.Region{1: vocab.Linear, 2: vocab.Linear, 3: vocab.Saturation, 7: vocab.Saturation, 8: vocab.Overflow, 12: vocab.Overflow}
	for _, p := range pts {
		k := p.WindowBytes / mss
		if w, ok := want[k]; ok && p.Region != w {
			t.Errorf("%d MSS: region %s, want %s (%+v)", k, p.Region, w, p)
		}
	}
	if math.Abs(a.PlateauBps-ph.rateBps)/ph.rateBps > 0.02 {
		t.Errorf("plateau %.0f bit/s, want %.0f ± 2 %%", a.PlateauBps, ph.rateBps)
	}
	if math.Abs(a.BDPBytes-ph.bdp())/ph.bdp() > 0.04 {
		t.Errorf("BDP %.0f B, want %.0f ± 4 %% (two noisy fits)", a.BDPBytes, ph.bdp())
	}
	if a.OverflowEdgeBytes != 8*mss || a.LastLosslessBytes != 7*mss || a.LinearEndBytes != 2*mss || a.SaturationStartBytes != 3*mss {
		t.Errorf("boundaries %+v", a)
	}
	// The true queue lies between the two estimates.
	if !(a.QueueMinBytes <= ph.queue && ph.queue <= a.QueueBytes) {
		t.Errorf("queue %.0f not within [%.0f, %.0f]", ph.queue, a.QueueMinBytes, a.QueueBytes)
	}
	if math.Abs(a.RateFromDelayBps-ph.rateBps)/ph.rateBps > 0.01 {
		t.Errorf("rate from delay %.0f, want %.0f", a.RateFromDelayBps, ph.rateBps)
	}
	for _, p := range pts {
		if p.Region == vocab.Saturation && math.Abs(p.ModelIncrementMs-p.DelayIncrementMs) > 5 {
			t.Errorf("%d B: model increment %.1f ms, measured %.1f", p.WindowBytes, p.ModelIncrementMs, p.DelayIncrementMs)
		}
	}
}

// TestClassifyTransition: a point below both the line and the plateau is
// transition; a point on the line at the plateau with a queue is saturation.
func TestClassifyTransition(t *testing.T) {
	pts := []WindowPoint{
		{WindowBytes: 1000, GoodputBps: 80_000, HasDelay: true},
		{WindowBytes: 2000, GoodputBps: 120_000, HasDelay: true},                       // line says 160k
		{WindowBytes: 3000, GoodputBps: 200_000, HasDelay: true, DelayIncrementMs: 2},  // plateau, on no line
		{WindowBytes: 4000, GoodputBps: 200_000, HasDelay: true, DelayIncrementMs: 80}, // queue
	}
	a := Classify(pts, 1000)
	got := []vocab.Region{pts[0].Region, pts[1].Region, pts[2].Region, pts[3].Region}
	want := []vocab.Region{vocab.Linear, vocab.Transition, vocab.Saturation, vocab.Saturation}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("point %d: %s, want %s", i, got[i], want[i])
		}
	}
	if a.OverflowEdgeBytes != 0 || len(a.Notes) == 0 {
		t.Errorf("no overflow expected, with a note: %+v", a)
	}
}

// TestClassifyIsolatedLoss: a retransmission below lossless windows does
// not move the edge and does not make that point overflow (the queue did
// not overflow where a larger window lost nothing); a note says so.
func TestClassifyIsolatedLoss(t *testing.T) {
	pts := []WindowPoint{
		{WindowBytes: 1000, GoodputBps: 100_000},
		{WindowBytes: 2000, GoodputBps: 150_000, RetransSegs: 1},
		{WindowBytes: 3000, GoodputBps: 150_000},
		{WindowBytes: 4000, GoodputBps: 120_000, RetransSegs: 9},
	}
	a := Classify(pts, 1000)
	if pts[1].Region != vocab.Saturation || pts[3].Region != vocab.Overflow || a.OverflowEdgeBytes != 4000 || a.LastLosslessBytes != 3000 {
		t.Errorf("edge %+v, points %+v", a, pts)
	}
	if len(a.Notes) != 1 || !strings.Contains(a.Notes[0], "2000 B: 1 retransmitted") {
		t.Errorf("notes %q: want one about the 2000 B point", a.Notes)
	}
	if Classify(nil, 1448).PlateauBps != 0 {
		t.Error("empty sweep")
	}
}

// TestIncrements: the clocks' offsets cancel; forward and reverse are
// separated; classes are kept apart.
func TestIncrements(t *testing.T) {
	const off = 5_000_000_000 // responder clock 5 s ahead
	base := []Probe{
		{Class: 0, SentNs: 0, RespNs: off + 10e6, RecvNs: 20e6},
		{Class: 0, SentNs: 100e6, RespNs: off + 111e6, RecvNs: 121e6}, // 1 ms slower forward
		{Class: 1, SentNs: 50e6, RespNs: off + 70e6, RecvNs: 80e6},
	}
	loaded := []Probe{
		{Class: 0, SentNs: 1e9, RespNs: off + 1e9 + 60e6, RecvNs: 1e9 + 72e6}, // +50 ms forward, +2 ms back
		{Class: 1, SentNs: 1e9, RespNs: off + 1e9 + 20e6, RecvNs: 1e9 + 30e6},
	}
	fwd, rev, ok := Increments(base, loaded, 0)
	if !ok || len(fwd) != 1 || math.Abs(fwd[0]-50) > 1e-9 || math.Abs(rev[0]-2) > 1e-9 {
		t.Fatalf("class 0: %v %v %v", fwd, rev, ok)
	}
	fwd, rev, _ = Increments(base, loaded, 1)
	if math.Abs(fwd[0]) > 1e-9 || math.Abs(rev[0]) > 1e-9 {
		t.Fatalf("class 1: %v %v", fwd, rev)
	}
	if _, _, ok := Increments(base, loaded, 2); ok {
		t.Fatal("class without baseline")
	}
	cls, med, _, ok := ClassDelays([]int{46, 0}, base, loaded, []int{2, 1}, []int{1, 1}, vocab.Down)
	if !ok || med != 2 || len(cls) != 2 || cls[0].BaselineRecv != 2 || cls[0].DSCP != 46 {
		t.Fatalf("ClassDelays: %+v %v", cls, med)
	}
}

// TestAnalyzeMsgLen: scenario 5's shape: TCP rises to 2048 B then flat;
// UDP's receiver falls behind from 4096 B on (a dip at 1024 B that
// recovers is not the divergence).
func TestAnalyzeMsgLen(t *testing.T) {
	pts := []MsgLenPoint{
		{SizeBytes: 512, TCPGoodputBps: 40e6, UDPSenderBps: 50e6, UDPReceiverBps: 50e6},
		{SizeBytes: 1024, TCPGoodputBps: 60e6, UDPSenderBps: 50e6, UDPReceiverBps: 45e6},
		{SizeBytes: 2048, TCPGoodputBps: 70e6, UDPSenderBps: 50e6, UDPReceiverBps: 50e6},
		{SizeBytes: 4096, TCPGoodputBps: 72e6, UDPSenderBps: 50e6, UDPReceiverBps: 40e6},
		{SizeBytes: 8192, TCPGoodputBps: 71e6, UDPSenderBps: 50e6, UDPReceiverBps: 30e6},
	}
	a := AnalyzeMsgLen(pts)
	if a.TCPMaxBps != 72e6 || a.TCPKneeBytes != 2048 || a.UDPDivergeBytes != 4096 {
		t.Fatalf("%+v", a)
	}
}
