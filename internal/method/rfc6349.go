// Package method runs the test methods built from the engine's tests. Its
// RFC 6349 runner takes the steps in the RFC's order, each from the
// engine (package tester), and leaves every formula and judgement to the
// socket-free package rfc6349.
package method

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"syscall"
	"time"

	"github.com/fullpipe/fullpipe/internal/ber"
	"github.com/fullpipe/fullpipe/internal/frame"
	"github.com/fullpipe/fullpipe/internal/pathmtu"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/rfc6349"
	"github.com/fullpipe/fullpipe/internal/schedule"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/version"
	"github.com/fullpipe/fullpipe/internal/vocab"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// Run runs the method against t. A run stopped early returns what it has,
// marked partial, with an error wrapping result.ErrPartial.
func Run(ctx context.Context, n Network, cfg result.RFC6349Config, progress Progress) (*result.RFC6349, error) {
	cfg, err := prepare("rfc6349", cfg)
	if err != nil {
		return nil, err
	}
	l, err := rfc6349.LinkByName(cfg.Link)
	if err != nil {
		return nil, err
	}
	r := &runner{ctx: ctx, net: n, cfg: cfg, link: l, p: progress,
		res: &result.RFC6349{RTT: result.Baseline{UDPMinMs: []float64{}}, Throughput: map[vocab.Direction]*result.ThroughputRow{}, Shaping: map[vocab.Direction]*result.ShapingRow{}, Walk: []result.WalkRow{}, Diagnosis: []rfc6349.Finding{}, Warnings: []string{}}}
	r.res.Config, r.res.Meta = cfg, result.Meta{Schema: result.Schema, Tool: "fullpipe", Version: version.Release, Test: "rfc6349",
		Started: time.Now(), Target: n.Target(),
		Client: result.Host{Software: version.Software(), Kernel: version.Kernel()}}
	err = r.run()
	if err != nil && (errors.Is(err, result.ErrPartial) || ctx.Err() != nil) {
		r.res.Partial, r.res.Reason = true, err.Error()
		if !errors.Is(err, result.ErrPartial) {
			err = fmt.Errorf("%w: %v", result.ErrPartial, err)
		}
	}
	return r.res, err
}

type runner struct {
	ctx      context.Context
	net      Network
	cfg      result.RFC6349Config
	link     rfc6349.Link // cfg.Link's framing
	p        Progress
	step     Step // the step running
	res      *result.RFC6349
	baseline time.Duration
	bb       map[vocab.Direction]float64
	mtu      map[vocab.Direction]int
	lineLoss map[vocab.Direction]float64 // UDP loss at the CIR, per direction
	lineBER  map[vocab.Direction]float64 // that loss read as bit errors (0: not read)
	bbHost   map[vocab.Direction]string  // how the sending host held step 2 back, per direction ("": it did not)
	resent   map[vocab.Direction]int     // trains sent again because their sender was held (sendTrain), per direction
}

func (r *runner) run() error {
	steps := []struct {
		step Step
		f    func() error
	}{
		{StepMTU, r.stepMTU},
		{StepBaseline, r.stepBaseline},
		{StepWalk, r.stepWalk},
		{StepSweep, r.stepSweep},
		{StepThroughput, r.stepThroughput},
		{StepShaping, r.stepShaping},
	}
	for _, s := range steps {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		if s.step == StepSweep && r.cfg.SweepPoints <= 0 {
			continue
		}
		r.step = s.step
		r.p.emit(Event{Kind: Started, Step: s.step, Text: s.step.Title()})
		if err := s.f(); err != nil {
			r.p.emit(Event{Kind: Finished, Step: s.step, Text: err.Error()})
			r.judge() // what is known so far still says something
			return fmt.Errorf("%s: %w", s.step.Title(), err)
		}
		r.p.emit(Event{Kind: Finished, Step: s.step})
	}
	r.judge()
	return nil
}

func (r *runner) stepMTU() error {
	m, err := r.net.PMTU(r.ctx, result.PMTUConfig{})
	if err != nil {
		return err
	}
	r.res.MTU = result.PathMTU{UpBytes: m.UpBytes, DownBytes: m.DownBytes, LocalBytes: m.LocalBytes, ICMPSeen: m.ICMPSeen, Probes: m.Probes}
	r.mtu = map[vocab.Direction]int{vocab.Up: m.UpBytes, vocab.Down: m.DownBytes}
	r.line("", "up %d B, down %d B (local %d B, ICMP seen %v, %d probes)", m.UpBytes, m.DownBytes, m.LocalBytes, m.ICMPSeen, m.Probes)
	for d, v := range r.mtu {
		if v == 0 {
			return fmt.Errorf("no probe of 1200 B or more crossed the path %s", d)
		}
	}
	return nil
}

