package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/units"
)

const maxStreams = 128

func init() {
	register(&command{
		name:    "tcp",
		summary: "TCP throughput, with TCP_INFO of the sending sockets",
		usage:   hostUsage + " [flags]",
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

Examples:
  fullpipe tcp 198.18.0.2                 10 s upload, 1 stream
  fullpipe tcp 198.18.0.2 -P 4 --reverse  4 streams, responder sends
  fullpipe tcp 198.18.0.2 --window 64KiB --bytes 100MB
                                          fixed transfer with a 65,536-byte window
  fullpipe tcp 198.18.0.2 --length 512    every write 512 bytes (sweep msglen
                                          runs a series of these)`,
		flags: func(fs *pflag.FlagSet) func(env, []string) error {
			var cf clientFlags
			var cfg tester.TCPConfig
			var bytes, window, mss, pacing, length int64
			fs.IntVarP(&cfg.Streams, "streams", "P", 1, "parallel TCP streams (per direction)")
			durVar(fs, &cfg.Duration, "duration", "t", 10*time.Second, "how long to send (ignored with --bytes)")
			sizeVar(fs, &bytes, "bytes", "n", 0, "send this many payload bytes in total, then stop (a fixed transfer)")
			fs.BoolVarP(&cfg.Reverse, "reverse", "R", false, "the responder sends (download)")
			fs.BoolVar(&cfg.Bidir, "bidir", false, "both directions at once")
			sizeVar(fs, &window, "window", "w", 0, "exact TCP window: most bytes in flight per stream (default: unbounded)")
			fs.StringVar(&cfg.CC, "cc", "", "congestion control on the sending side: reno, cubic, bbr (default: the sender's kernel default)")
			sizeVar(fs, &mss, "mss", "M", 0, "TCP maximum segment size, announced in the SYN (data and control connections)")
			rateVar(fs, &pacing, "pacing-rate", "", 0, "cap each stream's sending rate (SO_MAX_PACING_RATE)")
			fs.IntVar(&cfg.DSCP, "dscp", 0, "DSCP value 0..63 for the data packets")
			durVar(fs, &cfg.Interval, "interval", "i", time.Second, "reporting interval")
			sizeVar(fs, &length, "length", "l", 0, "bytes per write call on the sending side, this host or the responder (default 1,048,576 B)")
			fs.BoolVar(&cfg.Latency, "latency", false, "probe RTT over UDP every 100ms during the load: idle vs loaded latency")
			cf.add(fs)
			return func(e env, args []string) error {
				t, err := cf.target(args)
				if err != nil {
					return err
				}
				if cfg.Streams < 1 || cfg.Streams > maxStreams {
					return usagef("--streams %d: want 1..%d", cfg.Streams, maxStreams)
				}
				if fs.Changed("bytes") && fs.Changed("duration") {
					return usagef("give --duration or --bytes, not both")
				}
				if fs.Changed("bytes") && bytes <= 0 {
					return usagef("--bytes must be positive")
				}
				if bytes > 0 && bytes < int64(cfg.Streams) {
					return usagef("--bytes %d is fewer than one byte per stream", bytes)
				}
				if bytes == 0 && cfg.Duration <= 0 {
					return usagef("--duration must be positive")
				}
				if fs.Changed("window") && window <= 0 {
					return usagef("--window must be positive (a window of 0 moves nothing)")
				}
				if window > 1<<30 {
					return usagef("--window %d is above the 1 GiB TCP maximum", window)
				}
				if fs.Changed("mss") && (mss < 88 || mss > 65495) {
					return usagef("--mss %d: Linux accepts 88..65495 bytes", mss)
				}
				if fs.Changed("length") && (length < 1 || length > 16<<20) {
					return usagef("--length %d: want 1 B to 16 MiB per write", length)
				}
				if cfg.DSCP < 0 || cfg.DSCP > 63 {
					return usagef("--dscp %d: want 0..63", cfg.DSCP)
				}
				if cfg.Reverse && cfg.Bidir {
					return usagef("--reverse and --bidir exclude each other")
				}
				if err := checkInterval(cfg.Interval); err != nil {
					return err
				}
				if bytes > 0 {
					cfg.Duration = 0
				}
				cfg.Bytes, cfg.Window, cfg.MSS, cfg.PacingBps, cfg.WriteSize = bytes, int(window), int(mss), pacing, int(length)
				var p *tcpPrinter
				if !cf.json {
					p = &tcpPrinter{w: e.stdout, cfg: cfg}
					progressf(e, false, "connecting to %s ...", tester.HostPort(t.Addr))
				}
				var progress func(result.TCPInterval)
				if p != nil {
					progress = p.interval
				}
				res, err := tester.RunTCP(e.ctx, t, cfg, progress)
				if res != nil {
					withCommand(&res.Meta, e)
				}
				return finish(e, cf.json, res, res != nil, err, func(w io.Writer) { printTCPSummary(w, res) })
			}
		},
	})
}

// tcpPrinter prints intervals as they arrive.
type tcpPrinter struct {
	w       io.Writer
	cfg     tester.TCPConfig
	started bool
}

func (p *tcpPrinter) interval(iv result.TCPInterval) {
	multi := len(iv.Streams) > 1
	if !p.started {
		p.started = true
		fmt.Fprintf(p.w, "%-15s %-4s %-6s %11s %14s %9s %9s %9s %11s %7s  %s\n",
			"interval", "dir", "stream", "bytes", "goodput", "srtt", "rttvar", "min rtt", "cwnd", "retr", "limited by")
	}
	span := fmt.Sprintf("%5.1f-%5.1f s", iv.StartS, iv.EndS)
	for _, s := range iv.Streams {
		name := fmt.Sprintf("%d", s.Stream)
		fmt.Fprintf(p.w, "%-15s %-4s %-6s %11s %14s %9s %9s %9s %11s %7s  %s\n", span, s.Direction, name,
			units.FormatBytes(float64(s.Bytes)), units.FormatRate(s.ThroughputBps),
			usOrDash(s.HasTCPInfo, s.RTTUs), usOrDash(s.HasTCPInfo, s.RTTVarUs), usOrDash(s.HasTCPInfo, s.RTTMinUs),
			bytesOrDash(s.HasTCPInfo, s.CwndBytes), segs(s.HasTCPInfo, s.RetransSegs), orDash(s.LimitedBy))
	}
	if multi {
		fmt.Fprintf(p.w, "%-15s %-4s %-6s %11s %14s %9s %9s %9s %11s %7s\n", span, "all", "sum",
			units.FormatBytes(float64(iv.Bytes)), units.FormatRate(iv.ThroughputBps), "", "", "", "", segs(true, iv.RetransSegs))
	}
}

func usOrDash(ok bool, us int64) string {
	if !ok {
		return "-"
	}
	return units.FormatDuration(time.Duration(us) * time.Microsecond)
}

func bytesOrDash(ok bool, b uint64) string {
	if !ok {
		return "-"
	}
	return units.FormatBytes(float64(b))
}

func segs(ok bool, n uint32) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%d seg", n)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func printTCPSummary(w io.Writer, r *result.TCP) {
	s := r.Summary
	fmt.Fprintf(w, "\nSummary: %s -> %s (%s, %s)", r.Client.Kernel, r.Target, r.Server.Software, r.Server.Kernel)
	if s.Partial {
		fmt.Fprintf(w, "  PARTIAL: %s", s.PartialReason)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "  goodput is measured at the receiver, first to last byte; TCP figures from the sender's TCP_INFO")
	for _, dir := range []string{result.Up, result.Down} {
		d := s.Directions[dir]
		if d == nil {
			continue
		}
		sender, cc := "client", r.Client.CC
		if dir == result.Down {
			sender, cc = "responder", r.Server.CC
		}
		fmt.Fprintf(w, "  %-4s %s in %.2f s = %s   (sender: %s, cc %s)\n", dir,
			bytesExact(d.Bytes), d.IntervalS, units.FormatRate(d.ThroughputBps), sender, orDash(cc))
		fmt.Fprintf(w, "       sent %s, retransmitted %s (%d segments): TCP Efficiency %.3f %%\n",
			bytesExact(int64(d.BytesSent)), bytesExact(int64(d.BytesRetrans)), d.RetransSegs, d.EfficiencyPct)
		fmt.Fprintf(w, "       RTT min %s, mean of smoothed RTT %s\n",
			units.FormatDuration(time.Duration(d.RTTMinUs)*time.Microsecond), units.FormatDuration(time.Duration(d.RTTMeanUs)*time.Microsecond))
	}
	if len(s.Directions) > 1 {
		fmt.Fprintf(w, "  both directions: %s, %s, TCP Efficiency %.3f %%\n", bytesExact(s.Bytes), units.FormatRate(s.ThroughputBps), s.EfficiencyPct)
	}
	if s.WindowRequested > 0 {
		fmt.Fprintf(w, "  window: requested %s, effective (most bytes in flight seen) %s\n",
			bytesExact(int64(s.WindowRequested)), bytesExact(s.WindowEffective))
	}
	for _, st := range s.Streams {
		if !st.HasTCPInfo {
			continue
		}
		fmt.Fprintf(w, "  stream %d %-4s %s, limited by %s (rwnd %.0f %%, sndbuf %.0f %% of busy time), peer window %s\n",
			st.Stream, st.Direction, units.FormatRate(st.ThroughputBps), orDash(st.LimitedBy), st.RwndLimitedPct, st.SndbufLimitedPct,
			bytesExact(int64(st.PeerWindowBytes)))
	}
	if s.LatencyIdle != nil && s.LatencyLoaded != nil {
		fmt.Fprintf(w, "  latency (UDP RTT): idle median %s (%d/%d replies), loaded median %s p99 %s (%d/%d replies)\n",
			usF(s.LatencyIdle.MedianUs), s.LatencyIdle.Received, s.LatencyIdle.Sent,
			usF(s.LatencyLoaded.MedianUs), usF(s.LatencyLoaded.P99Us), s.LatencyLoaded.Received, s.LatencyLoaded.Sent)
	}
}

func usF(us float64) string { return units.FormatDuration(time.Duration(us * 1e3)) }

// bytesExact prints an exact byte count and a readable one: "65,536 B (64.00 KiB)".
func bytesExact(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%s B (%s)", units.GroupDigits(n), units.FormatBytes(float64(n)))
}
