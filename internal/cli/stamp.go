package cli

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/kinds"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/tester"
)

func stampSpec() spec {
	return spec{
		name: "stamp", usage: hostUsage + " [flags]", pos: argTarget,
		summary: "STAMP (RFC 8762) to any STAMP or TWAMP-Light reflector: delays, loss by direction",
		long: `Runs a STAMP Session-Sender (RFC 8762) against a reflector at HOST, UDP
port 862 unless HOST:PORT or -p names another: a router's STAMP or
TWAMP-Light reflector, or fullpipe serve --stamp. No fullpipe responder
is needed.

Each test packet is stamped four times: T1 sent here, T2 received and T3
sent by the reflector, T4 received here. The round trip leaves out the
reflector's residence: (T4 − T1) − (T3 − T2). One-way delays (T2 − T1,
T4 − T3) subtract one host's clock from the other's: they are reported
only with --clock-synced when the reflector also states its clock
synchronized (the S bit). With --stateful the reflector is taken to
number what it receives (RFC 8762 stateful mode), which places each loss
forward or backward; otherwise losses have no direction. --key-file
runs the authenticated mode (HMAC-SHA-256, 112-byte packets): the
reflector must have the same key.

Exit 3 when no test packet is answered (nothing listens, a firewall, or a
key mismatch), 1 when the session was cut short.`,
		example: `  fullpipe stamp 198.18.0.2                       100 packets, 100 ms apart, to port 862
  fullpipe stamp 198.18.0.2:8620 -n 1000 -i 10ms --stateful
                                                  loss forward and backward against a stateful reflector
  fullpipe stamp router.example --key-file stamp.key --timestamps ptp
                                                  authenticated, PTP timestamps
  fullpipe stamp 198.18.0.2 --clock-synced -J     one-way delays too (both clocks synchronized), as JSON
  fullpipe stamp 198.18.0.2 --report stamp.html   also a page with the figures`,
		new: func() command { return &stampArgs{} },
	}
}

// stampArgs are stamp's flags; validate turns them into cfg and the
// reflector's host.
type stampArgs struct {
	host   string // -c
	port   int    // -p
	json   bool
	report string
	size   int64
	cfg    result.STAMPConfig
	target tester.Target // the reflector's host (its port is cfg.Port)
}

func (a *stampArgs) flags(fs *pflag.FlagSet) {
	fs.VarP(text(&a.host, "", "HOST"), "client", "c", "the reflector's host (or give HOST[:PORT] as the argument)")
	fs.VarP(num(&a.port, 0, "PORT"), "port", "p", fmt.Sprintf("the reflector's UDP port (default %d)", result.DefaultSTAMPPort))
	fs.VarP(count(&a.cfg.Count, result.DefaultSTAMPCount), "count", "n", "test packets to send")
	fs.VarP(dur(&a.cfg.Interval, result.DefaultSTAMPInterval), "interval", "i", "time between test packets")
	fs.VarP(size(&a.size, 0), "size", "s", "UDP payload bytes per test packet, 0 = the smallest (44, 112 with --key-file)")
	fs.Var(dur(&a.cfg.Wait, result.DefaultSTAMPWait), "timeout", "how long replies are awaited after the last send")
	fs.BoolVar(&a.cfg.Stateful, "stateful", false, "the reflector is stateful (numbers what it receives): place losses forward or backward")
	fs.Var(text(&a.cfg.KeyFile, "", "FILE"), "key-file", "authenticated mode: file whose bytes are the HMAC key (16+ bytes; the reflector's too)")
	fs.Var(oneOf(&a.cfg.Timestamps, "ntp", "ntp", "ptp"), "timestamps", "timestamp format: ntp (RFC 5905) or ptp (IEEE 1588v2, TAI)")
	fs.BoolVar(&a.cfg.ClockSynced, "clock-synced", false, "this host's clock is synchronized (NTP/PTP): report one-way delays when the reflector's is too")
	fs.Var(text(&a.report, "", "FILE"), "report", "also write the result as one self-contained HTML page to this file")
	fs.BoolVarP(&a.json, "json", "J", false, "print one JSON document (schema in docs/json.md) instead of the summary")
}

func (a *stampArgs) validate(in input) error {
	host := a.host
	switch {
	case len(in.args) > 1:
		return usagef("want one %s, got %d arguments", hostUsage, len(in.args))
	case len(in.args) == 1 && in.changed("client"):
		return usagef("give the reflector once: %s or -c HOST, not both", hostUsage)
	case len(in.args) == 1:
		host = in.args[0]
	case !in.changed("client"):
		return usagef("missing %s of a STAMP or TWAMP-Light reflector (default port %d), or -c HOST", hostUsage, result.DefaultSTAMPPort)
	}
	a.cfg.Port = result.DefaultSTAMPPort
	if h, p, err := net.SplitHostPort(host); err == nil {
		if in.changed("port") {
			return usagef("%s names a port already: drop -p or the :PORT", host)
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return usagef("port %q of %s is not a number", p, host)
		}
		host, a.cfg.Port = h, n
	} else if in.changed("port") {
		a.cfg.Port = a.port
	}
	if host == "" {
		return usagef("the reflector's host is empty")
	}
	a.target = tester.Target{Addr: host}
	a.cfg.Size = int(a.size) // 0: the smallest, as the config reads it
	// Before the defaults, which fill zeros.
	if err := refuseZeros(in,
		zeroed{"count", a.cfg.Count == 0, "want at least 1 test packet"},
		zeroed{"interval", a.cfg.Interval == 0, "want a time above 0 between test packets"},
		zeroed{"timeout", a.cfg.Wait == 0, "want a time above 0 for the last replies"},
	); err != nil {
		return err
	}
	a.cfg = a.cfg.WithDefaults()
	if span := a.cfg.Span(); span > 24*time.Hour {
		return usagef("%d packets %v apart take %v: send fewer or closer packets", a.cfg.Count, a.cfg.Interval, span.Round(time.Second))
	}
	if a.cfg.KeyFile != "" {
		if _, err := tester.ReadSTAMPKey(a.cfg.KeyFile); err != nil {
			return usagef("--key-file: %v", err)
		}
	}
	return nil
}

func (a *stampArgs) run(e env) error {
	if !a.json {
		progressf(e, false, "STAMP to %s: %d test packets of %d B, %v apart ...", tester.STAMPHost(a.target, a.cfg.Port), a.cfg.Count, a.cfg.Size, a.cfg.Interval)
	}
	d, err := kinds.Execute(e.ctx, tester.Remote{T: a.target}, a.cfg, nil)
	res, _ := d.(*result.STAMP)
	if res != nil {
		withCommand(&res.Meta, e)
	}
	c := clientArgs{json: a.json, report: a.report}
	if err == nil && res != nil && res.Summary.Received == 0 {
		if oerr := c.output(e, res); oerr != nil {
			return oerr
		}
		return exitError{ExitRefused, fmt.Errorf("no reply to any of %d test packets from %s: is a reflector listening there (and with the same key)?", res.Summary.Sent, res.Target)}
	}
	return finish(e, &c, d, res != nil, err)
}
