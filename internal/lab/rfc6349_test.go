package lab

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/result/resulttest"
	"github.com/fullpipe/fullpipe/internal/train"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// trainsRead checks the shaping step's packet trains: kind, and the rate
// and the bucket or queue within 20 % of the truth (the target)
// plus the estimate's own error bar, which includes the timing noise the
// trains measured (their tails' spread of delays: behind a full queue
// they would be equal). In the lab that noise is the forwarder's: a
// packet it reads or writes late by L seems to have waited L longer, up
// to 0.5 ms on these 2 cores while a train passes at 1.2 Gbit/s, 19 kB of
// a 64 kB queue at 300 Mbit/s. The shaping step's own account of the
// lab (its write lateness) is logged by runRFC.
// The trains count each datagram's IP, UDP and Ethernet bytes (size + 66);
// the lab's policer and queue count IP bytes (size + 28), its bottleneck
// serialises IP + 38: so a policer's rate, its bucket and a queue read
// (size + 66) / (size + 28) of their IP-byte truth, a bottleneck's rate
// its own.
func trainsRead(t *testing.T, r *rfcResult, kind train.Kind, rateIP, rateWire, limitIP float64) {
	t.Helper()
	tr := r.ShapingSum.Trains
	if tr == nil || len(r.ShapingSum.TrainRows) == 0 {
		t.Fatalf("no trains in the shaping step")
	}
	size := float64(r.ShapingSum.TrainRows[len(r.ShapingSum.TrainRows)-1].SizeBytes)
	k := (size + 66) / (size + 28)
	rate, limit := rateWire+rateIP*k, limitIP*k
	est := tr.QueueBytes
	if kind == "policer" {
		est = tr.BucketBytes
	}
	t.Logf("trains: %s, rate %.0f ± %.0f bit/s (truth %.0f), bucket/queue %.0f ± %.0f B (truth %.0f): %s",
		tr.Kind, tr.RateBps.Value, tr.RateBps.Err, rate, est.Value, est.Err, limit, tr.Why)
	if tr.Kind != kind {
		t.Errorf("trains read %s, want %s", tr.Kind, kind)
	}
	if math.Abs(tr.RateBps.Value-rate) > 0.2*rate+tr.RateBps.Err {
		t.Errorf("rate %.0f ± %.0f bit/s, want %.0f ± 20 %% ± the error bar", tr.RateBps.Value, tr.RateBps.Err, rate)
	}
	if limit > 0 && math.Abs(est.Value-limit) > 0.2*limit+est.Err {
		t.Errorf("bucket or queue %.0f ± %.0f B, want %.0f ± 20 %% ± the error bar", est.Value, est.Err, limit)
	}
}

// rfcTries is how many runs an RFC 6349 test may take to get one the
// lab held: its packet trains need the forwarder punctual to a fraction
// of a millisecond for a few seconds (TrainBudgetFor), which on a
// virtual machine whose idle cores its host wakes late fails more often
// than a rate's budget: on this machine, after write lateness was read
// where the kernel stamps a packet and trains up were judged on the up
// direction alone, 4 of 8 runs of TestRFC6349SmallBuffer held its
// trains, and the project's CI failed one in 3 of 3 tries.
const rfcTries = 5

// rfcResult is the run's document, decoded with the model's own types.
type rfcResult = result.RFC6349

// runRFC runs the method (upload direction, quick) from the client
// namespace against a responder in the server namespace, until the lab
// held its path over a run; the document must validate against
// docs/schema/rfc6349.schema.json. The run judges the lab itself, step
// by step (clientJSON runs the command with FULLPIPE_LAB, as `lab exec`
// does): its trains by lab.TrainBudgetFor the lab, every other step by
// lab.RateBudget (what each measures; internal/cli/labwatch.go), and so
// does this test over the whole run (RateBudget); a run whose trains
// the tester's host held is repeated too (hostHeld). It returns the
// whole run's account.
func runRFC(t *testing.T, bin string, l *Lab, args ...string) (rfcResult, Account) {
	t.Helper()
	var r rfcResult
	a := heldTries(t, l, RateBudget, rfcTries, func(int) error {
		r = runRFCOnce(t, bin, l, args...)
		if err := docHeld(t, r.Meta); err != nil {
			return err
		}
		return hostHeld(r)
	})
	return r, a
}

// hostHeld says, as the lab's refusal does, that a run's trains were
// the tester's host's: a train sent 3 times whose sender was held in
// every send, longer than its pace allows, and lost packets after (the
// method sets its loss and tail aside and warns). That run measured this
// host, not the path, and is repeated like a run the lab did not hold
// (CI run 16, beside a busy core: TestRFC6349SmallBuffer read only "a
// queue of at least 74,809 B", every overflowing train held).
func hostHeld(r rfcResult) error {
	for _, w := range r.Warnings {
		if strings.Contains(w, "held longer than its pace allows") {
			return &LimitedError{Said: "HOST-LIMITED: " + w}
		}
	}
	return nil
}

