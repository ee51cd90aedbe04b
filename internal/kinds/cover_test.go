package kinds

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/method"
	"github.com/fullpipe/fullpipe/internal/method/fakenet"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/schedule"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/y1564"
)

// runCase is a config run on a fake path.
type runCase struct {
	name string
	path func() *fakenet.Path
	cfg  any
}

// path is a fake path of rate bit/s at layer 2, RTT rtt and a queue of
// queue bytes, with what more the case sets.
func path(rate float64, rtt time.Duration, queue int, more func(*fakenet.Path)) func() *fakenet.Path {
	return func() *fakenet.Path {
		p := &fakenet.Path{BaseRTT: rtt, RateBps: rate, QueueBytes: queue}
		if more != nil {
			more(p)
		}
		return p
	}
}

// held holds every send of every train of its path (scheduled out
// halfway), so every train that loses packets after is sent again
// (the trains' resends, RFC 2544's back-to-back of a busy host).
func held(p *fakenet.Path) {
	p.TrainHold, p.HeldTries, p.HeldShorter = 2*time.Millisecond, 1<<20, 1<<20
}

// runCases are configs of every kind on paths that make the methods take
// their longer ways: retries and resends (held trains, a stalling or a
// slow generator), the second series of smaller trains (a queue or a
// bucket of a few packets), trains to the longest (a queue that loses
// nothing). A method's plan assumes the path carries its CIR (RFC 6349)
// or the rate its config states (trains): the paths here do.
func runCases() map[string][]runCase {
	clean := path(100e6, 20*ms, 250_000, nil)
	lossless := path(100e6, 20*ms, 0, nil) // no queue limit: no train decides before the longest
	smallQueue := path(100e6, 20*ms, 6_000, held)
	policer := path(1e9, 20*ms, 1<<20, func(p *fakenet.Path) { p.PoliceBps, p.BucketBytes = 60e6, 30_000 })
	services := []y1564.Service{{Name: "data", CIRBps: 20e6, EIRBps: 10e6, FrameBytes: 512}, {Name: "voice", CIRBps: 5e6, FrameBytes: 128, DSCP: 46}}
	return map[string][]runCase{
		"tcp":   {{"defaults", clean, result.TCPConfig{}}, {"latency", clean, result.TCPConfig{Latency: true, Bidir: true}}, {"bytes", clean, result.TCPConfig{Bytes: 1e6}}},
		"udp":   {{"defaults", clean, result.UDPConfig{}}, {"down, long drain", clean, result.UDPConfig{Reverse: true, Duration: 3 * time.Second, Drain: 2 * time.Second}}},
		"rtt":   {{"defaults", clean, result.RTTConfig{}}},
		"mtu":   {{"defaults", clean, result.PMTUConfig{}}, {"jumbo range", path(100e6, 300*ms, 0, nil), result.PMTUConfig{MinBytes: 1280, MaxBytes: 9000, Tries: 5}}},
		"stamp": {{"defaults", clean, result.STAMPConfig{}}},
		"ping":  {{"defaults", clean, result.PingConfig{}}, {"rate search, limited", path(0, ms, 0, func(p *fakenet.Path) { p.ICMPLimitPPS, p.ICMPBurst = 100, 50 }), result.PingConfig{RateSearch: true}}},
		"trains": {
			{"lossless, to the longest", lossless, result.TrainsConfig{RateBps: 100e6, RTT: 20 * ms}},
			{"small queue, every train held", smallQueue, result.TrainsConfig{RateBps: 100e6, RTT: 20 * ms}},
			{"policer", policer, result.TrainsConfig{RateBps: 1e9, CIRBps: 60e6, RTT: 20 * ms}},
		},
		"rfc6349": {
			{"clean", clean, result.RFC6349Config{CIRBps: 90e6}},
			{"lossless, trains to the longest", lossless, result.RFC6349Config{CIRBps: 90e6}},
			{"small queue, every train held, a sweep", smallQueue, result.RFC6349Config{CIRBps: 90e6, SweepPoints: 4}},
			{"slow generator", path(100e6, 20*ms, 250_000, func(p *fakenet.Path) { p.GeneratorFPS = 5000 }), result.RFC6349Config{CIRBps: 90e6}},
		},
		"sweep-window": {{"defaults", clean, result.WindowSweepConfig{}}},
		"sweep-msglen": {{"defaults", clean, result.MsgLenSweepConfig{}}},
		"rfc2544": {
			{"clean", path(100e6, 2*ms, 0, func(p *fakenet.Path) { p.QueuePackets = 40 }), result.RFC2544Config{LineRateBps: 100e6, FrameSizes: []int{64, 1518}}},
			{"stalling sender", path(100e6, ms, 0, func(p *fakenet.Path) { p.StallLossPct = 0.5 }), result.RFC2544Config{LineRateBps: 100e6, FrameSizes: []int{1518}}},
			{"slow generator", path(100e6, ms, 0, func(p *fakenet.Path) { p.GeneratorFPS = 50_000 }), result.RFC2544Config{LineRateBps: 100e6, FrameSizes: []int{64}}},
			{"held bursts", path(10e6, 2*ms, 0, func(p *fakenet.Path) { p.QueuePackets = 40; held(p) }), result.RFC2544Config{LineRateBps: 10e6, FrameSizes: []int{1518}, Tests: []string{result.BenchBackToBack}}},
		},
		"y1564": {
			{"clean", path(100e6, 10*ms, 0, nil), result.Y1564Config{Services: services}},
			{"policer", path(100e6, 10*ms, 0, func(p *fakenet.Path) { p.PoliceBps, p.BucketBytes = 30e6*494/512, 20000 }), result.Y1564Config{Services: services}},
		},
	}
}

