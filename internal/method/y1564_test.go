package method

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/method/fakenet"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/rfc2544"
	"github.com/fullpipe/fullpipe/internal/stats"
	"github.com/fullpipe/fullpipe/internal/vocab"
	"github.com/fullpipe/fullpipe/internal/y1564"
)

// y1564Services: data (CIR 20 Mbit/s + EIR 10 Mbit/s, 512-byte frames)
// and voice (CIR 5 Mbit/s, no EIR, 256-byte frames, EF).
func y1564Services() []y1564.Service {
	sac := y1564.SAC{MaxFLRPct: 0.1, MaxFTD: 20 * time.Millisecond, MaxFDV: 5 * time.Millisecond, MinAvailPct: 99.9}
	return []y1564.Service{
		{Name: "data", CIRBps: 20e6, EIRBps: 10e6, FrameBytes: 512, SAC: sac},
		{Name: "voice", CIRBps: 5e6, FrameBytes: 256, DSCP: 46, SAC: sac},
	}
}

// A 100 Mbit/s path behind a policer of 30 Mbit/s of frames (counted in
// IP bytes by fakenet: 30 M × 494 / 512 for data's frames): data's
// configuration steps pass and its policing step is flagged at ≈ CIR +
// EIR; voice's policing step at 6.25 Mbit/s passes the policer whole, so
// it is flagged "not policed" (the network does not police voice at its
// CIR) and fails; the performance test (25 Mbit/s together) passes both.
func TestY1564Policer(t *testing.T) {
	p := &fakenet.Path{BaseRTT: 10 * time.Millisecond, RateBps: 100e6, PoliceBps: 30e6 * 494 / 512, BucketBytes: 20000}
	cfg := result.Y1564Config{Services: y1564Services(), Directions: []vocab.Direction{vocab.Up}, StepTime: 5 * time.Second, PerfTime: 60 * time.Second}
	var lines []string
	samples := map[Step]int{}
	res, err := RunY1564(context.Background(), p, cfg, func(e Event) {
		switch e.Kind {
		case Line:
			lines = append(lines, e.Text)
		case Sample:
			samples[e.Step]++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", strings.Join(lines, "\n"))
	if len(res.Services) != 2 || len(lines) != 6+5+2 {
		t.Fatalf("%d services, %d lines", len(res.Services), len(lines))
	}
	// A sample a second: 11 steps of 5 s, then 2 streams of 60 s.
	if samples[StepY1564Config] != 11*5 || samples[StepY1564Perf] != 2*60 {
		t.Errorf("samples %v, want 55 of the configuration test, 120 of the performance test", samples)
	}
	data, voice := res.Services[0], res.Services[1]
	for _, st := range data.Steps[:5] {
		if st.Judgement.Verdict != y1564.Pass {
			t.Errorf("data %s: %s %v", st.Step.Name(), st.Judgement.Verdict, st.Judgement.Reasons)
		}
	}
	// fakenet's latency probes: the base RTT and one serialisation of the
	// 512 B frame each way at 100 Mbit/s (42.56 µs, preamble and gap
	// counted), nothing queued at 25 % of the CIR; 1 µs for the
	// microseconds the probes' figures are kept in.
	want := rfc2544.ExpectedRTT(10*time.Millisecond, 512, 100e6)
	if ftd := data.Steps[0].Figures.FTD; ftd < want-time.Microsecond || ftd > want+time.Microsecond {
		t.Errorf("FTD %v on a 10 ms path, want %v", ftd, want)
	}
	// fakenet's stream is a fluid: the policer passes exactly its rate,
	// 30 Mbit/s of frames (the bucket is not modelled in a stream's rate);
	// 1 bit/s for the float arithmetic.
	pol := data.Steps[5].Judgement
	if pol.Verdict != y1564.Pass || pol.Policing != y1564.Policed || math.Abs(pol.PolicedAtBps-30e6) > 1 {
		t.Errorf("data policing: %s %s at %.0f: %v", pol.Verdict, pol.Policing, pol.PolicedAtBps, pol.Reasons)
	}
	vp := voice.Steps[4].Judgement
	if vp.Policing != y1564.NotPoliced || voice.ConfigVerdict != y1564.Fail {
		t.Errorf("voice policing: %s, config %s: %v", vp.Policing, voice.ConfigVerdict, vp.Reasons)
	}
	for _, s := range res.Services {
		if s.PerfVerdict != y1564.Pass || s.Performance.Figures.AvailPct != 100 || s.Performance.Figures.IntervalsS != 60 {
			t.Errorf("%s performance: %s, %+v", s.Name, s.PerfVerdict, s.Performance)
		}
	}
	if res.Verdict != y1564.Fail {
		t.Errorf("run verdict %s, want FAIL (voice is not policed)", res.Verdict)
	}
	// The trials as the engine sees them: payload = frame − 46, the
	// rate of frame bits × payload / frame, the service's DSCP, probes.
	tr := res.Config.Trial(voice0(res), y1564.PerformanceStep(voice0(res)), vocab.Up)
	if tr.Size != 210 || tr.DSCP != 46 || tr.RateBps != 4101563 || tr.EchoEvery != 24 || tr.Interval != time.Second {
		t.Errorf("voice's performance trial: %+v", tr)
	}
	// Over IPv6 a 256 B frame carries 190 B: 5 Mbit/s × 190 / 256 of
	// payload at the same 2,441 frames/s; a 64 B frame carries none.
	v6 := res.Config
	v6.IPv6 = true
	if tr := v6.Trial(voice0(res), y1564.PerformanceStep(voice0(res)), vocab.Up); tr.Size != 190 || tr.RateBps != 3710938 {
		t.Errorf("voice's performance trial over IPv6: %+v", tr)
	}
	v6.Services = []y1564.Service{{Name: "tiny", CIRBps: 1e6, FrameBytes: 64}}
	if err := v6.Validate(); err == nil {
		t.Error("a 64 B frame over IPv6 (no room for a UDP payload) was accepted")
	}
}

func voice0(r *result.Y1564) y1564.Service { return r.Config.Services[1] }

// A lossy line (1 %) fails the CIR steps on FLR and the performance test
// on FLR; a responder that vanishes mid-test returns what was measured,
// partial.
func TestY1564LossyAndPartial(t *testing.T) {
	cfg := result.Y1564Config{Services: y1564Services()[:1], Directions: []vocab.Direction{vocab.Down}, StepTime: 2 * time.Second, PerfTime: 10 * time.Second}
	res, err := RunY1564(context.Background(), &fakenet.Path{BaseRTT: 10 * time.Millisecond, RateBps: 100e6, LossPct: 1}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Services[0]
	// 1 % of 2,441 frames: 24 or 25 lost, as fakenet rounds them.
	if st := s.Steps[0]; st.Judgement.Verdict != y1564.Fail || math.Abs(st.Figures.FLRPct-1) > 0.05 || !strings.Contains(st.Judgement.Reasons[0], "above the SAC's 0.1 %") {
		t.Errorf("25 %% CIR on a lossy line: %s, FLR %.3f %%, %v", st.Judgement.Verdict, st.Figures.FLRPct, st.Judgement.Reasons)
	}
	if s.PerfVerdict != y1564.Fail || s.Direction != vocab.Down {
		t.Errorf("performance on a lossy line: %s %s", s.PerfVerdict, s.Direction)
	}
	res, err = RunY1564(context.Background(), &fakenet.Path{BaseRTT: 10 * time.Millisecond, RateBps: 100e6, StallAfter: 3}, cfg, nil)
	if !errors.Is(err, result.ErrPartial) || res == nil || len(res.Services[0].Steps) != 3 || res.Verdict != y1564.Fail {
		t.Fatalf("stalled: %v, %+v", err, res)
	}
}

func TestY1564ConfigRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(*result.Y1564Config)
		says string
	}{
		{"no services", func(c *result.Y1564Config) { c.Services = nil }, "0 services: 1 to 8 are required"},
		{"twice", func(c *result.Y1564Config) { c.Services[1].Name = "data" }, "named twice"},
		{"tiny frames", func(c *result.Y1564Config) { c.Services[0].FrameBytes = 63 }, "frame 63 B"},
		{"step above CIR", func(c *result.Y1564Config) { c.StepsPct = []float64{50, 120} }, "120"},
		{"no EIR policing", func(c *result.Y1564Config) { c.Services[0].CIRBps = 0 }, "cir"},
	} {
		cfg := result.Y1564Config{Services: y1564Services()}
		c.mod(&cfg)
		_, err := RunY1564(context.Background(), &fakenet.Path{}, cfg, nil)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.says)
		}
	}
}