// docHeld is a document's own account of the lab: nil when the lab held
// the run, a *LimitedError saying so (Said) when it did not. A document
// from a command run in a lab that has no account fails the test.
func docHeld(t *testing.T, m result.Meta) error {
	t.Helper()
	if m.Lab == nil {
		t.Fatal("the document of a command run with FULLPIPE_LAB has no lab account")
	}
	for _, s := range m.Lab.Steps {
		t.Logf("lab, step %s: %s", s.Step, s.Account)
	}
	if m.Lab.LabLimited {
		return &LimitedError{Said: m.Lab.Account}
	}
	return nil
}

func runRFCOnce(t *testing.T, bin string, l *Lab, args ...string) rfcResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	startResponder(t, ctx, bin, l)
	var raw json.RawMessage
	_ = clientJSON(t, ctx, l, &raw, append([]string{bin, "rfc6349", l.Server.Addr.String(), "--json", "--quick", "--direction", "up"}, args...)...) // a FAIL verdict exits 1; the tests judge the JSON
	resulttest.Validate(t, raw)
	var r rfcResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRFC6349Window: scenario 1 (100 Mbit/s, 20 ms). The baseline RTT is
// 20 ms plus the probe's serialisation and the TUN devices' ≈ 0.1-0.2 ms
// (TestAddedRTT), within 0.5 ms; the BDP is 250,000 B within 5 %; the walk
// is proportional to the window (the RFC's 25/50/75 % → a quarter, half,
// three quarters of the rate), each step within 10 % of W × 8 / RTT (the
// window law holds within 5-6 % on this path, TestWindowLaw, and a 3 s
// step has more slow start in it); the verdict passes.
func TestRFC6349Window(t *testing.T) {
	needRoot(t)
	bin := buildFullpipe(t)
	l := startLab(t, "trfcw", Profiles["window"].Up)
	r, _ := runRFC(t, bin, l, "--cir", "100M")
	t.Logf("baseline %.3f ms from %s (UDP minima %v ms, TCP's %.3f ms)", r.RTT.BaselineMs, r.RTT.Source, r.RTT.UDPMinMs, r.RTT.ControlTCPMinMs)
	if math.Abs(r.RTT.BaselineMs-20) > 0.5 {
		t.Errorf("baseline RTT %.3f ms, want 20 ± 0.5", r.RTT.BaselineMs)
	}
	if math.Abs(r.BDP.UpBytes-250_000)/250_000 > 0.05 {
		t.Errorf("BDP %.0f B, want 250,000 ± 5 %%", r.BDP.UpBytes)
	}
	if len(r.Walk) != 4 {
		t.Fatalf("walk has %d steps", len(r.Walk))
	}
	for i, s := range r.Walk[:3] {
		want := float64(s.WindowBytes) * 8 / 0.020
		if math.Abs(s.ActualBps-want)/want > 0.10 {
			t.Errorf("walk step %d: %.2f Mbit/s, want W×8/RTT = %.2f ± 10 %%", i, s.ActualBps/1e6, want/1e6)
		}
	}
	if !r.Verdict.Pass {
		t.Errorf("a clean 100 Mbit/s path failed: %+v", r.Throughput)
	}
}

// TestRFC6349BlackHole: an up-direction MTU of 1400 with ICMP blocked is
// found exactly and diagnosed.
func TestRFC6349BlackHole(t *testing.T) {
	needRoot(t)
	bin := buildFullpipe(t)
	d := Direction{RateBps: 100e6, Delay: 5 * time.Millisecond, QueueBytes: 200_000}
	up := d
	up.MTU = 1400
	l, err := Up(Config{Name: "trfcm", Seed: 1, Framing: FramingEthernet, Up: up, Down: d})
	if err != nil {
		t.Fatal(err)
	}
	runLab(t, l)
	r, _ := runRFC(t, bin, l, "--cir", "100M")
	if r.MTU.UpBytes != 1400 || r.MTU.DownBytes != 1500 {
		t.Fatalf("MTU up %d down %d, want 1400 and 1500", r.MTU.UpBytes, r.MTU.DownBytes)
	}
	if !hasCause(r, "mtu", "black hole") {
		t.Errorf("no black-hole diagnosis: %+v", r.Diagnosis)
	}
}

