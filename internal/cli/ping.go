package cli

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/method"
	"github.com/fullpipe/fullpipe/internal/ping"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/tester"
)

const pingExit = `

Exit status: 0 when some probe was answered (whatever the loss), 1 when
none was or the test stopped early (partial), 2 for a bad command line,
3 when the host does not resolve or no socket could be opened.`

func pingSpec() spec {
	return spec{
		name: "ping", usage: "HOST [flags]", pos: argTarget,
		summary: "ICMP echo to any host, no responder: RTT, loss, an ICMP rate limit named as one",
		long: `Sends ICMP echo requests to any host (no fullpipe responder; IPv4, or IPv6 with -6) and times
each reply from the send to the kernel's receive stamp: RTT min, mean,
median, p90, p99 and max in ms to the µs, and loss. It uses an
unprivileged ping socket when net.ipv4.ping_group_range allows this user,
else a raw socket (root or CAP_NET_RAW).

The pattern of the replies is read: a host or router that limits its ICMP
answers (Linux: net.ipv4.icmp_ratelimit with echo-reply in icmp_ratemask,
or icmp_msgs_per_sec) answers a burst, then a steady rate whatever the
offered one. That is reported as "ICMP rate-limited at about N/s", not as
the path's loss (docs/single.md).

--rate-search runs trials of --trial each, RFC 2544 style, for the highest
echo rate with no loss and with at most --loss-ratio, in probes/s and in
bit/s of the probes' Ethernet frames.` + pingExit,
		example: `  fullpipe ping 198.18.0.2
                                  20 echoes 100 ms apart
  fullpipe ping 198.18.0.2 -n 1000 -i 10ms -s 1472 --report ping.html
                                  1000 full-size echoes, and a page
  fullpipe ping 198.18.0.2 --rate-search --max-rate 5000 --trial 1s
                                  the highest echo rate with no loss, and with 0.5 % at most`,
		new: func() command { return &pingArgs{probe: result.ProbeEcho} },
	}
}

func unreachSpec() spec {
	return spec{
		name: "unreach", usage: "HOST [flags]", pos: argTarget,
		summary: "UDP to a closed port of any host, timed by its ICMP port unreachable",
		long: `Sends UDP datagrams to a closed port of any host (IPv4, or IPv6 with -6; default 33434,
traceroute's) and counts the ICMP port-unreachable errors that come back,
timed from the send to their arrival: a test of the path to a host whose
ICMP echo is filtered. No privilege is needed (the errors come back on the
socket's error queue, IP_RECVERR).

Hosts limit these errors: Linux sends at most one per net.ipv4.icmp_ratelimit
(1 s by default) to each peer after a burst of 6, so at the default 100 ms
interval most datagrams go unanswered. The report says "ICMP rate-limited
at about 1/s" rather than counting that as loss; --interval 1s stays under
the default limit.` + pingExit,
		example: `  fullpipe unreach 198.18.0.2 -n 10 -i 1s
                                  10 datagrams 1 s apart, under Linux's default limit
  fullpipe unreach 198.18.0.2 -n 200 -i 10ms --json
                                  200 at 100/s: the limiter's rate and burst, as JSON`,
		new: func() command { return &pingArgs{probe: result.ProbeUnreach} },
	}
}

// pingArgs are ping's and unreach's flags; validate turns them into cfg.
type pingArgs struct {
	clientArgs
	probe            string
	cfg              result.PingConfig
	size             int64
	minRate, maxRate int
	lossPct, resPct  float64
}

