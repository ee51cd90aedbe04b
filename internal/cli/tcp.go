package cli

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/report"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/tester"
)

func tcpSpec() spec {
	return spec{
		name: "tcp", usage: hostUsage + " [flags]", pos: argTarget,
		summary: "TCP throughput, with TCP_INFO of the sending sockets",
		long: `Measures TCP goodput to (or, with --reverse, from) a fullpipe responder.

Goodput is payload bytes counted by the receiving application, over the
span from its first to its last byte. Every interval and the summary also
show, from TCP_INFO of the sending socket (on whichever host sends):
smoothed RTT, RTT variance, minimum RTT, congestion window, bytes sent and
retransmitted, retransmitted segments, delivery rate, and which limit held
the sender back (rwnd: the receiver's window; sndbuf: the send buffer;
cwnd: congestion control or the path). The summary gives RFC 6349's TCP
Efficiency: (bytes sent - bytes retransmitted) / bytes sent x 100.

--window W bounds the bytes in flight to exactly W: the sender writes only
while its unacknowledged plus unsent bytes are below W (SIOCOUTQ). Socket
buffer sizes do not give an exact window on Linux (they are doubled and
autotuned). The report shows the requested window and the largest
in-flight amount observed, plus the peer's advertised window.

iperf3's habits work: -c HOST, -p PORT, -t 10 (seconds), -P 4, -R, -w,
-l, -M, -n, -B (--bind), -J (--json), -C (--cc).`,
		example: `  fullpipe tcp 198.18.0.2                 10 s upload, 1 stream
  fullpipe tcp 198.18.0.2 -P 4 --reverse  4 streams, responder sends
  fullpipe tcp -c 198.18.0.2 -p 6349 -t 30 -J
                                          30 s, one JSON document (as iperf3 -c ... -J)
  fullpipe tcp 198.18.0.2 --window 64KiB --bytes 100MB
                                          fixed transfer with a 65,536-byte window
  fullpipe tcp 198.18.0.2 --length 512    every write 512 bytes (sweep msglen
                                          runs a series of these)
  fullpipe tcp 198.18.0.2 --latency --report tcp.html
                                          also a page with goodput, RTT and
                                          retransmissions per interval, idle vs
                                          loaded latency`,
		new: func() command { return &tcpArgs{} },
	}
}

// tcpArgs are tcp's flags; validate turns them into cfg.
type tcpArgs struct {
	clientArgs
	cfg                                result.TCPConfig
	bytes, window, mss, pacing, length int64
}

func (a *tcpArgs) flags(fs *pflag.FlagSet) {
	fs.VarP(count(&a.cfg.Streams, 1), "streams", "P", "parallel TCP streams (per direction)")
	fs.VarP(dur(&a.cfg.Duration, 10*time.Second), "duration", "t", "how long to send (ignored with --bytes)")
	fs.VarP(size(&a.bytes, 0), "bytes", "n", "send this many payload bytes in total, then stop (a fixed transfer)")
	fs.BoolVarP(&a.cfg.Reverse, "reverse", "R", false, "the responder sends (download)")
	fs.BoolVar(&a.cfg.Bidir, "bidir", false, "both directions at once")
	fs.VarP(size(&a.window, 0), "window", "w", "exact TCP window: most bytes in flight per stream (default: unbounded)")
	fs.VarP(text(&a.cfg.CC, "", "NAME"), "cc", "C", "congestion control on the sending side: reno, cubic, bbr (default: the sender's kernel default)")
	fs.VarP(size(&a.mss, 0), "mss", "M", "TCP maximum segment size, announced in the SYN (data and control connections)")
	fs.Var(rate(&a.pacing, 0), "pacing-rate", "cap each stream's sending rate (SO_MAX_PACING_RATE)")
	fs.Var(num(&a.cfg.DSCP, 0, "0..63"), "dscp", "DSCP value of the data packets")
	fs.VarP(dur(&a.cfg.Interval, time.Second), "interval", "i", "reporting interval")
	fs.VarP(size(&a.length, 0), "length", "l", "bytes per write call on the sending side, this host or the responder (default 1,048,576 B)")
	fs.BoolVar(&a.cfg.Latency, "latency", false, "probe RTT over UDP every 100ms during the load: idle vs loaded latency")
	a.clientArgs.flags(fs)
}

func (a *tcpArgs) validate(in input) error {
	if err := a.resolve(in); err != nil {
		return err
	}
	cfg := &a.cfg
	if err := refuseZeros(in,
		zeroed{"streams", cfg.Streams == 0, "want at least 1 (the responder announces its own limit)"},
		zeroed{"duration", cfg.Duration == 0, "want a positive duration, or --bytes"},
		zeroed{"bytes", a.bytes == 0, "want a positive byte count, or --duration"},
		zeroed{"window", a.window == 0, "a window of 0 moves nothing (leave --window out for no bound)"},
		zeroed{"mss", a.mss == 0, fmt.Sprintf("Linux accepts %d to %d bytes (leave --mss out for the kernel's choice)", result.MinMSS, result.MaxMSS)},
	); err != nil {
		return err
	}
	if in.changed("length") && (a.length < 1 || a.length > result.MaxWriteSize) {
		return usagef("--length %d: want 1 B to 16 MiB per write", a.length)
	}
	if err := checkInterval(cfg.Interval); err != nil {
		return err
	}
	if a.bytes > 0 && !in.changed("duration") {
		cfg.Duration = 0 // --duration's default is for a test without --bytes
	}
	cfg.Bytes, cfg.Window, cfg.MSS, cfg.PacingBps, cfg.WriteSize = a.bytes, int(a.window), int(a.mss), a.pacing, int(a.length)
	return nil
}

func (a *tcpArgs) run(e env) error {
	var progress func(result.TCPInterval)
	if !a.json {
		progress = (&report.TCPLive{W: e.stdout}).Interval
		progressf(e, false, "connecting to %s ...", tester.HostPort(a.target.Addr))
	}
	res, err := tester.RunTCP(e.ctx, a.target, a.cfg, progress)
	if res != nil {
		withCommand(&res.Meta, e)
	}
	return finish(e, &a.clientArgs, res, res != nil, err)
}
