package lab

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/result/resulttest"
	"github.com/fullpipe/fullpipe/internal/y1564"
)

// runY1564 runs fullpipe y1564 (up) from the client namespace against a
// responder in the server namespace, each run one the lab held
// (RateBudget: its figures are rates over 4-5 s steps, frame counts and
// the latency probes' minimum); its document must validate against
// docs/schema/y1564.schema.json. A run this host's sender or responder
// disturbed is run again, up to 3 times: one the tool itself marks
// HOST-LIMITED (its sender fell behind), one that lost more frames than
// the lab dropped on the path (the forwarder lost none of its own in a
// held run, so the rest were lost in the responder's socket), or one
// whose sender stalled at the policing step longer than the policer's
// bucket lasts at its rate (stall, 54 ms here): the policer's tokens
// went unused and its rate reads low. The 2 cores are shared.
func runY1564(t *testing.T, ctx context.Context, bin string, l *Lab, stall time.Duration, args ...string) result.Y1564 {
	t.Helper()
	var r result.Y1564
	for try := 1; try <= 3; try++ {
		a := held(t, l, RateBudget, func(int) { r = runY1564Once(t, ctx, bin, l, args...) })
		var path, lost uint64
		stalled := false
		for _, n := range a.Dirs[0].Drops {
			path += n
		}
		for _, s := range r.Services {
			for _, st := range append(s.Steps, derefStep(s.Performance)...) {
				lost += st.Figures.LostFrames
				stalled = stalled || st.Step.Kind == y1564.StepPolicing && st.Figures.SenderMaxSlip > stall
			}
		}
		t.Logf("try %d: %s; %d frames lost, %d dropped on the path (the lab's drops by cause %v); stalled at the policing step: %v", try, r.Verdict, lost, path, a.Dirs[0].Drops, stalled)
		if r.Verdict != y1564.HostLimited && lost <= path && !stalled {
			return r
		}
	}
	t.Fatalf("this host's sender or responder disturbed every try (HOST-LIMITED, or frames lost outside the path): rerun on a quieter host")
	return r
}

func runY1564Once(t *testing.T, ctx context.Context, bin string, l *Lab, args ...string) result.Y1564 {
	t.Helper()
	var raw json.RawMessage
	_ = clientJSON(t, ctx, l, &raw, append([]string{bin, "y1564", l.Server.Addr.String(), "--json", "--direction", "up"}, args...)...) // FAIL exits 1; the test judges the JSON
	resulttest.Validate(t, raw)
	var r result.Y1564
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Services {
		for _, st := range append(s.Steps, derefStep(s.Performance)...) {
			t.Logf("%s %s %s: offered %.3f, IR %.3f Mbit/s, FLR %.3g %%, FTD %v, FDV %v, avail %.4g %%, sender slip %v: %s %v", s.Name, s.Direction, st.Step.Name(),
				st.Figures.OfferedBps/1e6, st.Figures.IRBps/1e6, st.Figures.FLRPct, st.Figures.FTD, st.Figures.FDV, st.Figures.AvailPct, st.Figures.SenderMaxSlip, st.Judgement.Verdict, st.Judgement.Reasons)
		}
	}
	return r
}

func derefStep(s *result.Y1564Step) []result.Y1564Step {
	if s == nil {
		return nil
	}
	return []result.Y1564Step{*s}
}