func (a *pingArgs) flags(fs *pflag.FlagSet) {
	fs.VarP(count(&a.cfg.Count, result.DefaultPingCount), "count", "n", "probes to send")
	fs.VarP(dur(&a.cfg.Interval, result.DefaultPingInterval), "interval", "i", "time between probes")
	fs.VarP(size(&a.size, result.DefaultPingSize), "size", "s", fmt.Sprintf("payload bytes per probe (ICMP data or UDP payload; %d to %d)", result.MinPingSize, result.MaxPingSize))
	if a.probe == result.ProbeUnreach {
		fs.Var(num(&a.cfg.Port, result.DefaultUnreachPort, "port"), "port", "the closed UDP port")
	}
	fs.Var(dur(&a.cfg.Wait, result.DefaultPingWait), "wait", "after the last probe, how long late replies are awaited")
	fs.BoolVar(&a.cfg.RateSearch, "rate-search", false, "search for the highest rate with no loss (RFC 2544 style trials) instead of one run")
	fs.Var(num(&a.minRate, result.DefaultPingMinRate, "probes/s"), "min-rate", "rate search: the lowest rate tried")
	fs.Var(num(&a.maxRate, result.DefaultPingMaxRate, "probes/s"), "max-rate", fmt.Sprintf("rate search: the highest rate tried (at most %d)", result.MaxPingRate))
	fs.Var(dur(&a.cfg.TrialDuration, result.DefaultPingTrial), "trial", "rate search: each trial's sending time")
	fs.Var(pct(&a.lossPct, result.DefaultPingLossRatio*100), "loss-ratio", "rate search: the second target's loss, percent")
	fs.Var(pct(&a.resPct, result.DefaultPingResolution*100), "resolution", "rate search: how close, relative, the rates found are to the true ones, percent")
	fs.BoolVarP(&a.v4, "ipv4", "4", false, "probe the host's IPv4 address (the default when it has one)")
	fs.BoolVarP(&a.v6, "ipv6", "6", false, "probe the host's IPv6 address")
	fs.BoolVarP(&a.json, "json", "J", false, "print one JSON document (schema in docs/json.md) instead of the summary")
	fs.Var(text(&a.report, "", "FILE"), "report", "also write the result as one self-contained HTML page to this file")
}

func (a *pingArgs) validate(in input) error {
	if len(in.args) != 1 {
		return usagef("want one HOST, got %d arguments", len(in.args))
	}
	if err := refuseZeros(in,
		zeroed{"count", a.cfg.Count == 0, "want at least 1 probe"},
		zeroed{"port", a.cfg.Port == 0, "want 1..65535"},
	); err != nil {
		return err
	}
	if a.lossPct <= 0 || a.lossPct >= 100 { // checked with or without --rate-search (only a search keeps it)
		return usagef("--loss-ratio %g: want more than 0 and less than 100 percent", a.lossPct)
	}
	a.target = tester.Target{Addr: in.args[0]}
	switch {
	case a.v4 && a.v6:
		return usagef("-4 and -6 exclude each other")
	case a.v4:
		a.target.Family = "4"
	case a.v6:
		a.target.Family = "6"
	}
	a.cfg.Probe, a.cfg.Size = a.probe, int(a.size)
	a.cfg.MinRate, a.cfg.MaxRate, a.cfg.LossRatio, a.cfg.Resolution = float64(a.minRate), float64(a.maxRate), a.lossPct/100, a.resPct/100
	if !a.cfg.RateSearch {
		a.cfg.MinRate, a.cfg.MaxRate, a.cfg.TrialDuration, a.cfg.LossRatio, a.cfg.Resolution = 0, 0, 0, 0, 0
	}
	return nil
}

func (a *pingArgs) config() error { return checkConfig(a.cfg) }

func (a *pingArgs) run(e env) error {
	var onReply func(int, time.Duration)
	progress := func(ev method.Event) {
		e.lab.note(ev)
		if !a.json && ev.Kind == method.Line {
			fmt.Fprintf(e.stdout, "  %s\n", ev.Text)
		}
	}
	if !a.json {
		fmt.Fprintf(e.stdout, "%s %s ...\n", e.cmd.Name(), a.target.Addr)
		if !a.cfg.RateSearch && a.cfg.Interval >= 10*time.Millisecond {
			onReply = func(seq int, rtt time.Duration) {
				fmt.Fprintf(e.stdout, "  reply %d: %.3f ms\n", seq, float64(rtt.Nanoseconds())/1e6)
			}
		}
	}
	res, err := method.Ping(e.ctx, tester.Remote{T: a.target}, a.cfg, progress, onReply)
	if res != nil {
		withCommand(&res.Meta, e)
	}
	if err = finish(e, &a.clientArgs, res, res != nil, err); err != nil {
		return err
	}
	if res.Verdict.Kind == ping.Silent {
		return exitError{ExitFailed, fmt.Errorf("no probe was answered")}
	}
	return nil
}
