package method

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/method/fakenet"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// TestExecuteEveryConfig: one entry point runs each engine test and
// method from its config, brackets it in start and finish events, and
// returns its document.
func TestExecuteEveryConfig(t *testing.T) {
	p := &fakenet.Path{BaseRTT: baseRTT, RateBps: cir, QueueBytes: 375_000}
	for _, c := range []struct {
		cfg  any
		step Step
		test func(result.Doc) bool
	}{
		{result.TCPConfig{Duration: 3 * time.Second}, StepTCP, func(d result.Doc) bool { return d.(*result.TCP).Summary.ThroughputBps > 0 }},
		{result.UDPConfig{RateBps: 50e6, Duration: 2 * time.Second}, StepUDP, func(d result.Doc) bool { return d.(*result.UDP).Summary.LossPct == 0 }},
		{result.RTTConfig{}, StepRTT, func(d result.Doc) bool { return d.(*result.RTT).Summary.MinUs == 20_000 }},
		{result.PMTUConfig{}, StepMTU, func(d result.Doc) bool { return d.(*result.PMTU).UpBytes == 1500 }},
		{result.TrainsConfig{RateBps: cir, RTT: baseRTT}, StepTrains, func(d result.Doc) bool {
			return len(d.(*result.Trains).Directions) == 2 && d.Head().Server.Software == "fakenet"
		}},
		{result.WindowSweepConfig{Windows: []int{100_000, 250_000, 500_000}, Duration: time.Second}, StepSweep,
			func(d result.Doc) bool { return len(d.(*result.WindowSweep).Points) == 3 }},
		{result.MsgLenSweepConfig{Sizes: []int{1000, 8000}, Duration: time.Second}, StepMsgLen,
			func(d result.Doc) bool { return len(d.(*result.MsgLenSweep).Points) == 2 }},
		{result.STAMPConfig{Count: 10}, StepSTAMP, func(d result.Doc) bool { return d.(*result.STAMP).Summary.Received == 10 }},
	} {
		var evs []Event
		d, err := Execute(context.Background(), p, c.cfg, func(e Event) { evs = append(evs, e) })
		if err != nil || d == nil || !c.test(d) {
			t.Errorf("%T: doc %+v, err %v", c.cfg, d, err)
			continue
		}
		if len(evs) < 2 || evs[0].Kind != Started || evs[0].Step != c.step || evs[len(evs)-1].Kind != Finished || evs[len(evs)-1].Step != c.step {
			t.Errorf("%T: events %+v; want the %s step's start first and its finish last", c.cfg, evs, c.step)
		}
	}
	if _, err := Execute(context.Background(), p, 42, nil); err == nil {
		t.Error("an int ran as a config")
	}
	if d, err := Execute(context.Background(), p, result.TCPConfig{Streams: -1}, nil); err == nil || d != nil {
		t.Errorf("a bad config: doc %v, err %v; want no document and an error", d, err)
	}
}

// TestRFC6349Events: the run's events bracket each step in order (the
// packet trains a step of their own within the shaping step, once per
// direction), carry the TCP and UDP tests' interval samples, and tell
// every warning the result keeps, as it happens.
func TestRFC6349Events(t *testing.T) {
	var evs []Event
	p := &fakenet.Path{BaseRTT: baseRTT, RateBps: 1e9, QueueBytes: 1 << 20, PoliceBps: 60e6, BucketBytes: 30_000}
	res, err := Run(context.Background(), p, result.RFC6349Config{CIRBps: cir, SweepPoints: 3}, func(e Event) { evs = append(evs, e) })
	if err != nil {
		t.Fatal(err)
	}
	var steps []Step
	var warnings []string
	samples := map[Step]int{}
	var stack []Step // the open steps, outermost first
	open := Step("")
	trains := 0
	for _, e := range evs {
		switch e.Kind {
		case Started:
			switch {
			case open == "":
				steps = append(steps, e.Step)
			case open == StepShaping && e.Step == StepTrains && e.Direction.Valid():
				trains++
			default:
				t.Fatalf("%s started inside %s", e.Step, open)
			}
			stack = append(stack, e.Step)
			open = e.Step
		case Finished:
			if e.Step != open || e.Text != "" {
				t.Fatalf("finish %+v inside %s", e, open)
			}
			stack = stack[:len(stack)-1]
			open = ""
			if len(stack) > 0 {
				open = stack[len(stack)-1]
			}
		case Warning:
			warnings = append(warnings, e.Text)
		case Sample:
			if e.Step != open || !e.Direction.Valid() || figures(e) != 1 {
				t.Fatalf("sample %+v in %s", e, open)
			}
			samples[e.Step]++
		}
	}
	if want := []Step{StepMTU, StepBaseline, StepWalk, StepSweep, StepThroughput, StepShaping}; !slices.Equal(steps, want) || len(stack) != 0 {
		t.Errorf("steps %v (%v left open), want %v", steps, stack, want)
	}
	if want := len(res.Shaping); trains != want {
		t.Errorf("%d train steps within shaping, want one per direction (%d)", trains, want)
	}
	if !slices.Equal(warnings, res.Warnings) {
		t.Errorf("warnings told %q, the result keeps %q", warnings, res.Warnings)
	}
	for _, s := range []Step{StepBaseline, StepWalk, StepSweep, StepThroughput, StepShaping} {
		if samples[s] == 0 {
			t.Errorf("no samples in %s (%v)", s, samples)
		}
	}
	if res.Throughput[vocab.Up] == nil {
		t.Error("no throughput up")
	}
}

// figures counts a sample's figures: exactly one is set.
func figures(e Event) int {
	n := 0
	for _, set := range []bool{e.TCP != nil, e.UDP != nil, e.Window != nil, e.MsgLen != nil} {
		if set {
			n++
		}
	}
	return n
}