// TestY1564Policer: a 100 Mbit/s, 5 ms path with a policer at CIR + EIR
// of the data service (CIR 20 + EIR 10 Mbit/s of 1518-byte frames: 2,677
// frames/s at the policing step, few enough that a shared 2-core host
// keeps up). The lab's policer counts IP bytes, frame − 18: 30 Mbit/s of
// frames is 30 M × 1500 / 1518 = 29.644 Mbit/s of IP, and its
// 200,000-byte bucket 202,400 B of frames (the service's burst=). The
// bucket is large so that a stall of this host's sender or of the lab's
// forwarder (tens of ms: their catch-up comes as a burst) does not
// overflow it at the CIR steps: 200 kB is 80 ms at the 100 % step's 20
// Mbit/s. Each step runs 4 s.
//
//   - The CIR steps (5 to 20 Mbit/s) pass.
//   - CIR + EIR (30 Mbit/s, the policer's rate) passes: the IR reaches
//     the CIR; what the policer drops of the sender's jitter is above it.
//   - The policing step offers 32.5 Mbit/s; a policer passes its rate
//     plus its bucket over the step: 30 M + 202,400 × 8 / 4 s = 30.40
//     Mbit/s. It is flagged "policed" with the IR within the judgement's
//     own tolerance of 30 Mbit/s (bucket over the step, two frames, 0.5 %:
//     0.56 Mbit/s), and passes.
//   - The latency probes' least round trip is the path's (10-10.75 ms).
//
// Then the performance test (5 s) runs data at its CIR beside a second
// service, voice (CIR 5 Mbit/s, 512-byte frames, DSCP 46): 24.6 Mbit/s of
// IP under the policer's 29.6, so both pass, every second available,
// each IR within 1 % of its CIR (the receiver's count over its own span).
func TestY1564Policer(t *testing.T) {
	needRoot(t)
	bin := buildFullpipe(t)
	l := startLab(t, "ty1564", Direction{RateBps: 100e6, Delay: 5 * time.Millisecond, PoliceBps: 30_000_000 * 1500 / 1518, PoliceBurst: 200000})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute) // up to 3 × 3 held runs of about 30 s
	defer cancel()
	startResponder(t, ctx, bin, l)
	data := "name=data,cir=20M,eir=10M,frame=1518,burst=202400,flr=0.1,avail=99.9"
	stall := 202400 * 8 * time.Second / 30_000_000 // the bucket lasts 54 ms at 30 Mbit/s
	r := runY1564(t, ctx, bin, l, stall, "--service", data, "--step-time", "4s", "--skip-perf")
	if len(r.Services) != 1 || len(r.Services[0].Steps) != 6 {
		t.Fatalf("services %+v", r.Services)
	}
	steps := r.Services[0].Steps
	for _, st := range steps[:5] {
		if st.Judgement.Verdict != y1564.Pass {
			t.Errorf("%s: %s %v", st.Step.Name(), st.Judgement.Verdict, st.Judgement.Reasons)
		}
	}
	// The latency probes' least round trip is the path's: 2 × 5 ms, plus
	// a 1518-byte frame's serialisation at 100 Mbit/s each way (2 × 0.123
	// ms), plus the TUN devices' 0.1-0.2 ms (TestAddedRTT): 10.25-10.45
	// ms; 10 to 10.75 ms allows the probes' own timing.
	for _, st := range steps[:4] {
		d := st.Figures.Delay
		if d == nil || d.Replies == 0 || d.MinUs < 10_000 || d.MinUs > 10_750 {
			t.Errorf("%s: latency probes %+v, want the least round trip within 10-10.75 ms", st.Step.Name(), d)
		}
	}
	pol := steps[5]
	j := pol.Judgement
	if j.Verdict != y1564.Pass || j.Policing != y1564.Policed {
		t.Errorf("policing step: %s %q %v, want PASS, policed", j.Verdict, j.Policing, j.Reasons)
	}
	if math.Abs(pol.Figures.IRBps-30e6) > j.ToleranceBps {
		t.Errorf("policing step: IR %.3f Mbit/s, want 30 ± %.3f (CIR+EIR and the tolerance)", pol.Figures.IRBps/1e6, j.ToleranceBps/1e6)
	}
	if r.Verdict != y1564.Pass {
		t.Errorf("configuration test: %s", r.Verdict)
	}

	voice := "name=voice,cir=5M,frame=512,dscp=46,flr=0.1,avail=99.9"
	p := runY1564(t, ctx, bin, l, stall, "--service", data, "--service", voice, "--perf-time", "5s", "--skip-config")
	if len(p.Services) != 2 || p.Verdict != y1564.Pass {
		t.Fatalf("performance test: %s, %d services", p.Verdict, len(p.Services))
	}
	for i, cir := range []float64{20e6, 5e6} {
		f := p.Services[i].Performance.Figures
		if f.AvailPct != 100 || f.IntervalsS < 5 || math.Abs(f.IRBps-cir) > 0.01*cir {
			t.Errorf("%s: IR %.3f Mbit/s, avail %g %% over %d s; want its CIR ± 1 %%, 100 %%", p.Services[i].Name, f.IRBps/1e6, f.AvailPct, f.IntervalsS)
		}
	}
}
