package method

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/fullpipe/fullpipe/internal/ping"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/schedule"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/version"
)

// Ping runs a single-ended test on n's host, no responder: one run of
// probes, or a rate search of trials (cfg.RateSearch), each run read by
// ping.Classify so that an ICMP rate limiter is named as one, not taken
// for the path's loss. onReply, when not nil, hears each reply of a
// single run. Stopped early, it returns what it measured marked partial
// with an error wrapping result.ErrPartial.
func Ping(ctx context.Context, n Network, cfg result.PingConfig, progress Progress, onReply func(seq int, rtt time.Duration)) (*result.Ping, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	out := &result.Ping{Config: cfg, Warnings: []string{}, Meta: result.Meta{Schema: result.Schema, Tool: "fullpipe",
		Version: version.Release, Test: "ping", Started: time.Now(), Target: host(n.Target()),
		Client: result.Host{Software: version.Software(), Kernel: version.Kernel()},
		Server: result.Host{Software: "none (single-ended)"}}}
	var err error
	if cfg.RateSearch {
		err = pingSearch(ctx, n, cfg, out, progress)
	} else {
		err = pingOnce(ctx, n, cfg, out, onReply)
	}
	if err != nil && out.Socket == "" {
		return nil, err
	}
	if err != nil {
		out.Partial, out.Reason = true, err.Error()
		if !errors.Is(err, result.ErrPartial) {
			err = fmt.Errorf("%w: %v", result.ErrPartial, err)
		}
	}
	out.Warnings = append(out.Warnings, pingWarnings(out)...)
	return out, err
}

// PingCost is a single-ended test's plan (Ping): one run, or a rate
// search of at most ping.MaxTrials trials, each its probes, which fill
// at most TrialDuration (result.PingConfig.Trial), and the wait for late
// replies. No session (no responder); exclusive all the same, as a rate
// search loads the path.
func PingCost(cfg result.PingConfig, _ time.Duration) (schedule.Cost, error) {
	if !cfg.RateSearch {
		return tester.PingCost(cfg), nil
	}
	trial := schedule.Cost{Run: schedule.SatAdd(cfg.TrialDuration, cfg.Wait)}
	return trial.Times(ping.MaxTrials), nil
}

// host is the host of a target's HOST:PORT: single-ended tests use no
// port of a responder.
func host(target string) string {
	if h, _, err := net.SplitHostPort(target); err == nil {
		return h
	}
	return target
}

// pingOnce is one run, summarised.
func pingOnce(ctx context.Context, n Network, cfg result.PingConfig, out *result.Ping, onReply func(int, time.Duration)) error {
	run, err := n.Ping(ctx, cfg, onReply)
	if run == nil {
		return err
	}
	out.Socket, out.IPv6 = run.Socket, run.IPv6
	out.Summary = pingSummary(run)
	out.Verdict = ping.Classify(run.Fates)
	return err
}

// pingSummary is a run's RTT statistics (µs) and counts.
func pingSummary(run *result.PingRun) *result.PingSummary {
	var rtts []time.Duration
	for _, f := range run.Fates {
		if f.Answered {
			rtts = append(rtts, f.RTT)
		}
	}
	return &result.PingSummary{RTTStats: *result.NewRTTStats(len(run.Fates), rtts), Stamped: run.Stamped,
		Duplicates: run.Duplicates, OtherICMP: run.OtherICMP, Unmatched: run.Unmatched, SendErrors: run.SendErrors,
		LocalDrops: run.LocalDrops}
}

