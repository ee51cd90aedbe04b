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

func udpSpec() spec {
	return spec{
		name: "udp", usage: hostUsage + " --rate BPS [flags]", pos: argTarget,
		summary: "paced UDP stream: sender vs receiver rate, loss, reordering, jitter",
		long: `Sends a UDP stream at a constant rate to (or, with --reverse, from) a
fullpipe responder and compares what the sender sent with what the
receiver got: rates, loss, duplicates, reordering, and RFC 3550
interarrival jitter.

--rate is the UDP payload rate in bits per second; the report also gives
the receiver's rate including IP and UDP headers (28 bytes per datagram
on IPv4, 48 on IPv6). Each datagram carries a sequence number and a send
timestamp in its first 40 bytes, or in a compact 18-byte header below
40 bytes, so --size must be at least 18 bytes (RFC 2544's 64-byte
Ethernet frame over IPv4).`,
		example: `  fullpipe udp 198.18.0.2 --rate 50M --size 1400 -t 10
                                  50 Mbit/s of 1400-byte datagrams for 10 s
  fullpipe udp -c 198.18.0.2 -b 1G -R -J
                                  the responder sends 1 Gbit/s; one JSON document
  fullpipe udp 198.18.0.2 --rate 10M --size 18 --dscp 46 --echo-every 100
                                  64-byte frames marked EF, 1 in 100 a latency probe
  fullpipe udp 198.18.0.2 --rate 50M --report udp.html
                                  also a page with rate, loss and jitter per interval`,
		new: func() command { return &udpArgs{} },
	}
}

// udpArgs are udp's flags; validate turns them into cfg.
type udpArgs struct {
	clientArgs
	cfg  result.UDPConfig
	size int64
}

func (a *udpArgs) flags(fs *pflag.FlagSet) {
	fs.VarP(rate(&a.cfg.RateBps, 10_000_000), "rate", "b", "UDP payload rate")
	fs.VarP(size(&a.size, 1400), "size", "s", "UDP payload bytes per datagram")
	fs.VarP(dur(&a.cfg.Duration, 10*time.Second), "duration", "t", "how long to send")
	fs.BoolVarP(&a.cfg.Reverse, "reverse", "R", false, "the responder sends")
	fs.VarP(dur(&a.cfg.Interval, time.Second), "interval", "i", "reporting interval")
	fs.Var(dur(&a.cfg.Drain, 500*time.Millisecond), "drain", "how long the receiver keeps counting after the sender stops")
	fs.Var(num(&a.cfg.DSCP, 0, "0..63"), "dscp", "DSCP value of the stream's datagrams, either way")
	fs.Var(num(&a.cfg.EchoEvery, 0, "N"), "echo-every", "every Nth datagram is a latency probe the responder reflects (0: none)")
	a.clientArgs.flags(fs)
}

func (a *udpArgs) validate(in input) error {
	if err := a.resolve(in); err != nil {
		return err
	}
	if err := refuseZeros(in,
		zeroed{"rate", a.cfg.RateBps == 0, "want a positive rate"},
		zeroed{"size", a.size == 0, fmt.Sprintf("want %d to %d bytes", wire.MinUDPSize, wire.MaxUDPPayload)},
		zeroed{"duration", a.cfg.Duration == 0, "want a positive duration"},
	); err != nil {
		return err
	}
	a.cfg.Size = int(a.size)
	return checkInterval(a.cfg.Interval)
}

func (a *udpArgs) run(e env) error {
	var progress func(result.UDPInterval)
	if !a.json {
		progressf(e, false, "connecting to %s ...", tester.HostPort(a.target.Addr))
		progress = (&report.UDPLive{W: e.stdout}).Interval
	}
	res, err := tester.RunUDP(e.ctx, a.target, a.cfg, progress)
	if res != nil {
		withCommand(&res.Meta, e)
	}
	return finish(e, &a.clientArgs, res, res != nil, err)
}
