package method

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/fullpipe/fullpipe/internal/flow"
	"github.com/fullpipe/fullpipe/internal/frame"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/rfc2544"
	"github.com/fullpipe/fullpipe/internal/schedule"
	"github.com/fullpipe/fullpipe/internal/stats"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/version"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// RFC 2544's benchmarks (§26) per direction and frame size, in the RFC's
// order; the mathematics is package rfc2544's, each trial one of the
// engine's UDP streams (or a train for back-to-back) through the
// responder.
//
//	1. throughput     §26.1  searchThroughput: the zero-loss rate and the rate at a loss ratio, one search
//	2. latency        §26.2  measureLatency: probes inside a stream at the throughput rate
//	3. frame loss     §26.3  lossTable: 100 % of the line down to 10 %, until two steps lose nothing
//	4. back-to-back   §26.4  backToBack: the longest burst without loss, and the buffer it implies
//	   lossy line            judgeLossy: loss that does not depend on the rate → loss and BER, not throughput

// StepRFC2544 is the RFC 2544 run's one step.
const StepRFC2544 Step = "rfc2544"

// rfc2544Runner is one RFC 2544 run's state.
type rfc2544Runner struct {
	ctx     context.Context
	net     Network
	p       Progress
	cfg     result.RFC2544Config
	res     *result.RFC2544
	baseRTT time.Duration // the idle round trip of small probes (0: not measured)
	probeB  int           // their frame bytes
}

// RunRFC2544 runs RFC 2544's benchmarks against the responder of n.
func RunRFC2544(ctx context.Context, n Network, cfg result.RFC2544Config, progress Progress) (*result.RFC2544, error) {
	cfg, err := prepare("rfc2544", cfg)
	if err != nil {
		return nil, err
	}
	r := &rfc2544Runner{ctx: ctx, net: n, p: progress, cfg: cfg, res: &result.RFC2544{Config: cfg, Warnings: []string{},
		Directions: map[vocab.Direction]*result.RFC2544Direction{}}}
	r.res.Meta = result.Meta{Schema: result.Schema, Tool: "fullpipe", Version: version.Release, Test: "rfc2544", Started: time.Now(),
		Target: n.Target(), Client: result.Host{Software: version.Software(), Kernel: version.Kernel()}}
	if cfg.Has(result.BenchLatency) {
		if err := r.measureBase(); err != nil {
			return r.res, err
		}
	}
	for _, dir := range cfg.Directions {
		d := &result.RFC2544Direction{}
		r.res.Directions[dir] = d
		for _, frame := range cfg.FrameSizes {
			s, err := r.size(dir, frame)
			d.Sizes = append(d.Sizes, s)
			if err != nil {
				return r.res, err
			}
		}
		d.Lossy = r.judgeLossy(dir, d)
	}
	return r.res, nil
}

// latencyReplyAllowance is what the plan allows each latency trial past
// its drain for its probes' last replies: the stream reads them within
// the drain, and the allowance keeps the slot the fleet has always
// booked for a trial.
const latencyReplyAllowance = 500 * time.Millisecond

// RFC2544Cost is an RFC 2544 run's plan (RunRFC2544) on a path of round
// trip rtt: the idle RTT test first when latency is asked, then each
// direction's frame sizes at their longest (rfc2544SizePlan).
func RFC2544Cost(cfg result.RFC2544Config, rtt time.Duration) (schedule.Cost, error) {
	var all schedule.Cost
	if cfg.Has(result.BenchLatency) {
		all = all.Plus(tester.RTTCost(idleRTTTest()))
	}
	for _, dir := range cfg.Directions {
		for _, bytes := range cfg.FrameSizes {
			all = all.Plus(rfc2544SizePlan(cfg, dir, bytes, rtt))
		}
	}
	return all, nil
}