// TestRFC6349PolicedShaped: a 100 Mbit/s policer on a 1 Gbit/s line is
// called policed; a 100 Mbit/s line with a deep queue is called shaped.
func TestRFC6349PolicedShaped(t *testing.T) {
	needRoot(t)
	bin := buildFullpipe(t)
	lp := startLab(t, "trfcp", Profiles["policed"].Up)
	rp, _ := runRFC(t, bin, lp, "--cir", "100M")
	if rp.ShapingSum.Verdict != "policed" || !hasCause(rp, "policer", "") {
		t.Errorf("policed path: verdict %q, diagnosis %+v", rp.ShapingSum.Verdict, rp.Diagnosis)
	}
	trainsRead(t, &rp, "policer", 100e6, 0, 125_000)
	ls := startLab(t, "trfcs", Profiles["shaped"].Up)
	rs, _ := runRFC(t, bin, ls, "--cir", "100M")
	if rs.ShapingSum.Verdict != "shaped" {
		t.Errorf("shaped path: verdict %q", rs.ShapingSum.Verdict)
	}
	trainsRead(t, &rs, "queue", 0, 100e6, 500_000)
	// The rate spread is evidence printed for a reader, not judged: in
	// 3 s steps it did not tell the two apart reliably (policed 14-25 %
	// against shaped 2.6-7.0 % in three runs, then 7.0 % against 10.7 %).
	t.Logf("rate spread: policed %.1f %%, shaped %.1f %%", rp.ShapingSum.RateSpreadPct, rs.ShapingSum.RateSpreadPct)
}

// TestRFC6349SmallBuffer: scenario 2, a 64 kB queue on a 1,875,000 B BDP:
// TCP at the full window overflows it; diagnosed as a buffer too small.
func TestRFC6349SmallBuffer(t *testing.T) {
	needRoot(t)
	bin := buildFullpipe(t)
	l := startLab(t, "trfcb", Profiles["smallbuf"].Up)
	r, _ := runRFC(t, bin, l, "--cir", "300M", "--cc", "cubic")
	if r.Verdict.Pass || !hasCause(r, "buffer", "packet trains") {
		t.Errorf("small buffer: pass %v, diagnosis %+v, throughput up %+v, warnings %q", r.Verdict.Pass, r.Diagnosis, r.Throughput[vocab.Up], r.Warnings)
	}
	trainsRead(t, &r, "queue", 0, 300e6, 64_000)
}

// TestRFC6349PolicerSmallBucket: the misread case, a 60 Mbit/s
// policer with a 30 kB bucket (4 ms of the CIR) at 20 ms RTT, --cir 60M
// up. TCP through it carries far less than the CIR, with loss and no
// queueing, which the TCP rule alone took for a small buffer or a lossy
// line. The trains name the policer, its rate and its bucket; the
// diagnosis names the policer and neither a buffer nor a lossy line.
func TestRFC6349PolicerSmallBucket(t *testing.T) {
	needRoot(t)
	bin := buildFullpipe(t)
	l := startLab(t, "trfcpb", Direction{PoliceBps: 60e6, PoliceBurst: 30_000, Delay: 10 * time.Millisecond})
	r, _ := runRFC(t, bin, l, "--cir", "60M")
	if r.ShapingSum.Verdict != "policed" || !hasCause(r, "policer", "bucket") || hasCause(r, "buffer", "") || hasCause(r, "loss", "") {
		t.Errorf("verdict %q, diagnosis %+v: want policed, a policer and neither a buffer nor a lossy line", r.ShapingSum.Verdict, r.Diagnosis)
	}
	trainsRead(t, &r, "policer", 60e6, 0, 30_000)
}

// TestRFC6349CIRAbovePath: the user claims 150 Mbit/s on a 100 Mbit/s
// path. The stream at the CIR arrives at the bottleneck's rate, the next
// stream is sent at that rate and arrives whole, so BB is 100 Mbit/s at
// layer 2 (the lab and the method both count 38 B of Ethernet framing),
// within 1 %: 2 s of 8,100 packets/s leave only the edges of the
// receiver's first-to-last-packet span as error. The BDP follows from it,
// and the report warns that the path carries less than the CIR.
func TestRFC6349CIRAbovePath(t *testing.T) {
	needRoot(t)
	bin := buildFullpipe(t)
	l := startLab(t, "trfcc", Profiles["window"].Up)
	r, _ := runRFC(t, bin, l, "--cir", "150M")
	t.Logf("BB %.3f Mbit/s; search %+v", r.BB.UpBps/1e6, r.BB.Search)
	if math.Abs(r.BB.UpBps-100e6)/100e6 > 0.01 {
		t.Errorf("BB %.3f Mbit/s, want 100 ± 1 %%", r.BB.UpBps/1e6)
	}
	if len(r.BB.Search) < 3 || r.BB.Search[1].SentBps != 150e6 || r.BB.Search[2].SentBps != r.BB.Search[1].ReceivedBps {
		t.Errorf("search %+v: want the quarter stream, one at the CIR, then one at the rate that arrived", r.BB.Search)
	}
	if want := r.BB.UpBps * r.RTT.BaselineMs / 1e3 / 8; math.Abs(r.BDP.UpBytes-want) > 1 {
		t.Errorf("BDP %.0f B, want BB × baseline / 8 = %.0f", r.BDP.UpBytes, want)
	}
	warned := false
	for _, w := range r.Warnings {
		warned = warned || strings.Contains(w, "less than the CIR")
	}
	if !warned {
		t.Errorf("no warning that the path carries less than the CIR: %q", r.Warnings)
	}
}