// TestLengthCoversRun: for every kind, on representative configs and
// paths, what a run takes is within what the schedule books for it. The
// fake network is instantaneous, so a run's time is the engine's bound
// on each test the method made (package tester's cost of each call, at
// the path's RTT, its trains arriving at the path's rate), summed: the
// kind's cost at that RTT (its plan) must be at least that sum, in time
// of its own, sessions and TCP tests, and its slot at least the sum's.
// Y.1564's performance test runs its streams side by side: one session,
// the longest of them.
func TestLengthCoversRun(t *testing.T) {
	cases := runCases()
	for _, k := range All() {
		if len(cases[k.File]) == 0 {
			t.Errorf("%s: no case: add one to runCases", k.File)
		}
		for _, c := range cases[k.File] {
			t.Run(k.File+"/"+c.name, func(t *testing.T) {
				p := c.path()
				took := run(t, k, p, c.cfg)
				raw, err := json.Marshal(c.cfg)
				if err != nil {
					t.Fatal(err)
				}
				plan, err := k.cost.CostAt(raw, p.BaseRTT)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%d calls: %v in %d sessions (%d TCP); planned %v in %d (%d)", len(p.Made()), took.Run, took.Sessions, took.TCP, plan.Run, plan.Sessions, plan.TCP)
				if plan.Run < took.Run || plan.Sessions < took.Sessions || plan.TCP < took.TCP || plan.Slot(p.BaseRTT) < took.Slot(p.BaseRTT) {
					t.Errorf("planned %+v (slot %v), but the run took %+v (slot %v)", plan, plan.Slot(p.BaseRTT), took, took.Slot(p.BaseRTT))
				}
			})
		}
	}
}

