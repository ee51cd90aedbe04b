package tester

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/fullpipe/fullpipe/internal/icmpping"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/schedule"
)

// PingCost is one run of single-ended probes (RunPing): its probes, then
// the wait for late replies. No session: no responder.
func PingCost(cfg result.PingConfig) schedule.Cost {
	cfg = cfg.WithDefaults()
	return schedule.Cost{Run: schedule.SatAdd(seriesTime(cfg.Count, cfg.Interval), cfg.Wait)}
}

// RunPing sends one run of single-ended probes (cfg's Count, Interval,
// Size, Port, Wait; RateSearch is the method's) to the host of t, which
// needs no responder: t's port, secret and TLS are not used. The host is
// resolved in t.Family ("4", "6"; "": IPv4 when it has an IPv4
// address, else IPv6). Stopped by ctx, it returns what the run saw with an
// error wrapping result.ErrPartial.
func RunPing(ctx context.Context, t Target, cfg result.PingConfig, onReply func(seq int, rtt time.Duration)) (*result.PingRun, error) {
	cfg = cfg.WithDefaults()
	cfg.RateSearch = false
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dst, err := pingAddr(ctx, t)
	if err != nil {
		return nil, err
	}
	run, err := icmpping.Start(ctx, icmpping.Config{Dst: dst, Probe: icmpping.Probe(cfg.Probe), Count: cfg.Count,
		Interval: cfg.Interval, Size: cfg.Size, Port: cfg.Port, Wait: cfg.Wait}, onReply)
	if run == nil {
		return nil, err
	}
	out := &result.PingRun{Fates: run.Fates, Socket: run.Socket, Stamped: run.Stamped, Duplicates: run.Duplicates,
		OtherICMP: run.OtherICMP, Unmatched: run.Unmatched, SendErrors: run.SendErrors, LocalDrops: run.LocalDrops, IPv6: run.IPv6}
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w: %v", result.ErrPartial, err)
	}
	return out, err
}

// pingAddr resolves t's host in its family: IPv4 first when both.
func pingAddr(ctx context.Context, t Target) (netip.Addr, error) {
	host := PingHost(t.Addr)
	network := map[string]string{"4": "ip4", "6": "ip6"}[t.Family]
	if network == "" {
		network = "ip"
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, network, host)
	if err != nil || len(ips) == 0 {
		return netip.Addr{}, fmt.Errorf("%s: no address to probe (%s): %w", host, network, err)
	}
	for _, ip := range ips {
		if ip.Unmap().Is4() {
			return ip.Unmap(), nil
		}
	}
	return ips[0], nil
}

// PingHost is the host of addr (HOST or HOST:PORT; the port, a
// responder's, is not used by single-ended tests).
func PingHost(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}
