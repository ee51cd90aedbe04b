package tester

import (
	"context"
	"fmt"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/sockopt"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// RunPMTU finds the path MTU in each direction. Up: probes of S bytes with
// echo mode "small", so only the client → responder leg carries S. Down:
// small probes asking for a reply of S bytes, sent with DF by the
// responder. A size passes when any of Tries probes is answered within
// the timeout (4 × the largest of 5 idle RTTs, at least 100 ms).
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
	idle := p.burst(ctx, 5, 20*time.Millisecond)
	res.Probes += 5
	if len(idle) == 0 {
		return nil, fmt.Errorf("no reply to 5 small UDP probes from %s: UDP to the responder's port is blocked", s.addr)
	}
	res.Timeout = 100 * time.Millisecond
	for _, r := range idle {
		res.Timeout = max(res.Timeout, 4*r)
	}
	lo := cfg.MinBytes
	if lo == 0 {
		lo = 1200
		if v6 {
			lo = 1280
		}
	}
	hi := cfg.MaxBytes
	if hi == 0 {
		hi = local
	}
	overhead := 28
	if v6 {
		overhead = 48
	}
	probe := func(size int, up bool) bool {
		for range cfg.Tries {
			if ctx.Err() != nil {
				return false
			}
			res.Probes++
			var seq uint64
			if up {
				seq = p.sendEcho(size-overhead, wire.EchoSmall, 0)
			} else {
				seq = p.sendEcho(wire.UDPHeaderLen, wire.EchoSized, size-overhead)
			}
			if len(p.collect(seq, seq+1, res.Timeout)) == 1 {
				return true
			}
		}
		return false
	}
	search := func(up bool) int {
		if probe(hi, up) {
			return hi
		}
		if !probe(lo, up) {
			return 0 // below the search floor: report none found
		}
		a, b := lo, hi // a passes, b fails
		for b-a > 1 && ctx.Err() == nil {
			m := (a + b) / 2
			if probe(m, up) {
				a = m
			} else {
				b = m
			}
		}
		return a
	}
	res.UpBytes = search(true)
	if m, err := sockopt.PathMTU(rc, v6); err == nil && m < local {
		res.ICMPSeen = true
	}
	res.DownBytes = search(false)
	msgs := make(chan serverMsg, 4)
	go s.readLoop(msgs)
	reason := "done"
	if ctx.Err() != nil {
		reason = "interrupted"
	}
	s.stopAndWait(reason, msgs)
	if reason != "done" {
		return res, fmt.Errorf("%w: %s", result.ErrPartial, reason)
	}
	return res, nil
}