// run runs cfg with k's runner on p and sums what its calls cost.
func run(t *testing.T, k Kind, p *fakenet.Path, cfg any) schedule.Cost {
	t.Helper()
	side := [2]int{-1, -1} // the calls of Y.1564's performance test, [from, to)
	_, err := k.run.Run(context.Background(), p, cfg, func(e method.Event) {
		if e.Step == method.StepY1564Perf && e.Kind == method.Started {
			side[0] = len(p.Made())
		}
		if e.Step == method.StepY1564Perf && e.Kind == method.Finished {
			side[1] = len(p.Made())
		}
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	var took, together schedule.Cost
	for i, call := range p.Made() {
		c := callCost(t, call, p)
		if i >= side[0] && i < side[1] {
			together = schedule.Longer(together, c, p.BaseRTT)
			continue
		}
		took = took.Plus(c)
	}
	return took.Plus(together)
}

// callCost is the engine's bound on one call: package tester's cost of
// its test, a train arriving at the path's rate.
func callCost(t *testing.T, call fakenet.Call, p *fakenet.Path) schedule.Cost {
	t.Helper()
	switch c := call.Config.(type) {
	case result.PMTUConfig:
		return tester.PMTUCost(c, p.BaseRTT)
	case result.RTTConfig:
		return tester.RTTCost(c)
	case result.UDPConfig:
		return tester.UDPCost(c)
	case result.TCPConfig:
		return tester.TCPCost(c)
	case result.TrainConfig:
		return tester.TrainCost(c, tester.TrainSpan(c, p.RateBps), p.BaseRTT)
	case result.WindowPointConfig:
		return tester.WindowPointCost(c)
	case result.PingConfig:
		return tester.PingCost(c)
	case result.STAMPConfig:
		return tester.STAMPCost(c)
	}
	t.Fatalf("%s: no engine cost for a %T", call.What, call.Config)
	return schedule.Cost{}
}

// TestRunCasesTakeLongerWays: the cases make the methods take their
// longer ways, so that TestLengthCoversRun checks the plans there: a
// series of trains runs to its longest train (the last not a doubling of
// the one before: the path's bound), a held train is sent trainTries
// times and a second series of smaller packets follows, RFC 2544 runs a
// trial again.
func TestRunCasesTakeLongerWays(t *testing.T) {
	for _, c := range []struct {
		kind, name string
		check      func(trains []result.TrainConfig, udp []result.UDPConfig) string
	}{
		{"trains", "lossless, to the longest", toTheLongest},
		{"rfc6349", "lossless, trains to the longest", toTheLongest},
		{"trains", "small queue, every train held", heldAndSmaller},
		{"rfc6349", "small queue, every train held, a sweep", heldAndSmaller},
		{"rfc2544", "stalling sender", func(_ []result.TrainConfig, udp []result.UDPConfig) string {
			if most := mostAlike(udp); most < 2 {
				return fmt.Sprintf("no trial run again (%d streams)", len(udp))
			}
			return ""
		}},
	} {
		trains, udp := madeOn(t, c.kind, c.name)
		if why := c.check(trains, udp); why != "" {
			t.Errorf("%s/%s: %s", c.kind, c.name, why)
		}
	}
}

// madeOn runs the case of kind named name and returns its trains and
// its UDP streams.
func madeOn(t *testing.T, kind, name string) (trains []result.TrainConfig, udp []result.UDPConfig) {
	t.Helper()
	for _, c := range runCases()[kind] {
		if c.name != name {
			continue
		}
		k, _ := Named(kind)
		p := c.path()
		run(t, k, p, c.cfg)
		for _, call := range p.Made() {
			switch cfg := call.Config.(type) {
			case result.TrainConfig:
				trains = append(trains, cfg)
			case result.UDPConfig:
				udp = append(udp, cfg)
			}
		}
		return trains, udp
	}
	t.Fatalf("no case %s/%s", kind, name)
	return nil, nil
}

// toTheLongest: each direction's series of trains ends in a train that
// is not twice the one before it.
func toTheLongest(trains []result.TrainConfig, _ []result.UDPConfig) string {
	last := map[bool][]int{}
	for _, c := range trains {
		last[c.Reverse] = append(last[c.Reverse], c.Packets)
	}
	for rev, ns := range last {
		if n := len(ns); n < 2 || ns[n-1] >= 2*ns[n-2] {
			return fmt.Sprintf("reverse %v: trains of %v packets: want the last capped by the longest", rev, ns)
		}
	}
	return ""
}

// heldAndSmaller: a train sent trainTries (6) times, and trains of more
// than one packet size.
func heldAndSmaller(trains []result.TrainConfig, _ []result.UDPConfig) string {
	sizes := map[int]bool{}
	for _, c := range trains {
		sizes[c.Size] = true
	}
	if most := mostAlike(trains); most != 6 || len(sizes) < 2 {
		return fmt.Sprintf("a train sent at most %d times, in %d sizes: want 6, and a second series", most, len(sizes))
	}
	return ""
}

// mostAlike is how many of cfgs are the same config, at the most.
func mostAlike[C any](cfgs []C) int {
	n, most := map[string]int{}, 0
	for _, c := range cfgs {
		k := fmt.Sprintf("%+v", c)
		n[k]++
		most = max(most, n[k])
	}
	return most
}