func (r *runner) stepBaseline() error {
	if err := r.measureBaseline(); err != nil {
		return err
	}
	r.line("", "baseline RTT %.3f ms (%s; UDP minima %v ms, TCP's minimum on the control connection %.3f ms)",
		r.res.RTT.BaselineMs, r.res.RTT.Source, r.res.RTT.UDPMinMs, r.res.RTT.ControlTCPMinMs)
	r.bb = map[vocab.Direction]float64{}
	r.lineLoss = map[vocab.Direction]float64{}
	r.lineBER = map[vocab.Direction]float64{}
	r.bbHost = map[vocab.Direction]string{}
	r.res.BB = result.BB{CIRBps: r.cfg.CIRBps, Method: "paced UDP streams of full-size packets, 2 s each, rates at layer 2 (the link's framing counted): one at a quarter of the CIR (for line loss), then a search from the CIR: a stream that arrives at ≥ 98 % of its rate ends it, otherwise the next is sent at the rate that arrived (at most 3); BB is the rate confirmed, or the highest that arrived"}
	for _, dir := range r.cfg.Directions {
		bb, loss, line, err := r.measureBB(dir)
		if err != nil {
			return err
		}
		r.bb[dir] = bb
		r.lineLoss[dir] = line
		bdp := rfc6349.BDPBytes(bb, r.baseline)
		if dir == vocab.Up {
			r.res.BB.UpBps, r.res.BB.UpLossPct, r.res.BDP.UpBytes = bb, loss, bdp
		} else {
			r.res.BB.DownBps, r.res.BB.DownLossPct, r.res.BDP.DownBytes = bb, loss, bdp
		}
		r.line(dir, "%s: bottleneck %.2f Mbit/s (CIR %.2f), loss %.2f %%, BDP %.0f B", dir, bb/1e6, float64(r.cfg.CIRBps)/1e6, loss, bdp)
		switch {
		case r.bbHost[dir] != "":
			r.warn(fmt.Sprintf("%s: step 2 was held back by the %s's host, not the path: %s; the bottleneck bandwidth of %.2f Mbit/s is the host's limit", dir, dir.Sender(), r.bbHost[dir], bb/1e6))
		case bb < 0.98*float64(r.cfg.CIRBps):
			r.warn(fmt.Sprintf("%s: the path carried %.2f Mbit/s, less than the CIR of %.2f Mbit/s", dir, bb/1e6, float64(r.cfg.CIRBps)/1e6))
		}
	}
	return nil
}

// Step 2's baseline: at most baselineSeries series of probes (a second
// when the first disagrees with TCP), each of baselineProbeCount small
// UDP probes baselineProbeGap apart.
const (
	baselineSeries     = 2
	baselineProbeCount = 20
	baselineProbeGap   = 20 * time.Millisecond
)

// baselineProbes is one series of step 2's baseline.
func baselineProbes() result.RTTConfig {
	return result.RTTConfig{Count: baselineProbeCount, Interval: baselineProbeGap, Size: 64}
}