// rfc2544SizePlan is the benchmarks at one frame size (size), every
// stream trial run maxTries times: the throughput search's most trials,
// the latency trials with latencyReplyAllowance each, the frame-loss
// steps, and each burst search's most bursts. A burst's frames leave
// back to back at the generator's fastest, which may be slower than the
// line (and then nothing queues): each is allowed BurstTime to arrive,
// what the longest burst takes at the line rate.
func rfc2544SizePlan(cfg result.RFC2544Config, dir vocab.Direction, bytes int, rtt time.Duration) schedule.Cost {
	line := rfc2544.LineFPS(float64(cfg.LineRateBps), bytes)
	trial := tester.UDPCost(trialStream(cfg, dir, frame.UDPPayload(bytes, cfg.IPv6), line, 0)).Times(maxTries)
	var s schedule.Cost
	if cfg.Has(result.BenchThroughput) {
		s = s.Plus(trial.Times(throughputSearch(cfg, line).MaxTrials()))
		if cfg.Has(result.BenchLatency) {
			s = s.Plus(trial.Plus(schedule.Cost{Run: latencyReplyAllowance}).Times(cfg.LatencyTrials))
		}
	}
	if cfg.Has(result.BenchLoss) {
		s = s.Plus(trial.Times(len(rfc2544.LossSteps())))
	}
	if cfg.Has(result.BenchBackToBack) {
		most := longestBurst(cfg, line)
		b := burstTrain(cfg, dir, bytes, most)
		span := max(tester.TrainSpan(b, float64(cfg.LineRateBps)), cfg.BurstTime)
		s = s.Plus(tester.TrainCost(b, span, rtt).Times(rfc2544.NewBurstSearch(most).MaxTrials() * cfg.BurstTrials))
	}
	return s
}

// idleRTTTest is the idle RTT test the latency table is set against: 20
// probes, the rest at the defaults.
func idleRTTTest() result.RTTConfig { return result.RTTConfig{Count: 20} }

// measureBase measures the idle round trip the latency table is set
// against.
func (r *rfc2544Runner) measureBase() error {
	rt, err := r.net.RTT(r.ctx, idleRTTTest(), nil)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, result.ErrPartial) {
			return err
		}
		r.warn(fmt.Sprintf("the idle round trip could not be measured (%v): latency is reported without what the path's arithmetic expects", err))
		return nil
	}
	r.baseRTT = time.Duration(rt.Summary.MinUs * 1e3)
	r.probeB = frame.OfUDPPayload(rt.Config.Size, r.cfg.IPv6)
	if r.res.Server.Software == "" {
		r.res.Server = rt.Server
	}
	return nil
}

// size runs the benchmarks asked at one frame size in direction dir.
func (r *rfc2544Runner) size(dir vocab.Direction, bytes int) (*result.RFC2544Size, error) {
	payload := frame.UDPPayload(bytes, r.cfg.IPv6)
	s := &result.RFC2544Size{FrameBytes: bytes, PayloadBytes: payload, LineFPS: rfc2544.LineFPS(float64(r.cfg.LineRateBps), bytes)}
	if err := (result.UDPConfig{RateBps: 1e6, Size: payload, Duration: time.Second}).WithDefaults().Validate(); err != nil {
		s.Skipped = fmt.Sprintf("this engine cannot send a %d B payload: %v", payload, err)
		r.warn(fmt.Sprintf("%s %d B: skipped: %s", dir, bytes, s.Skipped))
		return s, nil
	}
	var err error
	if r.cfg.Has(result.BenchThroughput) {
		if s.Throughput, err = r.searchThroughput(dir, s); err != nil {
			return s, err
		}
		if r.cfg.Has(result.BenchLatency) {
			if s.Latency, err = r.measureLatency(dir, s); err != nil {
				return s, err
			}
		}
	}
	if r.cfg.Has(result.BenchLoss) {
		if s.Loss, err = r.lossTable(dir, s); err != nil {
			return s, err
		}
	}
	s.Rate = judgeRate(s)
	if r.cfg.Has(result.BenchBackToBack) {
		if s.BackToBack, err = r.backToBack(dir, s); err != nil {
			return s, err
		}
	}
	return s, nil
}

// trialStream is a trial's stream in direction dir: payload-byte
// datagrams at fps frames/s for the trial's time, a latency probe every
// echo of them (0: none), then the drain.
func trialStream(c result.RFC2544Config, dir vocab.Direction, payload int, fps float64, echo int) result.UDPConfig {
	return result.UDPConfig{RateBps: max(1, int64(math.Round(fps*float64(payload)*8))), Size: payload,
		Duration: c.Trial, Reverse: dir == vocab.Down, Drain: c.Drain, EchoEvery: echo, Interval: c.Trial}
}