// measure reads the engine's UDP test as frames: 466-byte datagrams are
// 512-byte frames, the probes' round trips become FTD (mean) and FDV
// (p99 − min), the intervals count sent as received + lost.
func TestY1564Measure(t *testing.T) {
	svc := y1564Services()[0]
	cfg := result.UDPConfig{Size: 466, Duration: 10 * time.Second}
	u := &result.UDP{Summary: result.UDPSummary{SenderRateBps: 466e5, ReceiverRateBps: 466e5 * 0.99, SentPackets: 1000, Lost: 10,
		Latency: &result.UDPLatency{Probes: 100, Replies: 99, Delays: stats.Delays{Count: 99, MinUs: 10_000, MeanUs: 10_500, P99Us: 12_250, MaxUs: 15_000}}},
		Intervals: []result.UDPInterval{{Packets: 95, Lost: 5}, {Packets: 100}}}
	f := y1564.Read(measure(svc, cfg, u), 50)
	if f.OfferedBps != 512e5 || math.Abs(f.IRBps-512e5*0.99) > 1e-6 || f.FLRPct != 1 || f.FTD != 10500*time.Microsecond || f.FDV != 2250*time.Microsecond {
		t.Errorf("figures %+v", f)
	}
	if f.IntervalsS != 2 || f.AvailPct != 100 {
		t.Errorf("availability %v over %d", f.AvailPct, f.IntervalsS)
	}
}

