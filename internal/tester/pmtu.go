package tester

import (
	"context"
	"fmt"
	"time"

	"github.com/fullpipe/fullpipe/internal/sockopt"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// PMTUConfig is a packetization-layer path MTU search (RFC 4821 / RFC
// 8899 style) with DF-set UDP probes echoed by the responder, one
// direction at a time, working with or without ICMP.
// The zero value works: the defaults below, decided as the search runs.
type PMTUConfig struct {
	MinBytes int `json:"min_bytes"` // smallest IP packet searched, 68 to 65535; 0: 1200 (RFC 8899 BASE_PLPMTU) or 1280 on IPv6
	MaxBytes int `json:"max_bytes"` // largest, at least MinBytes; 0: the local interface's MTU
	Tries    int `json:"tries"`     // probes per size before it counts as lost, 1 to 1000; 0: 3 (RFC 8899 MAX_PROBES)
}

// request is the search's session: at most Tries probes per size, over
// two directions of up to 2 + 16 sizes each (a binary search of 16-bit
// sizes), after 5 idle probes. 30 s fits a responder's --public limit
// and a search of 20 sizes with timeouts up to 500 ms.
func (c PMTUConfig) request() wire.Request {
	probes := 5 + 2*c.Tries*(2+16)
	return wire.Request{Kind: wire.KindRTT, Duration: pmtuSession, Interval: time.Second, MTU: true, Probes: probes}
}

// PMTUResult is what the search found.
type PMTUResult struct {
	UpBytes    int           `json:"up_bytes"`   // largest IP packet client → responder
	DownBytes  int           `json:"down_bytes"` // largest IP packet responder → client
	LocalBytes int           `json:"local_bytes"`
	ICMPSeen   bool          `json:"icmp_seen"` // the client's kernel learned a smaller MTU from ICMP
	Probes     int           `json:"probes"`
	Timeout    time.Duration `json:"probe_timeout_ns"`
}

// pmtuSession is the duration an mtu session asks for.
const pmtuSession = 30 * time.Second

// RunPMTU finds the path MTU in each direction. Up: probes of S bytes with
// echo mode "small", so only the client → responder leg carries S. Down:
// small probes asking for a reply of S bytes, sent with DF by the
// responder. A size passes when any of Tries probes is answered within
// the timeout (4 × the largest of 5 idle RTTs, at least 100 ms).
func RunPMTU(ctx context.Context, t Target, cfg PMTUConfig) (*PMTUResult, error) {
	cfg, err := checked("mtu", cfg)
	if err != nil {
		return nil, err
	}
	s, p, done, err := openProbing(ctx, t, cfg.request())
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
	res := &PMTUResult{LocalBytes: local}
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
		return res, fmt.Errorf("%w: %s", ErrPartial, reason)
	}
	return res, nil
}
