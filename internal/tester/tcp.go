package tester

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/fullpipe/fullpipe/internal/cpuload"
	"github.com/fullpipe/fullpipe/internal/flow"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/schedule"
	"github.com/fullpipe/fullpipe/internal/vocab"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// localStream is one of the tester's data connections.
type localStream struct {
	conn        *net.TCPConn
	stream      int
	clientSends bool
	ctr         flow.Counter
}

func (ls *localStream) sample() wire.StreamSample {
	return flow.StreamSample(ls.conn, &ls.ctr, ls.stream, ls.clientSends, ls.clientSends)
}

// Latency probing: idle probes before the load, loaded probes during it.
const (
	idleProbes      = result.LatencyIdleProbes
	idleProbeGap    = 20 * time.Millisecond
	loadedProbeGap  = result.LatencyProbeGap
	resultGrace     = 15 * time.Second // after the duration, for the ends to drain
	bytesModeMaxRun = 10 * time.Minute
)

// TCPCost is a tcp test's own time (RunTCP), an upper bound from cfg:
// its duration, or bytesModeMaxRun for a byte count (the responder's
// --max-duration has the same default); with Latency, the idle probes
// and the wait for their replies before the start, and the wait for the
// loaded replies after the end. One session, a TCP test's (whose
// senders' drain the slot counts: schedule.Cost.Slot).
func TCPCost(cfg result.TCPConfig) schedule.Cost {
	cfg = cfg.WithDefaults()
	run := cfg.Duration
	if cfg.Bytes > 0 {
		run = bytesModeMaxRun
	}
	if cfg.Latency {
		run = schedule.SatAdd(run, seriesTime(idleProbes, idleProbeGap)+replyWait+loadedReplyWait)
	}
	return schedule.Cost{Run: run, Sessions: 1, TCP: 1}
}