// measureBaseline takes the minimum of 20 UDP probes before any load and
// checks it against TCP's own minimum RTT on the probe session's control
// connection (rfc6349.BaselineAgrees). A series that disagrees is not
// trusted: a second series is taken (with a new control connection, so
// both figures are measured again). If that one agrees, it is the
// baseline; if not, TCP's minimum is, and the report says so.
func (r *runner) measureBaseline() error {
	var tcpMin time.Duration
	var whys []string
	for range baselineSeries {
		rt, err := r.net.RTT(r.ctx, baselineProbes(), nil)
		if err != nil {
			return err
		}
		if rt.Summary.Received == 0 {
			return errors.New("no RTT probe came back: UDP to the responder's port is blocked or the path drops small packets")
		}
		r.res.Server = rt.Server
		r.res.RTT.Probes += rt.Summary.Sent
		r.res.RTT.UDPMinMs = append(r.res.RTT.UDPMinMs, rt.Summary.MinUs/1e3)
		if n := rt.Summary.Rejected; n > 0 {
			r.warn(fmt.Sprintf("baseline RTT: %d UDP replies answered no probe as sent (another sender's stamp or sequence number) and were not timed", n))
		}
		if c := time.Duration(rt.Summary.ControlTCPMinUs) * time.Microsecond; c > 0 && (tcpMin == 0 || c < tcpMin) {
			tcpMin = c
			r.res.RTT.ControlTCPMinMs = float64(c) / 1e6
		}
		udp := time.Duration(rt.Summary.MinUs * 1e3)
		ok, why := rfc6349.BaselineAgrees(udp, tcpMin)
		if ok {
			r.setBaseline(udp, result.SourceUDP)
			if len(whys) > 0 {
				r.warn("baseline RTT: the first series of UDP probes was an outlier and was not used: " + whys[0] + "; a second series agreed with TCP")
			}
			return nil
		}
		whys = append(whys, why)
	}
	r.setBaseline(tcpMin, result.SourceTCP)
	r.res.RTT.CrossCheck = whys[len(whys)-1]
	r.warn(fmt.Sprintf("baseline RTT: two series of UDP probes disagreed with TCP's own minimum RTT (%s); the BDP is built on TCP's %.3f ms instead",
		strings.Join(whys, "; then "), float64(tcpMin)/1e6))
	return nil
}

func (r *runner) setBaseline(d time.Duration, source string) {
	r.baseline = d
	r.res.RTT.BaselineMs, r.res.RTT.Source = float64(d)/1e6, source
}

// crossCheckBaseline compares the baseline the BDP was built on with
// TCP's own minimum RTT of a throughput test in direction dir (measured by
// the sending host's kernel: this one for up, the responder's for down).
func (r *runner) crossCheckBaseline(dir vocab.Direction, tcpMin time.Duration) {
	if tcpMin <= 0 {
		return
	}
	ms := float64(tcpMin) / 1e6
	if dir == vocab.Up {
		r.res.RTT.TCPMinUpMs = ms
	} else {
		r.res.RTT.TCPMinDownMs = ms
	}
	if r.res.RTT.TCPMinMs == 0 || ms < r.res.RTT.TCPMinMs {
		r.res.RTT.TCPMinMs = ms
	}
	if ok, why := rfc6349.BaselineAgrees(r.baseline, tcpMin); !ok {
		r.res.RTT.CrossCheck = string(dir) + ": " + why
		r.warn(fmt.Sprintf("%s: the BDP and the windows of the walk and throughput steps were built on a baseline RTT of %.3f ms, which TCP's own minimum in the %s throughput test contradicts: %s; rerun the test",
			dir, r.res.RTT.BaselineMs, dir, why))
	}
}

// Step 2's bottleneck search: streams of bbStreamTime, counted for
// bbDrain more, each sent at most bbTries times (one its sender's host
// held back, a moment of CPU starvation or hypervisor steal that is
// often brief, is sent again, once).
const (
	bbStreamTime = 2 * time.Second
	bbDrain      = 300 * time.Millisecond
	bbTries      = 2
)

// bbStream is one of step 2's streams in direction dir: payload-byte
// datagrams at rateBps.
func bbStream(dir vocab.Direction, rateBps int64, payload int) result.UDPConfig {
	return result.UDPConfig{RateBps: rateBps, Size: payload, Duration: bbStreamTime,
		Reverse: dir == vocab.Down, Interval: time.Second, Drain: bbDrain}
}

