package cli

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/report"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/wire"
)

func rttSpec() spec {
	return spec{
		name: "rtt", usage: hostUsage + " [flags]", pos: argTarget,
		summary: "UDP round-trip time probes: min/mean/median/p99/max, loss",
		long: `Sends UDP echo probes to a fullpipe responder and times each reply on this
host's monotonic clock, at the kernel's receive stamp of the reply. The
responder says how long it held each probe (its kernel's receive stamp to
its reply) and that is taken out, so neither host's scheduling counts as
path; what is left includes both hosts' UDP stacks, typically tens of
microseconds on a LAN host.

The probe count is -n (as Windows ping's): -c names the responder, as in
iperf3.`,
		example: `  fullpipe rtt 198.18.0.2 --count 100 --interval 10ms
                                  100 probes, 10 ms apart
  fullpipe rtt -c 198.18.0.2 -n 20 -J
                                  20 probes, one JSON document
  fullpipe rtt 198.18.0.2 -n 100 --report rtt.html
                                  also a page with the RTT summary drawn as a strip`,
		new: func() command { return &rttArgs{} },
	}
}

// rttArgs are rtt's flags; validate turns them into cfg.
type rttArgs struct {
	clientArgs
	cfg  result.RTTConfig
	size int64
}

func (a *rttArgs) flags(fs *pflag.FlagSet) {
	fs.VarP(count(&a.cfg.Count, 10), "count", "n", "probes to send")
	fs.VarP(dur(&a.cfg.Interval, 100*time.Millisecond), "interval", "i", "time between probes")
	fs.VarP(size(&a.size, 64), "size", "s", "UDP payload bytes per probe (at least 40)")
	a.clientArgs.flags(fs)
}

func (a *rttArgs) validate(in input) error {
	if err := a.resolve(in); err != nil {
		return err
	}
	cfg := &a.cfg
	if err := refuseZeros(in,
		zeroed{"count", cfg.Count == 0, "want at least 1 probe"},
		zeroed{"interval", cfg.Interval == 0, fmt.Sprintf("want at least %v between probes", result.MinRTTInterval)},
		zeroed{"size", a.size == 0, fmt.Sprintf("want %d to %d bytes", wire.UDPHeaderLen, wire.MaxUDPPayload)},
	); err != nil {
		return err
	}
	cfg.Size = int(a.size)
	return nil
}

// config checks the config's rules, then the command line's own: a run
// that fits a responder's default limit.
func (a *rttArgs) config() error {
	if err := checkConfig(a.cfg); err != nil {
		return err
	}
	if span := time.Duration(a.cfg.Count) * a.cfg.Interval; span > 9*time.Minute {
		return usagef("%d probes %v apart take %v; a responder allows 10m per test by default: send fewer or closer probes", a.cfg.Count, a.cfg.Interval, span.Round(time.Second))
	}
	return nil
}

func (a *rttArgs) run(e env) error {
	var onReply func(uint64, time.Duration)
	if !a.json {
		progressf(e, false, "probing %s: %d probes of %d bytes, %v apart ...", tester.HostPort(a.target.Addr), a.cfg.Count, a.cfg.Size, a.cfg.Interval)
		onReply = func(seq uint64, rtt time.Duration) { report.RTTReply(e.stdout, seq, rtt) }
	}
	res, err := tester.RunRTT(e.ctx, a.target, a.cfg, onReply)
	if res != nil {
		withCommand(&res.Meta, e)
	}
	return finish(e, &a.clientArgs, res, res != nil, err)
}