// pingSearch runs the rate search's trials (ping.Search) and reads each.
// The search's verdict is a limiter's when any trial showed one (its
// rate the median of theirs: the plateau the replies reach), else the
// fastest trial's.
func pingSearch(ctx context.Context, n Network, cfg result.PingConfig, out *result.Ping, progress Progress) error {
	s := ping.NewSearch(cfg.MinRate, cfg.MaxRate, cfg.Resolution, cfg.LossRatio)
	srch := &result.PingSearch{Trials: []result.PingTrial{}}
	out.Search = srch
	for {
		rate, ok := s.Next()
		if !ok {
			break
		}
		run, err := n.Ping(ctx, cfg.Trial(rate), nil)
		if run == nil {
			return err
		}
		out.Socket, out.IPv6 = run.Socket, run.IPv6
		srch.FrameBytes = cfg.FrameBytes(run.IPv6)
		t := pingTrial(rate, run)
		srch.Trials = append(srch.Trials, t)
		progress.emit(Event{Kind: Line, Step: StepPing, Text: fmt.Sprintf("%8.0f probes/s: %d of %d answered (%.2f %% lost, %.0f replies/s), %s",
			rate, t.Received, t.Sent, t.LossPct, t.RepliesPPS, t.Verdict.Kind)})
		if err != nil {
			return err
		}
		s.Record(rate, t.LossPct/100)
	}
	zero, loose := s.Result()
	bits := float64(srch.FrameBytes * 8)
	srch.ZeroLossPPS, srch.ZeroLossBps, srch.AtRatioPPS, srch.AtRatioBps = zero, zero*bits, loose, loose*bits
	out.Verdict = searchVerdict(srch.Trials)
	return nil
}

func pingTrial(rate float64, run *result.PingRun) result.PingTrial {
	sum := pingSummary(run)
	t := result.PingTrial{RatePPS: rate, Sent: sum.Sent, Received: sum.Received, LossPct: sum.LossPct,
		MedianRTTUs: sum.P50Us, Verdict: ping.Classify(run.Fates)}
	if n := len(run.Fates); n > 1 {
		if span := (run.Fates[n-1].Sent - run.Fates[0].Sent).Seconds() + 1/rate; span > 0 {
			t.RepliesPPS = float64(sum.Received) / span
		}
	}
	return t
}

func searchVerdict(trials []result.PingTrial) ping.Verdict {
	var limited []ping.Verdict
	var fastest ping.Verdict
	for _, t := range trials {
		if t.Verdict.Kind == ping.RateLimited {
			limited = append(limited, t.Verdict)
		}
		if t.Verdict.OfferedPerSec >= fastest.OfferedPerSec {
			fastest = t.Verdict
		}
	}
	if len(limited) == 0 {
		return fastest
	}
	slices.SortFunc(limited, func(a, b ping.Verdict) int { return cmpFloat(a.LimitPerSec, b.LimitPerSec) })
	return limited[len(limited)/2]
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// pingWarnings says what the figures cannot: replies the kernel did not
// stamp, local send errors, errors of the wrong kind.
func pingWarnings(p *result.Ping) []string {
	var w []string
	if s := p.Summary; s != nil {
		if s.Received > 0 && s.Stamped < s.Received {
			w = append(w, fmt.Sprintf("%d of %d replies were timed when read, not by the kernel's receive stamp: their RTTs include this host's scheduling", s.Received-s.Stamped, s.Received))
		}
		if s.SendErrors > 0 {
			w = append(w, fmt.Sprintf("%d probes could not be sent (this host's stack refused them): counted as lost", s.SendErrors))
		}
		if s.LocalDrops > 0 {
			w = append(w, fmt.Sprintf("this host's socket dropped %d replies for want of buffer: they count as lost, but were lost here, not on the path (send more slowly, or raise net.core.rmem_max)", s.LocalDrops))
		}
		if s.OtherICMP > 0 {
			w = append(w, fmt.Sprintf("%d ICMP errors other than port unreachable came back (host or network unreachable, administratively prohibited): something on the path filters", s.OtherICMP))
		}
		if s.Unmatched > 0 {
			w = append(w, fmt.Sprintf("%d port unreachables quoted too little of the datagram to tell which probe they answer (RFC 792's 8 bytes): not counted", s.Unmatched))
		}
	}
	if p.Search != nil && p.Verdict.Kind == ping.RateLimited {
		w = append(w, fmt.Sprintf("the trials hit an ICMP rate limit at about %.0f replies/s: the rates found are the limiter's, not the path's", p.Verdict.LimitPerSec))
	}
	return w
}