// measureBB searches for the bottleneck bandwidth (rfc6349.BBSearch)
// with paced UDP streams of the largest packets the path MTU allows,
// rates at layer 2. It returns BB, the loss of the stream at the CIR,
// and the loss on the line (rfc6349.LineLoss: a stream at a quarter of
// the CIR first, whose loss tells the line's from a queue's).
func (r *runner) measureBB(dir vocab.Direction) (bb, loss, line float64, err error) {
	ip := r.mtu[dir]
	payload := ip - frame.IPv4UDP
	wire := float64(ip + r.link.Overhead)
	hostHeld := false // a probe the sender could not send as asked, bbTries times
	// udp sends one probe, up to bbTries times while its sender's host
	// held it back.
	udp := func(l2 float64) (res *result.UDP, got float64, err error) {
		rate := int64(l2 * float64(payload) / wire)
		for try := 0; try < bbTries; try++ {
			res, err = r.net.UDP(r.ctx, bbStream(dir, rate, payload), r.udpSample(dir))
			if err != nil {
				return nil, 0, err
			}
			got = res.Summary.ReceiverIPBps * wire / float64(ip)
			p := r.bbProbe(dir, l2, got, res.Summary, float64(rate))
			r.res.BB.Search = append(r.res.BB.Search, p)
			held := p.HostLimit != "" && got < rfc6349.BBConfirm*l2
			if !held {
				return res, got, nil
			}
			if try == 0 {
				r.warn(fmt.Sprintf("%s: step 2's stream at %.2f Mbit/s is sent again: %s", dir, l2/1e6, p.HostLimit))
			}
		}
		hostHeld = true
		return res, got, nil
	}
	cir := float64(r.cfg.CIRBps)
	quarter, qgot, err := udp(cir / 4)
	if err != nil {
		return 0, 0, 0, err
	}
	search := rfc6349.NewBBSearch(cir)
	var full *result.UDP
	for rate, ok := search.Next(); ok && !hostHeld; rate, ok = search.Next() {
		res, got, err := udp(rate)
		if err != nil {
			return 0, 0, 0, err
		}
		if full == nil {
			full = res
		}
		search.Observe(got)
	}
	bb = search.BB()
	if hostHeld {
		// The sender, not the path, fell short: its loss says nothing of
		// the line, and the search stops at the first such probe.
		r.bbHost[dir] = r.res.BB.Search[len(r.res.BB.Search)-1].HostLimit
		if full == nil { // held back already at a quarter of the CIR: no loss at the CIR measured
			return qgot, 0, 0, nil
		}
		return bb, full.Summary.LossPct, 0, nil
	}
	line = rfc6349.LineLoss(quarter.Summary.SentPackets, quarter.Summary.Lost, full.Summary.LossPct)
	if line > 0 {
		r.readLineBER(dir, ip, quarter.Summary, full.Summary)
	}
	return bb, full.Summary.LossPct, line, nil
}

// readLineBER reads a direction's line loss as bit errors on its
// streams' ip-byte packets (the quarter-CIR stream and the one at the
// CIR: one size, so the BER if all of the loss is bit errors), into the
// document and the diagnosis's evidence.
func (r *runner) readLineBER(dir vocab.Direction, ip int, streams ...result.UDPSummary) {
	var pts []ber.Point
	for _, s := range streams {
		pts = append(pts, ber.Point{FrameBytes: frame.OfIPPacket(ip), Sent: s.SentPackets, Received: s.SentPackets - min(s.Lost, s.SentPackets)})
	}
	e, err := ber.Fit(pts, ber.EthernetIPBits)
	if err != nil || e.Lost == 0 {
		return
	}
	r.res.BB.LineBER = append(r.res.BB.LineBER, result.LineBER{Direction: dir, IPBytes: ip, Sent: e.Sent, Lost: e.Lost, BER: e.BER, BERHigh: e.BERHigh})
	r.lineBER[dir] = e.BER
}

// bbProbe is one step 2 stream's record: the rate asked and received at
// layer 2, and what its sender did (SenderHost.Limited).
func (r *runner) bbProbe(dir vocab.Direction, asked, got float64, s result.UDPSummary, payloadBps float64) result.BBProbe {
	p := result.BBProbe{Direction: dir, SentBps: asked, ReceivedBps: got, LossPct: s.LossPct,
		SenderSentBps: s.SenderRateBps / payloadBps * asked, SenderMaxSlipMs: s.SenderMaxSlipUs / 1e3, SenderCPU: s.Sender(dir)}
	if s.SentPackets > 0 {
		p.SenderLatePct = float64(s.SenderLate) / float64(s.SentPackets) * 100
	}
	h := rfc6349.SenderHost{Side: dir.Sender(), CPU: p.SenderCPU, Paced: true, SentPct: s.SenderRateBps / payloadBps * 100,
		LatePct: p.SenderLatePct, MaxSlipMs: p.SenderMaxSlipMs, LostPct: s.LossPct}
	p.HostLimit = h.Limited(math.Max(100-r.cfg.Thresholds.MinActualPct, (1-got/asked)*100))
	return p
}

// warn adds a warning to the result and tells it as it happens.
func (r *runner) warn(s string) {
	r.res.Warnings = append(r.res.Warnings, s)
	r.p.emit(Event{Kind: Warning, Step: r.step, Text: s})
}

// line tells the current step's figures for direction dir, in words.
func (r *runner) line(dir vocab.Direction, format string, a ...any) {
	r.p.emit(Event{Kind: Line, Step: r.step, Direction: dir, Text: fmt.Sprintf(format, a...)})
}

