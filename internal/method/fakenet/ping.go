package fakenet

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/fullpipe/fullpipe/internal/frame"
	"github.com/fullpipe/fullpipe/internal/ping"
	"github.com/fullpipe/fullpipe/internal/result"
)

// Ping answers one run of single-ended probes from the path's physics:
// each probe crosses the bottleneck (RateBps, its tail-drop QueueBytes:
// a probe waits for the backlog ahead of it, or is dropped when the
// queue is full), the random loss both ways, then the far host's ICMP
// limiter (ICMPLimitPPS, ICMPBurst); its RTT is BaseRTT plus its wait.
// Probes are sent exactly Interval apart from 0; the loss draws are
// seeded from the run's count and interval, so a run replays.
func (p *Path) Ping(ctx context.Context, cfg result.PingConfig, onReply func(int, time.Duration)) (*result.PingRun, error) {
	cfg, err := checked(cfg)
	if err != nil {
		return nil, err
	}
	if err := p.call(ctx, cfg, "ping %s %d×%v %d B", cfg.Probe, cfg.Count, cfg.Interval, cfg.Size); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(uint64(cfg.Count), uint64(cfg.Interval)))
	wire := float64(cfg.Size + frame.IPv4UDP + framing) // bytes the bottleneck counts per probe
	var backlog float64                                 // bytes queued at the bottleneck
	tokens := float64(max(p.ICMPBurst, 1))
	run := &result.PingRun{Socket: "fake", Fates: make([]ping.Fate, cfg.Count)}
	for i := range run.Fates {
		f := &run.Fates[i]
		f.Sent = time.Duration(i) * cfg.Interval
		var wait time.Duration
		pass := true
		if p.RateBps > 0 {
			if i > 0 {
				backlog = max(0, backlog-p.RateBps/8*cfg.Interval.Seconds())
			}
			pass = p.QueueBytes == 0 || backlog+wire <= float64(p.QueueBytes)+wire
			if pass {
				backlog += wire
				wait = time.Duration(backlog / (p.RateBps / 8) * float64(time.Second))
			}
		}
		pass = pass && rng.Float64()*100 >= p.LossPct
		if pass && p.ICMPLimitPPS > 0 {
			if i > 0 {
				tokens = min(float64(max(p.ICMPBurst, 1)), tokens+p.ICMPLimitPPS*cfg.Interval.Seconds())
			}
			pass = tokens >= 1
			if pass {
				tokens--
			}
		}
		pass = pass && rng.Float64()*100 >= p.LossPct
		if pass {
			f.Answered, f.RTT = true, p.BaseRTT+wait
			run.Stamped++
			if onReply != nil {
				onReply(i, f.RTT)
			}
		}
	}
	return run, nil
}