// TestRFC6349Sweep: --sweep 9 on scenario 1 (100 Mbit/s, 20 ms, a
// 375,000-byte queue), windows of k × 3 × BDP / 9. In payload bytes the
// path holds the pipe, ceiling × base RTT / 8 ≈ 236,800 B, plus the queue,
// 375,000 × 1448 / 1500 = 362,000 B: 598,800 B. Reno overflows the first
// window above that (plus two segments: an ACK that frees two segments
// puts one more in the queue for a moment); the queue estimate brackets
// 362,000 B (edge − BDP above, last lossless window − BDP below). The
// plateau is the ceiling within 5 %: reno's slow start to a 250 kB window
// takes about 6 RTTs (120 ms) of a 3 s point. Between the BDP and the
// edge the window holds a standing queue of W × 1538 / 1448 − the pipe's
// wire bytes (rate × base RTT / 8); the probes' delay increment is its
// drain time within 1 ms (a window-limited flow keeps the queue within
// one segment, 0.12 ms; the TUN devices add up to 0.3 ms).
func TestRFC6349Sweep(t *testing.T) {
	needRoot(t)
	bin := buildFullpipe(t)
	l := startLab(t, "trfcsw", Profiles["window"].Up)
	r, _ := runRFC(t, bin, l, "--cir", "100M", "--sweep", "9")
	sw, ok := r.Sweep["up"]
	if !ok || len(sw.Points) != 9 {
		t.Fatalf("sweep: %+v", r.Sweep)
	}
	const ceiling, seg = 100e6 * 1448 / 1538, 1448
	base := r.RTT.BaselineMs / 1e3
	pipe := ceiling * base / 8
	limit := pipe + 375_000*1448/1500 + 2*seg
	wantEdge := 0
	for _, p := range sw.Points {
		t.Logf("%7d B %6.2f Mbit/s %6.1f ms %s", p.WindowBytes, p.GoodputBps/1e6, p.DelayIncrementMs, p.Region)
		if wantEdge == 0 && float64(p.WindowBytes) > limit {
			wantEdge = p.WindowBytes
		}
		if w := float64(p.WindowBytes); p.Region == "saturation" && w > 1.3*pipe && w < limit-2*seg {
			want := (w*1538/1448 - 100e6*base/8) * 8 / 100e6 * 1e3
			if math.Abs(p.DelayIncrementMs-want) > 1 {
				t.Errorf("window %d B: delay increment %.2f ms, want the standing queue's drain %.2f ± 1 ms", p.WindowBytes, p.DelayIncrementMs, want)
			}
		}
	}
	a := sw.Analysis
	t.Logf("analysis %+v; pipe %.0f B, pipe + queue %.0f B", a, pipe, limit-2*seg)
	if math.Abs(a.PlateauBps-ceiling)/ceiling > 0.05 {
		t.Errorf("plateau %.2f Mbit/s, want %.2f ± 5 %%", a.PlateauBps/1e6, ceiling/1e6)
	}
	if a.OverflowEdgeBytes != wantEdge {
		t.Errorf("overflow from %d B, want the first window above %.0f B: %d B", a.OverflowEdgeBytes, limit, wantEdge)
	}
	if q := 375_000.0 * 1448 / 1500; a.QueueMinBytes > q*1.02 || a.QueueBytes < q*0.98 {
		t.Errorf("queue estimate %.0f B (at least %.0f B) does not bracket the %.0f B of payload the queue holds", a.QueueBytes, a.QueueMinBytes, q)
	}
}

func hasCause(r rfcResult, cause vocab.Cause, frag string) bool {
	for _, f := range r.Diagnosis {
		if f.Cause == cause && strings.Contains(f.Detail, frag) {
			return true
		}
	}
	return false
}

// TestRFC6349LossyLine: scenario 6's serial line (2 Mbit/s, 100 ms, BER
// 1e-6): a 1500-byte packet is lost with 1 − (1 − 1e-6)^12000 = 1.19 %,
// at any load, so the method calls it a lossy line.
func TestRFC6349LossyLine(t *testing.T) {
	needRoot(t)
	bin := buildFullpipe(t)
	l := startLab(t, "trfcl", Profiles["serial"].Up)
	r, _ := runRFC(t, bin, l, "--cir", "2M")
	if !hasCause(r, "loss", "lossy line") {
		t.Errorf("BER 1e-6 not called a lossy line: %+v", r.Diagnosis)
	}
}