// sample tells an interval of the current step's test in direction dir.
func (r *runner) tcpSample(dir vocab.Direction) func(result.TCPInterval) {
	return func(iv result.TCPInterval) { r.p.emit(Event{Kind: Sample, Step: r.step, Direction: dir, TCP: &iv}) }
}

func (r *runner) udpSample(dir vocab.Direction) func(result.UDPInterval) {
	return func(iv result.UDPInterval) { r.p.emit(Event{Kind: Sample, Step: r.step, Direction: dir, UDP: &iv}) }
}

// ceiling is the maximum achievable TCP throughput of a direction.
func (r *runner) ceiling(dir vocab.Direction, mss int) float64 {
	if mss == 0 {
		mss = frame.Segment(r.mtu[dir]) // IPv4 with timestamps, Linux's default
	}
	return rfc6349.MaxTCPThroughput(r.bb[dir], r.mtu[dir], mss, r.link)
}

// stepTCP is what every step's TCP test in direction dir shares: its
// duration d, its direction, one-second intervals. r.tcp adds its
// streams, window, congestion control and MSS.
func stepTCP(dir vocab.Direction, d time.Duration) result.TCPConfig {
	return result.TCPConfig{Duration: d, Reverse: dir == vocab.Down, Interval: time.Second}
}

func (r *runner) tcp(dir vocab.Direction, conns, window int, d time.Duration, cc string) (*result.TCP, *result.TCPDirection, error) {
	cfg := stepTCP(dir, d)
	cfg.Streams, cfg.Window, cfg.CC, cfg.MSS = conns, window, cc, r.mss()
	res, err := r.net.TCP(r.ctx, cfg, r.tcpSample(dir))
	if err != nil {
		return res, nil, err
	}
	dd := res.Summary.Directions[dir]
	if dd == nil {
		return res, nil, fmt.Errorf("no %s figures in the result", dir)
	}
	return res, dd, nil
}

// lossBasedTCP is the shaping step's TCP test: unbounded windows and a
// loss-based congestion control, cubic, or reno where cubic may not be
// named (a responder's --allow-cc, or this host's
// tcp_allowed_congestion_control for an unprivileged tester): both halve
// on loss and fill a shaper's queue; BBR would keep it short.
func (r *runner) lossBasedTCP(dir vocab.Direction, conns int) (*result.TCP, *result.TCPDirection, error) {
	res, d, err := r.tcp(dir, conns, 0, r.cfg.StepDuration, "cubic")
	code, refused := wire.RefusedCode(err)
	if err != nil && (refused && code == wire.CodeLimit || errors.Is(err, syscall.EPERM)) && strings.Contains(err.Error(), "cubic") {
		r.warn(fmt.Sprintf("%s: the shaping step ran with reno: cubic was refused (%v)", dir, err))
		return r.tcp(dir, conns, 0, r.cfg.StepDuration, "reno")
	}
	return res, d, err
}

// mss keeps TCP segments within the probed path MTU (RFC 6349 step 1's
// purpose: no fragmentation, no black hole, in the later steps). 0 leaves
// the kernel's choice when the path carries the local MTU.
func (r *runner) mss() int {
	m := r.res.MTU.LocalBytes
	for _, v := range r.mtu {
		if v > 0 {
			m = min(m, v)
		}
	}
	if m <= 0 || m >= r.res.MTU.LocalBytes {
		return 0
	}
	return frame.MSS(m) // the kernel subtracts options itself
}

func (r *runner) bufferDelay(meanUs int64) float64 {
	return rfc6349.BufferDelayPct(time.Duration(meanUs)*time.Microsecond, r.baseline)
}

func (r *runner) stepWalk() error {
	for _, dir := range r.cfg.Directions {
		bdp := rfc6349.BDPBytes(r.bb[dir], r.baseline)
		for _, st := range rfc6349.Walk(bdp, r.baseline, r.cfg.MaxWindow, r.ceiling(dir, 0)) {
			_, d, err := r.tcp(dir, st.Connections, st.PerConn, r.cfg.StepDuration, r.cfg.CC)
			if err != nil {
				return err
			}
			row := result.WalkRow{Direction: dir, Percent: st.Percent, WindowBytes: st.PerConn * st.Connections, Connections: st.Connections,
				IdealBps: st.IdealBps, ActualBps: d.ThroughputBps, EfficiencyPct: d.EfficiencyPct, BufferDelayPct: r.bufferDelay(d.RTTMeanUs),
				RetransPct: 100 - d.EfficiencyPct}
			r.res.Walk = append(r.res.Walk, row)
			r.line(dir, "%s %3d %% of BDP: window %d B over %d conn: ideal %.2f, actual %.2f Mbit/s, efficiency %.2f %%, buffer delay %.1f %%",
				dir, st.Percent, row.WindowBytes, row.Connections, row.IdealBps/1e6, row.ActualBps/1e6, row.EfficiencyPct, row.BufferDelayPct)
		}
	}
	return nil
}

