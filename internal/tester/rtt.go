package tester

import (
	"context"
	"fmt"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/schedule"
	"github.com/fullpipe/fullpipe/internal/tcpinfo"
)

// RTTCost is an rtt test's own time (RunRTT): its probes, then the wait
// for the last replies. One session, sending its probes' rate.
func RTTCost(cfg result.RTTConfig) schedule.Cost {
	cfg = cfg.WithDefaults()
	return schedule.Cost{Run: schedule.SatAdd(seriesTime(cfg.Count, cfg.Interval), replyWait), Sessions: 1,
		RateBps: schedule.ProbeRate(cfg.Size, cfg.Interval)}
}

// RunRTT sends cfg.Count UDP echo probes cfg.Interval apart and
// summarises their round-trip times, measured on the tester's monotonic
// clock. onReply, if not nil, sees each reply as it arrives.
func RunRTT(ctx context.Context, t Target, cfg result.RTTConfig, onReply func(seq uint64, rtt time.Duration)) (*result.RTT, error) {
	cfg, err := checked("rtt", cfg)
	if err != nil {
		return nil, err
	}
	s, p, done, err := openProbing(ctx, t, cfg.Request())
	if err != nil {
		return nil, err
	}
	defer done()
	p.size, p.onReply = cfg.Size, onReply
	if err := s.startTest(ctx); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	started := time.Now()
	sent := p.series(ctx, cfg.Count, cfg.Interval)
	rtts := p.collect(0, uint64(sent), replyWait)
	res := &result.RTT{Meta: meta(s, "rtt"), Config: cfg}
	res.Meta.Started = started
	res.Summary = result.RTTSummary{RTTStats: *result.NewRTTStats(sent, rtts), SizeBytes: cfg.Size, Rejected: p.rejectedReplies()}
	res.Summary.ResponderHolds, res.Summary.ResponderHoldMaxUs = p.holdFigures()
	if i, err := tcpinfo.Of(s.tcp); err == nil {
		res.Summary.ControlTCPMinUs = i.MinRTT.Microseconds()
	}
	if err := s.finishProbing(ctx); err != nil {
		res.Summary.Partial, res.Summary.PartialReason = true, "interrupted"
		return res, err
	}
	return res, nil
}