// trial runs one stream of frame bytes at fps frames/s, with a latency
// probe every echo frames (0: none). A stream that lost frames while its
// sender fell behind its schedule (and caught up in a burst, which a
// queue may drop) or its receiver's socket dropped some, or whose
// generator could not hold the rate, is run again, at most maxTries
// times in all: on a shared host that may pass. When none passes, the
// trial is generator-limited: its loss is not the path's to read.
func (r *rfc2544Runner) trial(dir vocab.Direction, s *result.RFC2544Size, fps float64, echo int) (result.RFC2544Trial, *result.UDP, error) {
	cfg := trialStream(r.cfg, dir, s.PayloadBytes, fps, echo)
	var t result.RFC2544Trial
	for try := 1; ; try++ {
		res, err := r.net.UDP(r.ctx, cfg, nil)
		if err != nil {
			return t, res, fmt.Errorf("%s %d B: trial at %.0f frames/s: %w", dir, s.FrameBytes, fps, err)
		}
		if r.res.Server.Software == "" {
			r.res.Server = res.Server
		}
		sum := res.Summary
		t = result.RFC2544Trial{OfferedFPS: fps, PctOfLine: 100 * fps / s.LineFPS, Sent: sum.SentPackets, Received: min(sum.RecvPackets, sum.SentPackets),
			GeneratorLimited: sum.GeneratorLimited, SenderLate: sum.SenderLate, SenderMaxSlipUs: sum.SenderMaxSlipUs, ReceiverDrops: sum.ReceiverDrops, Tries: try}
		if t.Sent > 0 {
			t.LossPct = 100 * float64(t.Sent-t.Received) / float64(t.Sent)
		}
		if !(hostLoss(t) || t.GeneratorLimited) {
			return t, res, nil
		}
		if try >= maxTries {
			// Every try lost frames while its host fell behind: the
			// loss may be the host's (a catch-up burst a queue dropped,
			// a socket's own drops), so it is not read as the path's:
			// the generator could not send the schedule the path was to
			// be judged on (measured: 0.57 % lost at 87.5 % of a 100
			// Mbit/s line after a 9.4 ms stall, on a path that lost
			// nothing below its line rate).
			t.GeneratorLimited = true
			return t, res, nil
		}
		r.line(dir, "%s %d B: %s; its sender fell %.1f ms behind (%d frames late), its receiver's socket dropped %d: run again",
			dir, s.FrameBytes, trialLine("trial", t), t.SenderMaxSlipUs/1e3, t.SenderLate, t.ReceiverDrops)
	}
}

// maxTries bounds the runs of one trial whose sender fell behind.
const maxTries = 2

// hostLoss reports whether a trial's loss may be its hosts' own: it lost
// no more frames than its sender's catch-up burst held and its
// receiver's socket dropped. A sender that fell behind sends what fell
// due meanwhile back to back: the frames counted late (more than
// flow.LateSlip behind) and those due in the last LateSlip and one gap
// before it caught up. A tail-drop queue that such a burst overflows
// drops the burst's own frames, and none once it has drained (the
// stream runs below the line), so a loss beyond the burst is the
// path's (measured: 45 frames lost with 9 late, a burst of at most 18,
// at 101 % of a 100 Mbit/s line: the path's overload, not the host's).
func hostLoss(t result.RFC2544Trial) bool {
	lost := t.Sent - t.Received
	if lost == 0 || (t.SenderLate == 0 && t.ReceiverDrops == 0) {
		return false
	}
	burst := t.SenderLate + uint64(math.Ceil(t.OfferedFPS*flow.LateSlip.Seconds())) + 1
	return lost <= burst+t.ReceiverDrops
}

