package y1564

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/stats"
)

var data = Service{Name: "data", CIRBps: 20e6, EIRBps: 10e6, FrameBytes: 512, DSCP: 0,
	SAC: SAC{MaxFLRPct: 0.1, MaxFTD: 20 * time.Millisecond, MaxFDV: 5 * time.Millisecond, MinAvailPct: 99.9}}

func TestSteps(t *testing.T) {
	got := Steps(data, nil)
	want := []float64{5e6, 10e6, 15e6, 20e6, 30e6, 32.5e6}
	if len(got) != len(want) {
		t.Fatalf("%d steps, want %d: %+v", len(got), len(want), got)
	}
	for i, st := range got {
		if st.RateBps != want[i] {
			t.Errorf("step %d (%s): %.0f bit/s, want %.0f", i, st.Name(), st.RateBps, want[i])
		}
	}
	if got[4].Kind != StepEIR || got[5].Kind != StepPolicing {
		t.Errorf("kinds %s, %s", got[4].Kind, got[5].Kind)
	}
	noEIR := data
	noEIR.EIRBps = 0
	s := Steps(noEIR, []float64{50, 100})
	if len(s) != 3 || s[2].Kind != StepPolicing || s[2].RateBps != 25e6 {
		t.Errorf("no EIR: %+v, want 50 %%, 100 %%, policing at 125 %% CIR", s)
	}
	// 512-byte frames at 20 Mbit/s: 4,882.8 frames/s, 466 B of UDP payload each.
	if fps := data.FramesPerSecond(20e6); math.Abs(fps-4882.8125) > 1e-9 {
		t.Errorf("fps %v", fps)
	}
	if p := data.PayloadBps(20e6, false); math.Abs(p-20e6*466/512) > 1e-6 {
		t.Errorf("payload %v", p)
	}
	// Over IPv6 the header is 20 B longer: 446 B of payload a frame, and
	// the same 4,882.8 frames/s pace 20 Mbit/s × 446 / 512 of payload.
	if n, p := data.Payload(true), data.PayloadBps(20e6, true); n != 446 || math.Abs(p-20e6*446/512) > 1e-6 {
		t.Errorf("IPv6: payload %d B, %v bit/s", n, p)
	}
}

func TestAvailability(t *testing.T) {
	for _, c := range []struct {
		name    string
		ivs     []Interval
		pct     float64
		un, cnt int
	}{
		{"clean", []Interval{{100, 0}, {100, 0}}, 100, 0, 2},
		{"one outage", []Interval{{100, 0}, {100, 60}, {100, 0}, {100, 50}}, 75, 1, 4}, // 50 % is not above 50 %
		{"idle seconds skipped", []Interval{{0, 0}, {100, 100}}, 0, 1, 1},
		{"none", nil, 0, 0, 0},
	} {
		pct, un, cnt := Availability(c.ivs, 50)
		if pct != c.pct || un != c.un || cnt != c.cnt {
			t.Errorf("%s: %v %% %d/%d, want %v %% %d/%d", c.name, pct, un, cnt, c.pct, c.un, c.cnt)
		}
	}
}

// judge measures a step of secs at offered, with ir arriving.
func judge(st Step, offered, ir float64, secs float64, d *Delay) Judgement {
	f := judgeFigures(st, offered, ir, secs)
	f.Delay = d
	if d != nil && d.Replies > 0 {
		f.FTD, f.FDV = ns(d.MeanUs), ns(d.P99Us)-ns(d.MinUs)
	}
	return JudgeStep(data, st, f)
}

// judgeFigures are the figures of a step of secs at offered, with ir
// arriving.
func judgeFigures(st Step, offered, ir float64, secs float64) Figures {
	fps := data.FramesPerSecond(1)
	sent := uint64(offered * fps * secs)
	got := uint64(ir * fps * secs)
	return Read(Measure{Seconds: secs, OfferedBps: offered, IRBps: ir, SentFrames: sent, LostFrames: sent - got}, 50)
}

