package tester

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/fullpipe/fullpipe/internal/icmpping"
	"github.com/fullpipe/fullpipe/internal/result"
)

// RunPing sends one run of single-ended probes (cfg's Count, Interval,
// Size, Port, Wait; RateSearch is the method's) to the host of t, which
// needs no responder: t's port, secret and TLS are not used. The host is
// resolved to IPv4. Stopped by ctx, it returns what the run saw with an
// error wrapping result.ErrPartial.
func RunPing(ctx context.Context, t Target, cfg result.PingConfig, onReply func(seq int, rtt time.Duration)) (*result.PingRun, error) {
	cfg = cfg.WithDefaults()
	cfg.RateSearch = false
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	host := PingHost(t.Addr)
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip4", host)
	if err != nil || len(ips) == 0 {
		return nil, fmt.Errorf("%s: no IPv4 address (single-ended tests are IPv4 only): %w", host, err)
	}
	run, err := icmpping.Start(ctx, icmpping.Config{Dst: ips[0], Probe: icmpping.Probe(cfg.Probe), Count: cfg.Count,
		Interval: cfg.Interval, Size: cfg.Size, Port: cfg.Port, Wait: cfg.Wait}, onReply)
	if run == nil {
		return nil, err
	}
	out := &result.PingRun{Fates: run.Fates, Socket: run.Socket, Stamped: run.Stamped, Duplicates: run.Duplicates,
		OtherICMP: run.OtherICMP, Unmatched: run.Unmatched, SendErrors: run.SendErrors, LocalDrops: run.LocalDrops}
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w: %v", result.ErrPartial, err)
	}
	return out, err
}

// PingHost is the host of addr (HOST or HOST:PORT; the port, a
// responder's, is not used by single-ended tests).
func PingHost(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}