// trialLine is a trial's progress line.
func trialLine(what string, t result.RFC2544Trial) string {
	gen := ""
	if t.GeneratorLimited {
		gen = " (generator-limited: this host could not send at the rate)"
	}
	return fmt.Sprintf("%s at %.0f frames/s (%.1f %% of the line): %d sent, %d lost (%.3g %%)%s", what, t.OfferedFPS, t.PctOfLine, t.Sent, t.Sent-t.Received, t.LossPct, gen)
}

// throughputSearch is §26.1's search at a line of lineFPS frames/s: to
// the resolution, for zero loss and the loss ratio at once.
func throughputSearch(c result.RFC2544Config, lineFPS float64) *rfc2544.Search {
	return rfc2544.NewSearch(lineFPS, lineFPS*c.ResolutionPct/100, c.LossRatioPct/100)
}

// searchThroughput is §26.1: the search (rfc2544.Search) from the line
// rate down, to the resolution, for zero loss and the loss ratio at once.
// A generator-limited trial ends it: the path was not what limited.
func (r *rfc2544Runner) searchThroughput(dir vocab.Direction, s *result.RFC2544Size) (*result.RFC2544Throughput, error) {
	srch := throughputSearch(r.cfg, s.LineFPS)
	tp := &result.RFC2544Throughput{}
	for i, max := 0, srch.MaxTrials(); i < max; i++ {
		fps, ok := srch.Next()
		if !ok {
			break
		}
		t, _, err := r.trial(dir, s, fps, 0)
		if err != nil {
			return tp, err
		}
		tp.Trials = append(tp.Trials, t)
		r.line(dir, "%s %d B: %s", dir, s.FrameBytes, trialLine("throughput trial", t))
		if t.GeneratorLimited && srch.Settled(fps) {
			// Within the resolution of what was found: the answer stands
			// as asked, whatever this trial would have shown.
			r.line(dir, "%s %d B: generator-limited at %.0f frames/s, within the resolution of the rate found: the search ends there", dir, s.FrameBytes, fps)
			break
		}
		if t.GeneratorLimited {
			tp.GeneratorLimitedFPS = fps
			r.warn(fmt.Sprintf("%s %d B: generator-limited at %.0f frames/s (%.1f %% of the line): this host could not send faster, so the search stopped there; the throughput below is a lower bound set by the generator, not the path", dir, s.FrameBytes, fps, 100*fps/s.LineFPS))
			break
		}
		srch.Record(fps, t.Sent, t.Received)
	}
	tp.ZeroLossFPS, tp.LossRatioFPS = srch.Result()
	tp.ZeroLossPct, tp.LossRatioPct = 100*tp.ZeroLossFPS/s.LineFPS, 100*tp.LossRatioFPS/s.LineFPS
	r.line(dir, "%s %d B: throughput %.0f frames/s (%.2f %% of the line) at zero loss, %.0f frames/s (%.2f %%) at %.2g %% loss",
		dir, s.FrameBytes, tp.ZeroLossFPS, tp.ZeroLossPct, tp.LossRatioFPS, tp.LossRatioPct, r.cfg.LossRatioPct)
	return tp, nil
}

// measureLatency is §26.2: LatencyTrials streams at the throughput rate
// (the zero-loss one; the loss ratio's when nothing was loss-free), each
// with its probes' round trips.
func (r *rfc2544Runner) measureLatency(dir vocab.Direction, s *result.RFC2544Size) (*result.RFC2544LatencyRow, error) {
	fps := s.Throughput.ZeroLossFPS
	if fps == 0 {
		fps = s.Throughput.LossRatioFPS
	}
	if fps == 0 {
		r.warn(fmt.Sprintf("%s %d B: no latency: no rate met either throughput goal", dir, s.FrameBytes))
		return nil, nil
	}
	row := &result.RFC2544LatencyRow{RateFPS: fps}
	// At least 20 probes a trial: a slow stream probes more often.
	echo := max(1, min(r.cfg.EchoEvery, int(fps*r.cfg.Trial.Seconds()/20)))
	for range r.cfg.LatencyTrials {
		t, res, err := r.trial(dir, s, fps, echo)
		if err != nil {
			return row, err
		}
		if l := res.Summary.Latency; l != nil && l.Replies > 0 {
			row.Trials = append(row.Trials, l)
			r.line(dir, "%s %d B: latency trial at %.0f frames/s: round trip min %.0f, mean %.0f, p99 %.0f, max %.0f µs (%d probes)",
				dir, s.FrameBytes, fps, l.MinUs, l.MeanUs, l.P99Us, l.MaxUs, l.Replies)
		} else {
			r.line(dir, "%s %d B: %s; no probe came back", dir, s.FrameBytes, trialLine("latency trial", t))
		}
	}
	if len(row.Trials) == 0 {
		r.warn(fmt.Sprintf("%s %d B: no latency probe came back (a responder without latency probes, or all lost)", dir, s.FrameBytes))
		return row, nil
	}
	row.Summary = latencySummary(row.Trials)
	if r.baseRTT > 0 {
		rate := float64(r.cfg.LineRateBps)
		exp := r.baseRTT - 2*rfc2544.Serialisation(r.probeB, rate) + 2*rfc2544.Serialisation(s.FrameBytes, rate)
		row.ExpectedUs, row.BaseRTTUs = float64(exp)/1e3, float64(r.baseRTT)/1e3
	}
	return row, nil
}