// sweepSpan is how far the sweep goes, in BDPs: past the BDP a queue of
// up to twice the BDP fills and overflows within the sweep.
const sweepSpan = 3.0

// sweepConfig is step 3b's sweep window in direction dir, for segments
// of seg bytes (0: a 1500-byte MTU's) and a BDP of bdp bytes:
// SweepPoints windows evenly from sweepSpan × BDP / SweepPoints to
// sweepSpan × BDP (none below a segment), reno (a window-only limit
// before loss), delay probes every 100 ms.
func sweepConfig(c result.RFC6349Config, dir vocab.Direction, seg int, bdp float64) result.WindowSweepConfig {
	if seg <= 0 {
		seg = frame.Segment(frame.EthernetMTU)
	}
	cfg := result.WindowSweepConfig{MSS: seg, Duration: c.StepDuration, Reverse: dir == vocab.Down, CC: "reno",
		ProbeDSCPs: []int{0}, ProbeGap: 100 * time.Millisecond, BaselineProbes: 10, Settle: c.StepDuration / 3,
		Interval: 200 * time.Millisecond, Seed: 1}
	for i := 1; i <= c.SweepPoints; i++ {
		cfg.Windows = append(cfg.Windows, max(seg, int(sweepSpan*bdp*float64(i)/float64(c.SweepPoints))))
	}
	return cfg
}

// stepSweep runs sweep window per direction (sweepConfig).
func (r *runner) stepSweep() error {
	r.res.Sweep = map[vocab.Direction]*result.WindowSweep{}
	for _, dir := range r.cfg.Directions {
		bdp := rfc6349.BDPBytes(r.bb[dir], r.baseline)
		cfg := sweepConfig(r.cfg, dir, frame.Segment(r.mtu[dir]), bdp)
		sw, err := RunWindowSweep(r.ctx, r.net, cfg, func(e Event) {
			if p := e.Window; e.Kind == Sample && p != nil {
				e.Step, e.Direction = StepSweep, dir
				r.p.emit(e)
				r.line(dir, "%s window %d B (%.0f %% of BDP): %.2f Mbit/s, retransmitted %d segments, delay increment %.1f ms",
					dir, p.WindowBytes, float64(p.WindowBytes)/bdp*100, p.GoodputBps/1e6, p.RetransSegs, p.DelayIncrementMs)
			}
		})
		if sw != nil {
			r.res.Sweep[dir] = sw
		}
		if err != nil {
			return err
		}
		a := sw.Analysis
		r.line(dir, "%s: plateau %.2f Mbit/s, BDP %.0f B, overflow from %d B, queue ≈ %.0f B",
			dir, a.PlateauBps/1e6, a.BDPBytes, a.OverflowEdgeBytes, a.QueueBytes)
	}
	return nil
}