// RunTCP runs a TCP test. progress, if not nil, is called with each
// interval as both ends' figures for it arrive. A test stopped early (ctx
// cancelled, peer lost) returns its partial result with an error wrapping
// result.ErrPartial.
func RunTCP(ctx context.Context, t Target, cfg result.TCPConfig, progress func(result.TCPInterval)) (*result.TCP, error) {
	cfg, err := checked("tcp", cfg)
	if err != nil {
		return nil, err
	}
	s, err := open(ctx, t, cfg.Request())
	if err != nil {
		return nil, err
	}
	defer s.ctrl.Close()
	opts := sendOpts{MSS: cfg.MSS, CC: cfg.CC, PacingBps: cfg.PacingBps, DSCP: cfg.DSCP, Window: cfg.Window, IPv6: s.remote.IP.To4() == nil}
	var streams []*localStream
	defer func() {
		for _, ls := range streams {
			ls.conn.Close()
		}
	}()
	for _, sends := range directions(cfg) {
		for i := range cfg.Streams {
			c, err := s.dataConn(ctx, i, sends, opts)
			if err != nil {
				return nil, err
			}
			streams = append(streams, &localStream{conn: c, stream: i, clientSends: sends})
			if sends {
				if rc, err := c.SyscallConn(); err == nil {
					if err := flow.SizeSendBuffer(rc, cfg.Window, true); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	var prober *prober
	var idle []time.Duration
	if cfg.Latency {
		if prober, err = newProber(s); err != nil {
			return nil, err
		}
		defer prober.close()
		idle = prober.burst(ctx, idleProbes, idleProbeGap)
	}
	if err := s.startTest(ctx); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	r := &tcpRun{cfg: cfg, s: s, streams: streams, clk: flow.NewClock(), progress: progress}
	res, err := r.measure(ctx, prober)
	if prober != nil {
		res.Summary.LatencyIdle = result.NewRTTStats(idleProbes, idle)
		res.Summary.LatencyLoaded = result.NewRTTStats(prober.loadedSent, prober.loaded)
	}
	res.Meta, res.Config = meta(s, "tcp"), cfg
	res.Meta.Started = r.clk.Start()
	res.Meta.Client.CC = firstNonEmpty(cfg.CC, flow.DefaultCC())
	res.Meta.Server.CC = firstNonEmpty(cfg.CC, s.accept.CC)
	return res, err
}

func firstNonEmpty(a ...string) string {
	for _, s := range a {
		if s != "" {
			return s
		}
	}
	return ""
}

// directions lists, for each direction the test runs, whether the client
// sends on it.
func directions(cfg result.TCPConfig) []bool {
	switch {
	case cfg.Bidir:
		return []bool{true, false}
	case cfg.Reverse:
		return []bool{false}
	}
	return []bool{true}
}

// tcpRun is one measurement in progress; its fields belong to measure's
// goroutine.
type tcpRun struct {
	cfg      result.TCPConfig
	s        *session
	streams  []*localStream
	clk      flow.Clock
	progress func(result.TCPInterval)

	local, remote [][]wire.StreamSample // cumulative samples per interval index
	emitted       int
	prev          map[streamKey]merged
	intervals     []result.TCPInterval
	rttSamples    map[bool][]int64 // srtt samples (µs) per direction (clientSends)

	// time series: the down direction's bytes received here, the up
	// direction's RTT sampled here, and what the responder sent of the
	// other two
	rx        *flow.Series
	rtt       flow.RTTSeries
	remoteRx  []int64
	remoteRTT []wire.RTTPoint
}

// addSeries appends a chunk of the responder's series.
func (r *tcpRun) addSeries(s *wire.Series) {
	if s == nil {
		return
	}
	if s.FromBin > len(r.remoteRx) && s.FromBin <= len(r.remoteRx)+1<<16 {
		r.remoteRx = append(r.remoteRx, make([]int64, s.FromBin-len(r.remoteRx))...)
	}
	if s.FromBin == len(r.remoteRx) {
		r.remoteRx = append(r.remoteRx, s.RxBins...)
	}
	r.remoteRTT = append(r.remoteRTT, s.RTT...)
}

// series builds the result's time series per direction.
func (r *tcpRun) series() map[vocab.Direction]*result.TCPSeries {
	out := map[vocab.Direction]*result.TCPSeries{}
	rtt := func(pts []wire.RTTPoint) []result.RTTPoint {
		o := make([]result.RTTPoint, len(pts))
		for i, p := range pts {
			o[i] = result.RTTPoint{TS: time.Duration(p.Ns).Seconds(), Us: p.Us}
		}
		return o
	}
	local, _ := r.rtt.Since(0)
	for _, sends := range directions(r.cfg) {
		if sends { // up: the responder receives, the client sends
			out[vocab.Up] = &result.TCPSeries{RateClock: "responder", WindowS: result.RateWindow.Seconds(),
				Rate: result.RateSeries(r.remoteRx, flow.SeriesBin), RTTClock: "client", RTT: rtt(local)}
		} else {
			out[vocab.Down] = &result.TCPSeries{RateClock: "client", WindowS: result.RateWindow.Seconds(),
				Rate: result.RateSeries(r.rx.Bins(0, r.rx.Len()), flow.SeriesBin), RTTClock: "responder", RTT: rtt(r.remoteRTT)}
		}
	}
	return out
}

// measure runs the workers and the interval loop, and builds the result.
func (r *tcpRun) measure(ctx context.Context, p *prober) (*result.TCP, error) {
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	sendCtx, sendCancel := wctx, context.CancelFunc(func() {})
	if r.cfg.Bytes == 0 {
		sendCtx, sendCancel = context.WithTimeout(wctx, r.cfg.Duration)
	}
	defer sendCancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(r.streams))
	r.rx = flow.NewSeries(r.cfg.Duration)
	var senders []*net.TCPConn
	for _, ls := range r.streams {
		if ls.clientSends {
			senders = append(senders, ls.conn)
		} else {
			ls.ctr.Series = r.rx
		}
	}
	for _, ls := range r.streams {
		wg.Add(1)
		go func() { // ends when its stream ends or wctx does
			defer wg.Done()
			var err error
			if ls.clientSends {
				err = flow.SendTCP(sendCtx, ls.conn, flow.SendSpec{Bytes: flow.Share(r.cfg.Bytes, r.cfg.Streams, ls.stream), Window: r.cfg.Window, Test: wctx, WriteSize: r.cfg.WriteSize}, &ls.ctr)
			} else {
				err = flow.RecvTCP(wctx, ls.conn, r.clk, &ls.ctr)
			}
			if err != nil && wctx.Err() == nil {
				errs <- fmt.Errorf("stream %d: %w", ls.stream, err)
			}
		}()
	}
	localDone := make(chan struct{})
	load := cpuload.Now()
	var loadEnd cpuload.Mark // when the streams ended
	go func() { wg.Wait(); loadEnd = cpuload.Now(); close(localDone) }()
	var probes sync.WaitGroup // apart from wg: probing runs until wctx ends
	if len(senders) > 0 {
		probes.Add(1)
		go func() { defer probes.Done(); r.rtt.Run(localDone, r.clk, senders) }()
	}
	if p != nil {
		probes.Add(1)
		go func() { defer probes.Done(); p.loop(wctx, loadedProbeGap) }()
	}
	msgs := make(chan serverMsg, 16)
	go r.s.readLoop(msgs)

	limit := r.cfg.Duration + resultGrace
	if r.cfg.Bytes > 0 {
		limit = bytesModeMaxRun
	}
	hard := time.NewTimer(limit)
	defer hard.Stop()
	tick := time.NewTimer(r.cfg.Interval)
	defer tick.Stop()
	next := r.cfg.Interval

	var final *wire.Result
	partial := ""
	for done := localDone; partial == "" && (done != nil || final == nil); {
		select {
		case <-tick.C:
			r.local = append(r.local, r.sampleLocal())
			r.emit()
			next += r.cfg.Interval
			tick.Reset(max(0, next-r.clk.Since()))
		case m, ok := <-msgs:
			switch {
			case !ok:
				msgs = nil
			case m.err != nil:
				partial = m.err.Error()
			case m.interval != nil:
				r.remote = append(r.remote, m.interval.Streams)
				r.addSeries(m.interval.Series)
				r.emit()
			case m.result != nil:
				final = m.result
				r.addSeries(final.Series)
				if final.Partial {
					partial = "responder: " + final.Reason
				}
			}
		case <-done:
			done = nil
		case err := <-errs:
			partial = err.Error()
		case <-ctx.Done():
			partial = "interrupted"
		case <-hard.C:
			partial = fmt.Sprintf("no result from the responder %v after the test's end", resultGrace)
		}
	}
	if partial != "" && final == nil {
		final = r.s.stopAndWait(partial, msgs)
		if final != nil {
			r.addSeries(final.Series)
		}
	}
	wcancel()
	<-localDone
	probes.Wait()
	res := &result.TCP{}
	res.Summary = r.summary(final)
	res.Summary.ClientCPU = cpuload.Between(load, loadEnd)
	if final != nil {
		res.Summary.ServerCPU = final.Load
	}
	res.Intervals = append([]result.TCPInterval{}, r.intervals...)
	res.Series = r.series()
	if partial != "" {
		res.Summary.Partial, res.Summary.PartialReason = true, partial
		return res, fmt.Errorf("%w: %s", result.ErrPartial, partial)
	}
	return res, nil
}

func (r *tcpRun) sampleLocal() []wire.StreamSample {
	out := make([]wire.StreamSample, len(r.streams))
	for i, ls := range r.streams {
		out[i] = ls.sample()
	}
	return out
}
