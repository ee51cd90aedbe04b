package tester

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/sweep"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// WindowPointConfig is one point of a window sweep: a TCP test at an
// exact window with stamped UDP probes before it (the baseline) and
// during it (the load).
type WindowPointConfig struct {
	TCP result.TCPConfig
	// DSCPs are the probe classes, used in turn (at least one).
	DSCPs []int
	// Baseline probes are sent BaselineGap apart before the load.
	Baseline    int
	BaselineGap time.Duration
	// ProbeGap is the period of probes during the load.
	ProbeGap time.Duration
	// Settle: probes and rate intervals earlier than this after the TCP
	// test's start are not counted (slow start, the queue filling).
	Settle time.Duration
	// Seed draws the probes' send times within their slots.
	Seed uint64
}

// WindowPointRun is what one point measured.
type WindowPointRun struct {
	TCP          *result.TCP
	Baseline     []sweep.Probe
	BaselineSent []int
	Loaded       []sweep.Probe
	LoadedSent   []int
}

// Probe session and reply limits of a sweep point.
const (
	probeReplyWait = 2 * time.Second // a full 38 kB queue at 256 kbit/s holds 1.2 s
	probeSlack     = 30 * time.Second
)

// RunWindowPoint runs one sweep point: it opens a probe session (kind
// rtt), measures the baseline on the idle path, then runs the TCP test
// with probes every ProbeGap until it ends. A TCP test stopped early
// returns what it measured with an error wrapping ErrPartial.
func RunWindowPoint(ctx context.Context, t Target, cfg WindowPointConfig) (*WindowPointRun, error) {
	cfg, err := checked("window point", cfg)
	if err != nil {
		return nil, err
	}
	s, err := open(ctx, t, cfg.probeRequest())
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
	run := &WindowPointRun{}
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
		if res == nil || !errors.Is(terr, ErrPartial) {
			return nil, terr
		}
		return run, terr
	}
	return run, nil
}

// Point turns a run into a sweep point: goodput and TCP_INFO figures of
// the data direction, the rates of the intervals after the settle time,
// and the probes' one-way delay increments.
func (r *WindowPointRun) Point(cfg WindowPointConfig, mss int) sweep.WindowPoint {
	pt := sweep.WindowPoint{WindowBytes: cfg.TCP.Window, WindowMSS: float64(cfg.TCP.Window) / float64(mss)}
	dir := vocab.Up
	if cfg.TCP.Reverse {
		dir = vocab.Down
	}
	if r.TCP != nil {
		sum := r.TCP.Summary
		pt.Partial = sum.Partial
		pt.InflightMaxBytes = sum.WindowEffective
		if d := sum.Directions[dir]; d != nil {
			pt.GoodputBps, pt.BytesSent, pt.BytesRetrans, pt.RetransSegs = d.ThroughputBps, d.BytesSent, d.BytesRetrans, d.RetransSegs
			if d.BytesSent > 0 {
				pt.LossPct = float64(d.BytesRetrans) / float64(d.BytesSent) * 100
			}
		}
		settle, end, slice := cfg.Settle.Seconds(), cfg.TCP.Duration.Seconds(), cfg.TCP.Interval.Seconds()
		var rates []float64
		for _, iv := range r.TCP.Intervals { // whole slices only: not the short last one
			if iv.StartS >= settle-1e-3 && iv.EndS <= end+1e-3 && iv.EndS-iv.StartS >= 0.9*slice {
				rates = append(rates, iv.ThroughputBps)
			}
		}
		pt.RateSpread(rates)
	}
	pt.Classes, pt.DelayIncrementMs, pt.DelayIncrementMaxMs, pt.HasDelay =
		sweep.ClassDelays(cfg.DSCPs, r.Baseline, r.Loaded, r.BaselineSent, r.LoadedSent, vocab.Of(cfg.TCP.Reverse))
	return pt
}
