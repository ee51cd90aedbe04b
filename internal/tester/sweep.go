package tester

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/schedule"
)

// Probe session and reply limits of a sweep point.
const (
	probeReplyWait = 2 * time.Second // a full 38 kB queue at 256 kbit/s holds 1.2 s
)

// WindowPointCost is one sweep point's own time (RunWindowPoint): its
// probe session's baseline and the wait for its replies, the TCP test in
// a session of its own, then the wait for the loaded probes' replies.
func WindowPointCost(cfg result.WindowPointConfig) schedule.Cost {
	cfg = cfg.WithDefaults()
	probes := schedule.Cost{Run: schedule.SatAdd(owdSeriesTime(cfg.Baseline, cfg.BaselineGap), 2*probeReplyWait), Sessions: 1}
	return probes.Plus(TCPCost(cfg.TCP))
}

// RunWindowPoint runs one sweep point: it opens a probe session (kind
// rtt), measures the baseline on the idle path, then runs the TCP test
// with probes every ProbeGap until it ends. A TCP test stopped early
// returns what it measured with an error wrapping result.ErrPartial.
func RunWindowPoint(ctx context.Context, t Target, cfg result.WindowPointConfig) (*result.WindowPointRun, error) {
	cfg, err := checked("window point", cfg)
	if err != nil {
		return nil, err
	}
	s, err := open(ctx, t, cfg.Request())
	if err != nil {
		return nil, err
	}
	defer s.ctrl.Close()
	p, err := newOWDProber(s, cfg.DSCPs, cfg.Seed)
	if err != nil {
		return nil, err
	}
	defer p.close()
	if err := s.startTest(ctx); err != nil {
		return nil, fmt.Errorf("start probes: %w", err)
	}
	run := &result.WindowPointRun{}
	from, to := p.series(ctx, cfg.Baseline, cfg.BaselineGap)
	run.Baseline, run.BaselineSent = p.collect(ctx, from, to, probeReplyWait, 0, 1<<62)

	loadCtx, stopLoad := context.WithCancel(ctx)
	probed := make(chan [2]uint64, 1)
	go func() { // ends when stopLoad is called
		f, t := p.series(loadCtx, 0, cfg.ProbeGap)
		probed <- [2]uint64{f, t}
	}()
	res, terr := RunTCP(ctx, t, cfg.TCP, nil)
	stopLoad()
	rng := <-probed
	run.TCP = res
	if res != nil {
		// The TCP test's clock started at res.Meta.Started (a time with a
		// monotonic reading); count probes from Settle after it to the end
		// of the sending.
		start := res.Meta.Started.Sub(p.clk.Start()).Nanoseconds()
		run.Loaded, run.LoadedSent = p.collect(ctx, rng[0], rng[1], probeReplyWait, start+cfg.Settle.Nanoseconds(), start+cfg.TCP.Duration.Nanoseconds())
	}
	msgs := make(chan serverMsg, 4)
	go s.readLoop(msgs)
	s.stopAndWait("done", msgs)
	if terr != nil {
		if res == nil || !errors.Is(terr, result.ErrPartial) {
			return nil, terr
		}
		return run, terr
	}
	return run, nil
}