func (r *runner) stepThroughput() error {
	for _, dir := range r.cfg.Directions {
		bdp := rfc6349.BDPBytes(r.bb[dir], r.baseline)
		n := rfc6349.Connections(bdp, float64(r.cfg.MaxWindow))
		per := int(math.Ceil(bdp / float64(n)))
		res, d, err := r.tcp(dir, n, per, r.cfg.Duration, r.cfg.CC)
		if err != nil {
			return err
		}
		row := &result.ThroughputRow{WindowBytes: per * n, Connections: n, ActualBps: d.ThroughputBps, EfficiencyPct: d.EfficiencyPct,
			BufferDelayPct: r.bufferDelay(d.RTTMeanUs), Bytes: d.Bytes, Seconds: d.IntervalS, Series: res.Series[dir]}
		for _, s := range res.Summary.Streams {
			if s.Direction != dir {
				continue
			}
			row.PerConnBps = append(row.PerConnBps, s.ThroughputBps)
			row.PerConnEffPct = append(row.PerConnEffPct, rfc6349.Efficiency(float64(s.BytesSent), float64(s.BytesRetrans)))
			row.MSSBytes = int(s.MSSBytes)
			row.SndbufLimPct = math.Max(row.SndbufLimPct, s.SndbufLimitedPct)
		}
		row.SenderCPU = res.Summary.Sender(dir)
		row.IdealBps = r.ceiling(dir, row.MSSBytes)
		short := math.Max(100-r.cfg.Thresholds.MinActualPct, (1-row.ActualBps/row.IdealBps)*100)
		row.HostLimit = rfc6349.SenderHost{Side: dir.Sender(), CPU: row.SenderCPU}.Limited(short)
		ideal := rfc6349.IdealTransferTime(float64(row.Bytes), row.IdealBps)
		row.TTR = rfc6349.TTR(time.Duration(row.Seconds*1e9), ideal)
		row.Pass, row.Why = rfc6349.Pass(row.IdealBps, row.ActualBps, row.EfficiencyPct, r.cfg.Thresholds)
		r.crossCheckBaseline(dir, time.Duration(d.RTTMinUs)*time.Microsecond)
		r.res.Throughput[dir] = row
		r.line(dir, "%s: window %d B over %d conn, %.1f s: ideal %.2f, actual %.2f Mbit/s, TTR %.3f, efficiency %.3f %%, buffer delay %.1f %%",
			dir, row.WindowBytes, n, row.Seconds, row.IdealBps/1e6, row.ActualBps/1e6, row.TTR, row.EfficiencyPct, row.BufferDelayPct)
	}
	return nil
}

func (r *runner) stepShaping() error {
	r.warn(fmt.Sprintf("the shaping vs policing step sends above the CIR of %.2f Mbit/s on purpose, for %v per direction (RFC 6349 §5: coordinate such tests with the provider)",
		float64(r.cfg.CIRBps)/1e6, r.cfg.StepDuration))
	for _, dir := range r.cfg.Directions {
		// Unbounded windows and a loss-based congestion control push past
		// the CIR: a policer answers with loss, a shaper with queueing
		// (BBR would keep a shaper's queue short and hide it).
		tv, rows, err := r.trains(dir)
		if err != nil {
			return err
		}
		n := r.cfg.ShapingConns
		res, d, err := r.lossBasedTCP(dir, n)
		if err != nil {
			return err
		}
		ev := rfc6349.ShapingEvidence{LossPct: 100 - d.EfficiencyPct, BufferDelayPct: r.bufferDelay(d.RTTMeanUs), TotalBps: d.ThroughputBps, CIRBps: float64(r.cfg.CIRBps),
			RateSpreadPct: -1, Trains: tv, BDPBytes: rfc6349.BDPBytes(r.bb[dir], r.baseline)}
		if s := res.Series[dir]; s != nil {
			var rates []float64 // after the first second: slow start is not a sawtooth
			for _, p := range s.Rate {
				if p.TS > 1 {
					rates = append(rates, p.Bps)
				}
			}
			if len(rates) >= 2 {
				ev.RateSpreadPct = rfc6349.RateSpreadPct(rates)
			}
		}
		for _, s := range res.Summary.Streams {
			if s.Direction == dir {
				ev.PerConnBps = append(ev.PerConnBps, s.ThroughputBps)
			}
		}
		v, why := rfc6349.ClassifyShaping(ev)
		row := &result.ShapingRow{Verdict: v, Detail: why, Connections: n, LossPct: ev.LossPct, BufferDelayPct: ev.BufferDelayPct,
			Fairness: rfc6349.Fairness(ev.PerConnBps), TotalBps: ev.TotalBps, PerConnBps: ev.PerConnBps, RateSpreadPct: ev.RateSpreadPct,
			Trains: tv, TrainRows: rows}
		r.res.Shaping[dir] = row
		// The summary is the verdict that names a policer or a shaper in
		// either direction; failing that, one that could not tell.
		if s := r.res.ShapingSum.Verdict; s == "" || v == vocab.Policed || v == vocab.Shaped || (v == vocab.Undecided && s == vocab.None) {
			r.res.ShapingSum = *row
		}
		if v == vocab.Undecided {
			r.warn(fmt.Sprintf("%s: the packet trains could not tell a policer with a bucket of a few packets from loss on the line, so the diagnosis names no cause for the loss: %s", dir, tv.Why))
		}
		r.line(dir, "%s: %s", dir, why)
	}
	return nil
}