func TestJudgeStep(t *testing.T) {
	ok := &Delay{Probes: 100, Replies: 100, Delays: stats.Delays{MinUs: 10_000, MeanUs: 11_000, P99Us: 13_000}}
	slow := &Delay{Probes: 100, Replies: 100, Delays: stats.Delays{MinUs: 10_000, MeanUs: 25_000, P99Us: 40_000}}
	steps := Steps(data, nil)
	cir, eir, pol := steps[3], steps[4], steps[5]
	// A 30 Mbit/s policer with a 12,176 B bucket over 10 s lets through
	// 30 Mbit/s + 9.7 kbit/s; the tolerance is 9.7 + 1.6 + 150 kbit/s.
	tol := Tolerance(data, 30e6, 10)
	if math.Abs(tol-(12176*8/10.0+2*512*8/10.0+150e3)) > 1e-6 {
		t.Fatalf("tolerance %v", tol)
	}
	for _, c := range []struct {
		name     string
		st       Step
		ir       float64
		d        *Delay
		verdict  Verdict
		policing Policing
		says     string
	}{
		{"clean CIR", cir, 20e6, ok, Pass, "", "within"},
		{"lossy CIR", cir, 19.9e6, ok, Fail, "", "FLR 0.502 %"},
		{"slow CIR", cir, 20e6, slow, Fail, "", "FTD 25ms"},
		{"jittery CIR", cir, 20e6, slow, Fail, "", "FDV 30ms"},
		{"no probes back", cir, 20e6, &Delay{Probes: 10}, Fail, "", "none of 10"},
		{"EIR partly lost", eir, 25e6, nil, Pass, "", "allowed"},
		{"EIR below CIR", eir, 19e6, nil, Fail, "", "below the CIR"},
		{"policed at CIR+EIR", pol, 30.05e6, nil, Pass, Policed, "policing observed at 30.05 Mbit/s"},
		{"not policed", pol, 32.5e6, nil, Fail, NotPoliced, "not policed"},
		{"policed below CIR", pol, 18e6, nil, Fail, Policed, "below the CIR"},
	} {
		j := judge(c.st, c.st.RateBps, c.ir, 10, c.d)
		text := strings.Join(j.Reasons, "; ")
		if j.Verdict != c.verdict || j.Policing != c.policing || !strings.Contains(text, c.says) {
			t.Errorf("%s: %s %q (%s), want %s %q saying %q", c.name, j.Verdict, j.Policing, text, c.verdict, c.policing, c.says)
		}
	}
	// A sender 10 ms late at 20 Mbit/s catches up with 25,000 B, above
	// the 12,176 B burst: the loss it caused is the host's. 2 ms late
	// (5,000 B) is not: the loss is the path's.
	for _, c := range []struct {
		slip time.Duration
		want Verdict
	}{{10 * time.Millisecond, HostLimited}, {2 * time.Millisecond, Fail}} {
		f := Figures{Seconds: 10, OfferedBps: 20e6, IRBps: 19e6, SentFrames: 48828, LostFrames: 2441, FLRPct: 5, SenderMaxSlip: c.slip}
		if j := JudgeStep(data, cir, f); j.Verdict != c.want {
			t.Errorf("slip %v: %s %v, want %s", c.slip, j.Verdict, j.Reasons, c.want)
		}
	}
	// 2,000 of 2,441 frames lost in the receiving socket: the path lost
	// 441, 0.9 %, still above 0.1 %: FAIL; all but 40 of them: 0.08 %,
	// HOST-LIMITED.
	for _, c := range []struct {
		drops uint64
		want  Verdict
	}{{2000, Fail}, {2401, HostLimited}} {
		f := Read(Measure{Seconds: 10, OfferedBps: 20e6, IRBps: 19e6, SentFrames: 48828, LostFrames: 2441, ReceiverDrops: c.drops}, 50)
		if j := JudgeStep(data, cir, f); j.Verdict != c.want {
			t.Errorf("receiver drops %d: %s %v, want %s", c.drops, j.Verdict, j.Reasons, c.want)
		}
	}
	// At the policing step the same burst does not move the policer's
	// long-run rate: still read as policing.
	f := Figures{Seconds: 10, OfferedBps: 32.5e6, IRBps: 30e6, SentFrames: 79345, LostFrames: 6104, FLRPct: 7.7, SenderMaxSlip: 10 * time.Millisecond}
	if j := JudgeStep(data, pol, f); j.Verdict != Pass || j.Policing != Policed {
		t.Errorf("policing after a slip: %s %q %v", j.Verdict, j.Policing, j.Reasons)
	}
	// A sender late in bursts that held 32.5 Mbit/s on average: the
	// policing step is judged all the same (a policer passes no more than
	// its rate and bucket whatever the bursts), "not policed" too; an IR
	// below the CIR is the stalls' possible doing: HOST-LIMITED.
	for _, c := range []struct {
		ir       float64
		want     Verdict
		policing Policing
	}{{30e6, Pass, Policed}, {32.5e6, Fail, NotPoliced}, {18e6, HostLimited, Policed}} {
		f := judgeFigures(pol, 32.5e6, c.ir, 10)
		f.GeneratorLimited, f.SenderLate, f.SenderMaxSlip = true, f.SentFrames/10, 60*time.Millisecond
		j := JudgeStep(data, pol, f)
		if j.Verdict != c.want || j.Policing != c.policing {
			t.Errorf("late sender, policing step at IR %.0f: %s %q %v, want %s %q", c.ir, j.Verdict, j.Policing, j.Reasons, c.want, c.policing)
		}
		// 12,176 B lasts 3.2 ms at 30 Mbit/s: a 60 ms stall wastes tokens.
		if c.want == Pass && !strings.Contains(strings.Join(j.Reasons, "; "), "may read low: the sender stalled 60ms, longer than the bucket lasts at CIR+EIR (3ms)") {
			t.Errorf("no warning that the policed rate may read low: %v", j.Reasons)
		}
	}
	lim := JudgeStep(data, cir, Figures{GeneratorLimited: true, OfferedBps: 12e6})
	if lim.Verdict != HostLimited || !strings.Contains(lim.Reasons[0], "sent 12.00 Mbit/s of the 20.00") {
		t.Errorf("generator-limited: %+v", lim)
	}
	late := JudgeStep(data, cir, Figures{GeneratorLimited: true, OfferedBps: 20e6, SentFrames: 1000, SenderLate: 100, SenderMaxSlip: 3 * time.Millisecond})
	if late.Verdict != HostLimited || !strings.Contains(late.Reasons[0], "10 % of its frames more than 1 ms behind schedule (up to 3ms)") {
		t.Errorf("generator late: %+v", late)
	}
}

func TestPerformanceAvailability(t *testing.T) {
	ivs := make([]Interval, 100)
	for i := range ivs {
		ivs[i] = Interval{Sent: 4883}
	}
	ivs[7].Lost = 4883 // a second of outage: 99 % available
	m := Measure{Seconds: 100, OfferedBps: 20e6, IRBps: 20e6 * 0.99, SentFrames: 488300, LostFrames: 4883, Intervals: ivs}
	j := JudgeStep(data, PerformanceStep(data), Read(m, 50))
	text := strings.Join(j.Reasons, "; ")
	if j.Verdict != Fail || !strings.Contains(text, "availability 99 %") || !strings.Contains(text, "FLR 1 %") {
		t.Errorf("%s: %s", j.Verdict, text)
	}
}

func TestCombine(t *testing.T) {
	if Combine(Pass, HostLimited, Pass) != HostLimited || Combine(HostLimited, Fail) != Fail || Combine(Pass) != Pass || Combine() != Fail {
		t.Error("Combine")
	}
}
