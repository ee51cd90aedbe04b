package method

import (
	"context"
	"slices"
	"testing"

	"github.com/fullpipe/fullpipe/internal/method/fakenet"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

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