// latencySummary is the trials' mean of each figure, with the minimum
// and the maximum over all of them (RFC 2544 §26.2 reports the mean of
// the trials), and their probes, replies and delays (Count) together.
func latencySummary(ts []*result.UDPLatency) result.UDPLatency {
	out := result.UDPLatency{Delays: stats.Delays{MinUs: math.Inf(1)}}
	n := float64(len(ts))
	for _, l := range ts {
		out.Probes += l.Probes
		out.Replies += l.Replies
		out.Count += l.Count
		out.MinUs = math.Min(out.MinUs, l.MinUs)
		out.MaxUs = math.Max(out.MaxUs, l.MaxUs)
		out.MeanUs += l.MeanUs / n
		out.P50Us += l.P50Us / n
		out.P90Us += l.P90Us / n
		out.P99Us += l.P99Us / n
		out.StdDevUs += l.StdDevUs / n
		out.IPDVUs += l.IPDVUs / n
	}
	return out
}

// lossTable is §26.3: 100 % of the line rate down in steps of 10 %,
// until two successive steps lose nothing.
func (r *rfc2544Runner) lossTable(dir vocab.Direction, s *result.RFC2544Size) ([]result.RFC2544Trial, error) {
	var rows []result.RFC2544Trial
	var lost []uint64
	for _, step := range rfc2544.LossSteps() {
		t, _, err := r.trial(dir, s, step*s.LineFPS, 0)
		if err != nil {
			return rows, err
		}
		rows = append(rows, t)
		lost = append(lost, t.Sent-t.Received)
		r.line(dir, "%s %d B: %s", dir, s.FrameBytes, trialLine("frame loss step", t))
		if rfc2544.LossTableDone(lost) {
			break
		}
	}
	return rows, nil
}

// trials is every stream trial of s the generator held the rate of.
func trials(s *result.RFC2544Size) []rfc2544.Trial {
	var all []result.RFC2544Trial
	if s.Throughput != nil {
		all = append(all, s.Throughput.Trials...)
	}
	all = append(all, s.Loss...)
	var out []rfc2544.Trial
	for _, t := range all {
		if !t.GeneratorLimited {
			out = append(out, rfc2544.Trial{FrameBytes: s.FrameBytes, FPS: t.OfferedFPS, Sent: t.Sent, Received: t.Received})
		}
	}
	return out
}

// judgeRate asks whether s's loss depended on the offered rate, over its
// trials at or below the line rate (nil with fewer than two rates).
func judgeRate(s *result.RFC2544Size) *result.RFC2544RateVerdict {
	ts := trials(s)
	rates := map[float64]bool{}
	for _, t := range ts {
		rates[t.FPS] = true
	}
	if len(rates) < 2 {
		return nil
	}
	j, err := rfc2544.JudgeRate(ts, s.LineFPS)
	if err != nil {
		return nil
	}
	return &result.RFC2544RateVerdict{Verdict: j.Verdict.String(), LossPct: 100 * j.Loss, Chi2: j.Chi2, DF: j.DF, P: j.P}
}
