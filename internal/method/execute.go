package method

import (
	"context"
	"fmt"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// Execute runs any test or method on n: cfg is an engine test's config
// (result.TCPConfig, UDPConfig, RTTConfig, PMTUConfig) or a method's
// (RFC6349Config, WindowSweepConfig, MsgLenSweepConfig, TrainsConfig,
// RFC2544Config, Y1564Config), or a STAMP session's (STAMPConfig: to a reflector, no
// responder).
// progress hears each step start and finish, its samples, lines and
// warnings; the document is returned whole at the end (partial, with an
// error wrapping result.ErrPartial, when stopped early). It is what the
// CLI, an agent and the tests all call.
func Execute(ctx context.Context, n Network, cfg any, progress Progress) (result.Doc, error) {
	switch c := cfg.(type) {
	case result.RFC6349Config:
		return document(Run(ctx, n, c, progress))
	case result.WindowSweepConfig:
		return step(StepSweep, progress, func() (*result.WindowSweep, error) { return RunWindowSweep(ctx, n, c, progress) })
	case result.MsgLenSweepConfig:
		return step(StepMsgLen, progress, func() (*result.MsgLenSweep, error) { return RunMsgLenSweep(ctx, n, c, progress) })
	case result.RFC2544Config:
		return step(StepRFC2544, progress, func() (*result.RFC2544, error) { return RunRFC2544(ctx, n, c, progress) })
	case result.Y1564Config:
		return document(RunY1564(ctx, n, c, progress))
	case result.TrainsConfig:
		return step(StepTrains, progress, func() (*result.Trains, error) { return Trains(ctx, n, c, progress) })
	case result.PingConfig:
		return step(StepPing, progress, func() (*result.Ping, error) { return Ping(ctx, n, c, progress, nil) })
	case result.TCPConfig:
		return step(StepTCP, progress, func() (*result.TCP, error) {
			dir := vocab.Of(c.Reverse)
			return n.TCP(ctx, c, func(iv result.TCPInterval) {
				progress.emit(Event{Kind: Sample, Step: StepTCP, Direction: dir, TCP: &iv})
			})
		})
	case result.UDPConfig:
		return step(StepUDP, progress, func() (*result.UDP, error) {
			dir := vocab.Of(c.Reverse)
			return n.UDP(ctx, c, func(iv result.UDPInterval) {
				progress.emit(Event{Kind: Sample, Step: StepUDP, Direction: dir, UDP: &iv})
			})
		})
	case result.RTTConfig:
		return step(StepRTT, progress, func() (*result.RTT, error) { return n.RTT(ctx, c, nil) })
	case result.PMTUConfig:
		return step(StepMTU, progress, func() (*result.PMTU, error) { return n.PMTU(ctx, c) })
	case result.STAMPConfig:
		return step(StepSTAMP, progress, func() (*result.STAMP, error) { return n.STAMP(ctx, c) })
	}
	return nil, fmt.Errorf("no test or method takes a config of type %T", cfg)
}

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
