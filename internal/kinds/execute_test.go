package kinds

import (
	"context"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/method"
	"github.com/fullpipe/fullpipe/internal/method/fakenet"
	"github.com/fullpipe/fullpipe/internal/result"
)

// TestExecuteEveryConfig: one entry point runs each engine test and
// method from its config (the row whose runner takes its type), brackets it in start and finish events, and
// returns its document.
func TestExecuteEveryConfig(t *testing.T) {
	const cir, baseRTT = 100e6, 20 * time.Millisecond
	p := &fakenet.Path{BaseRTT: baseRTT, RateBps: cir, QueueBytes: 375_000}
	for _, c := range []struct {
		cfg  any
		step method.Step
		test func(result.Doc) bool
	}{
		{result.TCPConfig{Duration: 3 * time.Second}, method.StepTCP, func(d result.Doc) bool { return d.(*result.TCP).Summary.ThroughputBps > 0 }},
		{result.UDPConfig{RateBps: 50e6, Duration: 2 * time.Second}, method.StepUDP, func(d result.Doc) bool { return d.(*result.UDP).Summary.LossPct == 0 }},
		{result.RTTConfig{}, method.StepRTT, func(d result.Doc) bool { return d.(*result.RTT).Summary.MinUs == 20_000 }},
		{result.PMTUConfig{}, method.StepMTU, func(d result.Doc) bool { return d.(*result.PMTU).UpBytes == 1500 }},
		{result.TrainsConfig{RateBps: cir, RTT: baseRTT}, method.StepTrains, func(d result.Doc) bool {
			return len(d.(*result.Trains).Directions) == 2 && d.Head().Server.Software == "fakenet"
		}},
		{result.WindowSweepConfig{Windows: []int{100_000, 250_000, 500_000}, Duration: time.Second}, method.StepSweep,
			func(d result.Doc) bool { return len(d.(*result.WindowSweep).Points) == 3 }},
		{result.MsgLenSweepConfig{Sizes: []int{1000, 8000}, Duration: time.Second}, method.StepMsgLen,
			func(d result.Doc) bool { return len(d.(*result.MsgLenSweep).Points) == 2 }},
		{result.STAMPConfig{Count: 10}, method.StepSTAMP, func(d result.Doc) bool { return d.(*result.STAMP).Summary.Received == 10 }},
	} {
		var evs []method.Event
		d, err := Execute(context.Background(), p, c.cfg, func(e method.Event) { evs = append(evs, e) })
		if err != nil || d == nil || !c.test(d) {
			t.Errorf("%T: doc %+v, err %v", c.cfg, d, err)
			continue
		}
		if len(evs) < 2 || evs[0].Kind != method.Started || evs[0].Step != c.step || evs[len(evs)-1].Kind != method.Finished || evs[len(evs)-1].Step != c.step {
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
