package method

import (
	"context"
	"fmt"
	"reflect"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// Runner is how one kind of test or method runs: the config type it
// takes and the function that runs such a config on a Network. progress
// hears each step start and finish, its samples, lines and warnings; the
// document is returned whole at the end (partial, with an error wrapping
// result.ErrPartial, when stopped early). The table of kinds (package
// kinds) holds one per kind; kinds.Execute picks it by the config's type
// and is what the CLI, an agent and the tests call.
type Runner struct {
	config reflect.Type
	run    func(context.Context, Network, any, Progress) (result.Doc, error)
}

// runnerOf ties run to configs of type C.
func runnerOf[C any](run func(ctx context.Context, n Network, c C, progress Progress) (result.Doc, error)) Runner {
	return Runner{config: reflect.TypeFor[C](), run: func(ctx context.Context, n Network, cfg any, progress Progress) (result.Doc, error) {
		return run(ctx, n, cfg.(C), progress)
	}}
}

// Takes says whether cfg is of the type r runs.
func (r Runner) Takes(cfg any) bool { return r.config != nil && reflect.TypeOf(cfg) == r.config }

// Run runs cfg on n, or says that r does not take its type.
func (r Runner) Run(ctx context.Context, n Network, cfg any, progress Progress) (result.Doc, error) {
	if !r.Takes(cfg) {
		return nil, fmt.Errorf("no test or method takes a config of type %T", cfg)
	}
	return r.run(ctx, n, cfg, progress)
}

// The runners, one per kind: an engine test's (TCP, UDP, RTT, PMTU), a
// method's, or a STAMP session's (to a reflector, no responder).
var (
	RFC6349Runner = runnerOf(func(ctx context.Context, n Network, c result.RFC6349Config, p Progress) (result.Doc, error) {
		return document(Run(ctx, n, c, p))
	})
	WindowSweepRunner = runnerOf(func(ctx context.Context, n Network, c result.WindowSweepConfig, p Progress) (result.Doc, error) {
		return step(StepSweep, p, func() (*result.WindowSweep, error) { return RunWindowSweep(ctx, n, c, p) })
	})
	MsgLenSweepRunner = runnerOf(func(ctx context.Context, n Network, c result.MsgLenSweepConfig, p Progress) (result.Doc, error) {
		return step(StepMsgLen, p, func() (*result.MsgLenSweep, error) { return RunMsgLenSweep(ctx, n, c, p) })
	})
	RFC2544Runner = runnerOf(func(ctx context.Context, n Network, c result.RFC2544Config, p Progress) (result.Doc, error) {
		return step(StepRFC2544, p, func() (*result.RFC2544, error) { return RunRFC2544(ctx, n, c, p) })
	})
	Y1564Runner = runnerOf(func(ctx context.Context, n Network, c result.Y1564Config, p Progress) (result.Doc, error) {
		return document(RunY1564(ctx, n, c, p))
	})
	TrainsRunner = runnerOf(func(ctx context.Context, n Network, c result.TrainsConfig, p Progress) (result.Doc, error) {
		return step(StepTrains, p, func() (*result.Trains, error) { return Trains(ctx, n, c, p) })
	})
	PingRunner = runnerOf(func(ctx context.Context, n Network, c result.PingConfig, p Progress) (result.Doc, error) {
		return step(StepPing, p, func() (*result.Ping, error) { return Ping(ctx, n, c, p, nil) })
	})
	TCPRunner = runnerOf(func(ctx context.Context, n Network, c result.TCPConfig, p Progress) (result.Doc, error) {
		return step(StepTCP, p, func() (*result.TCP, error) {
			dir := vocab.Of(c.Reverse)
			return n.TCP(ctx, c, func(iv result.TCPInterval) {
				p.emit(Event{Kind: Sample, Step: StepTCP, Direction: dir, TCP: &iv})
			})
		})
	})
	UDPRunner = runnerOf(func(ctx context.Context, n Network, c result.UDPConfig, p Progress) (result.Doc, error) {
		return step(StepUDP, p, func() (*result.UDP, error) {
			dir := vocab.Of(c.Reverse)
			return n.UDP(ctx, c, func(iv result.UDPInterval) {
				p.emit(Event{Kind: Sample, Step: StepUDP, Direction: dir, UDP: &iv})
			})
		})
	})
	RTTRunner = runnerOf(func(ctx context.Context, n Network, c result.RTTConfig, p Progress) (result.Doc, error) {
		return step(StepRTT, p, func() (*result.RTT, error) { return n.RTT(ctx, c, nil) })
	})
	PMTURunner = runnerOf(func(ctx context.Context, n Network, c result.PMTUConfig, p Progress) (result.Doc, error) {
		return step(StepMTU, p, func() (*result.PMTU, error) { return n.PMTU(ctx, c) })
	})
	STAMPRunner = runnerOf(func(ctx context.Context, n Network, c result.STAMPConfig, p Progress) (result.Doc, error) {
		return step(StepSTAMP, p, func() (*result.STAMP, error) { return n.STAMP(ctx, c) })
	})
)

// step runs one single-step test or method between its start and finish
// events.
func step[D result.Doc](s Step, progress Progress, f func() (D, error)) (result.Doc, error) {
	progress.emit(Event{Kind: Started, Step: s, Text: s.Title()})
	d, err := f()
	e := Event{Kind: Finished, Step: s}
	if err != nil {
		e.Text = err.Error()
	}
	progress.emit(e)
	return document(d, err)
}

// document keeps a nil pointer from becoming a non-nil interface.
func document[D result.Doc](d D, err error) (result.Doc, error) {
	var zero D
	if any(d) == any(zero) {
		return nil, err
	}
	return d, err
}