// failingVoice is a network whose EF (voice) streams fail at once while
// every other UDP stream runs until its context ends (or 10 s pass: the
// test's own bound), as a real stream of the 15-minute performance test
// would.
type failingVoice struct{ *fakenet.Path }

var errVoiceRefused = errors.New("responder refused the voice stream")

func (n failingVoice) UDP(ctx context.Context, cfg result.UDPConfig, f func(result.UDPInterval)) (*result.UDP, error) {
	if cfg.DSCP == 46 {
		return nil, errVoiceRefused
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(10 * time.Second):
		return nil, errors.New("not stopped")
	}
}

// TestY1564PerfStopsOnFailure: the performance test's first failing
// stream stops the others, and its error, not theirs (cancelled), is the
// one the run returns.
func TestY1564PerfStopsOnFailure(t *testing.T) {
	cfg := result.Y1564Config{Services: y1564Services(), Directions: []vocab.Direction{vocab.Up}, SkipConfig: true, PerfTime: 15 * time.Minute}
	begin := time.Now()
	_, err := RunY1564(context.Background(), failingVoice{&fakenet.Path{BaseRTT: 10 * time.Millisecond, RateBps: 100e6}}, cfg, nil)
	if took := time.Since(begin); took > 5*time.Second || !errors.Is(err, errVoiceRefused) || !strings.Contains(err.Error(), "service voice up") {
		t.Fatalf("took %v, err %v; want the voice stream's error at once, the data stream stopped", took, err)
	}
}