func (r *runner) judge() {
	v := result.Verdict{Pass: true}
	for _, dir := range r.cfg.Directions {
		row := r.res.Throughput[dir]
		if row == nil {
			v.Pass = false
			v.Reasons = append(v.Reasons, string(dir)+": no throughput measured")
			row = &result.ThroughputRow{}
		} else {
			v.Pass = v.Pass && row.Pass
			v.Reasons = append(v.Reasons, string(dir)+": "+row.Why)
		}
		e := rfc6349.Evidence{BBBps: r.bb[dir], RTT: r.baseline, MaxWindowBytes: float64(r.cfg.MaxWindow), IdealBps: row.IdealBps,
			ActualBps: row.ActualBps, EfficiencyPct: row.EfficiencyPct, BufferDelayPct: row.BufferDelayPct, LineLossPct: r.lineLoss[dir], LineBER: r.lineBER[dir],
			LocalMTU: r.res.MTU.LocalBytes, ICMPSeen: r.res.MTU.ICMPSeen, SndbufLimitedPct: row.SndbufLimPct,
			BBHost: r.bbHost[dir], ThroughputHost: row.HostLimit}
		if e.BBHost != "" {
			v.Pass = false
			v.Reasons = append(v.Reasons, string(dir)+": the "+string(dir.Sender())+"'s host held step 2 back, so the ideal is its limit, not the path's: no verdict on the path")
		}
		if s := r.res.Shaping[dir]; s != nil {
			e.Shaping, e.ShapingDetail, e.Trains = s.Verdict, s.Detail, s.Trains
		}
		if dir == vocab.Up {
			e.MTUUp = r.res.MTU.UpBytes
		} else {
			e.MTUDown = r.res.MTU.DownBytes
		}
		for _, f := range rfc6349.Diagnose(e, r.cfg.Thresholds) {
			f.Detail = string(dir) + ": " + f.Detail
			r.res.Diagnosis = append(r.res.Diagnosis, f)
		}
	}
	r.res.Verdict = v
}

// RFC6349Cost is an RFC 6349 run's plan (Run) on a path of round trip
// rtt: its steps in order, each direction at its longest, every resend
// taken. Steps 3 to 5 depend on the bottleneck bandwidth step 2 finds:
// they are planned for a path that carries the CIR (a path far below it
// sends longer trains in step 5 than the slot allows), with the baseline
// RTT rtt, and the trains at each of the path MTUs the run may measure in
// step 1 (the search's floor, Ethernet's, a jumbo frame's), the longest
// counting.
func RFC6349Cost(c result.RFC6349Config, rtt time.Duration) (schedule.Cost, error) {
	l, err := rfc6349.LinkByName(c.Link)
	if err != nil {
		return schedule.Cost{}, err
	}
	all := tester.PMTUCost(result.PMTUConfig{}, rtt).Plus(tester.RTTCost(baselineProbes()).Times(baselineSeries))
	for _, dir := range c.Directions {
		all = all.Plus(rfc6349Direction(c, l, dir, rtt))
	}
	return all, nil
}

// rfc6349Direction is one direction's steps 2 to 5: step 2's streams
// (at a quarter of the CIR, then the search's), each sent bbTries times;
// the walk's tests; the sweep's points; the throughput test; the trains
// at their longest, then the shaping step's TCP test, which a refused
// cubic sends again with reno after a session that ended at its
// handshake (lossBasedTCP).
func rfc6349Direction(c result.RFC6349Config, l rfc6349.Link, dir vocab.Direction, rtt time.Duration) schedule.Cost {
	cir := float64(c.CIRBps)
	bb := tester.UDPCost(bbStream(dir, c.CIRBps, 0)).Times(bbTries * (1 + rfc6349.BBMaxStreams))
	step := tester.TCPCost(stepTCP(dir, c.StepDuration))
	walk := step.Times(len(rfc6349.Walk(1, time.Millisecond, 0, 1)))
	var sweep schedule.Cost
	if c.SweepPoints > 0 {
		sweep = windowSweepPlan(sweepConfig(c, dir, 0, 0).WithDefaults())
	}
	var trains schedule.Cost
	for _, mtu := range []int{pathmtu.Floor(false), 1500, 9000} {
		trains = schedule.Longer(trains, trainsPlan(fullSize(cir, cir, rtt, mtu, l.Overhead), dir, rtt), rtt)
	}
	shaping := trains.Plus(schedule.Cost{Sessions: 1}).Plus(step)
	return bb.Plus(walk).Plus(sweep).Plus(tester.TCPCost(stepTCP(dir, c.Duration))).Plus(shaping)
}
