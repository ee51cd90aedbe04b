package tester

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/fullpipe/fullpipe/internal/frame"
	"github.com/fullpipe/fullpipe/internal/pathmtu"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/schedule"
	"github.com/fullpipe/fullpipe/internal/sockopt"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// The search's timing: pmtuIdleProbes idle probes pmtuIdleGap apart
// first; then each probe waits pmtuTimeoutRTTs × the largest of their
// RTTs, and at least pmtuMinTimeout.
const (
	pmtuIdleProbes  = 5
	pmtuIdleGap     = 20 * time.Millisecond
	pmtuMinTimeout  = 100 * time.Millisecond
	pmtuTimeoutRTTs = 4
	// largestLocalMTU is the largest local MTU a search with no MaxBytes
	// may start from (the loopback's).
	largestLocalMTU = 65536
)

// PMTUCost is a path MTU search's own time (RunPMTU) on a path of round
// trip rtt: the idle probes and the wait for their replies, then a
// search in each direction, every probe of every size timing out. With
// no MinBytes the search starts from the lower of IPv4's and IPv6's
// floors, and with no MaxBytes from the largest local MTU: the most
// sizes. One session.
func PMTUCost(cfg result.PMTUConfig, rtt time.Duration) schedule.Cost {
	cfg = cfg.WithDefaults()
	lo := cmp.Or(cfg.MinBytes, min(pathmtu.Floor(false), pathmtu.Floor(true)))
	hi := cmp.Or(cfg.MaxBytes, largestLocalMTU)
	probes := 2 * pathmtu.MaxSizes(lo, hi) * cfg.Tries
	run := seriesTime(pmtuIdleProbes, pmtuIdleGap) + replyWait
	return schedule.Cost{Run: schedule.SatAdd(run, schedule.SatMul(probes, pmtuTimeout(rtt))), Sessions: 1}
}

// pmtuTimeout is a search probe's wait for its reply, from the largest
// idle RTT.
func pmtuTimeout(rtt time.Duration) time.Duration {
	return max(pmtuMinTimeout, schedule.SatMul(pmtuTimeoutRTTs, rtt))
}

// RunPMTU finds the path MTU in each direction. Up: probes of S bytes with
// echo mode "small", so only the client → responder leg carries S. Down:
// small probes asking for a reply of S bytes, sent with DF by the
// responder. A size passes when any of Tries probes is answered within
// the timeout (pmtuTimeout of the largest of the idle RTTs).
func RunPMTU(ctx context.Context, t Target, cfg result.PMTUConfig) (*result.PMTU, error) {
	cfg, err := checked("mtu", cfg)
	if err != nil {
		return nil, err
	}
	s, p, done, err := openProbing(ctx, t, cfg.Request())
	if err != nil {
		return nil, err
	}
	defer done()
	v6 := s.remote.IP.To4() == nil
	rc, err := p.c.SyscallConn()
	if err != nil {
		return nil, err
	}
	if err := sockopt.SetDontFragment(rc, v6); err != nil {
		return nil, fmt.Errorf("set DF on the probe socket: %w", err)
	}
	local, err := sockopt.PathMTU(rc, v6)
	if err != nil {
		return nil, fmt.Errorf("local MTU: %w", err)
	}
	if err := s.startTest(ctx); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	res := &result.PMTU{Meta: meta(s, "mtu"), Config: cfg, LocalBytes: local}
	idle := p.burst(ctx, pmtuIdleProbes, pmtuIdleGap)
	res.Probes += pmtuIdleProbes
	if len(idle) == 0 {
		return nil, fmt.Errorf("no reply to %d small UDP probes from %s: UDP to the responder's port is blocked", pmtuIdleProbes, s.addr)
	}
	res.Timeout = pmtuTimeout(slices.Max(idle))
	m := mtuProber{ctx: ctx, p: p, res: res, tries: cfg.Tries, overhead: frame.IPUDP(v6)}
	lo, hi := cmp.Or(cfg.MinBytes, pathmtu.Floor(v6)), cmp.Or(cfg.MaxBytes, local)
	stopped := func() bool { return ctx.Err() != nil }
	res.UpBytes = pathmtu.Search(lo, hi, m.up, stopped)
	if m, err := sockopt.PathMTU(rc, v6); err == nil && m < local {
		res.ICMPSeen = true
	}
	res.DownBytes = pathmtu.Search(lo, hi, m.down, stopped)
	return res, s.finishProbing(ctx)
}

// mtuProber sends a search's probes: a size passes when any of tries
// probes is answered within the timeout.
type mtuProber struct {
	ctx      context.Context
	p        *prober
	res      *result.PMTU
	tries    int
	overhead int // IP and UDP headers
}

// up probes the client → responder leg: size-byte probes with echo mode
// "small", so only this leg carries the size.
func (m mtuProber) up(size int) bool {
	return m.try(func() uint64 { return m.p.sendEcho(size-m.overhead, wire.EchoSmall, 0) })
}

// down probes the responder → client leg: small probes asking for a
// size-byte reply, sent with DF by the responder.
func (m mtuProber) down(size int) bool {
	return m.try(func() uint64 { return m.p.sendEcho(wire.UDPHeaderLen, wire.EchoSized, size-m.overhead) })
}

func (m mtuProber) try(send func() uint64) bool {
	for range m.tries {
		if m.ctx.Err() != nil {
			return false
		}
		m.res.Probes++
		seq := send()
		if len(m.p.collect(seq, seq+1, m.res.Timeout)) == 1 {
			return true
		}
	}
	return false
}

// finishProbing ends a probing session: the responder is told to stop
// and its last frames are read. It returns an error wrapping
// result.ErrPartial when ctx ended the test early.
func (s *session) finishProbing(ctx context.Context) error {
	msgs := make(chan serverMsg, 4)
	go s.readLoop(msgs)
	reason := "done"
	if ctx.Err() != nil {
		reason = "interrupted"
	}
	s.stopAndWait(reason, msgs)
	if reason != "done" {
		return fmt.Errorf("%w: %s", result.ErrPartial, reason)
	}
	return nil
}
