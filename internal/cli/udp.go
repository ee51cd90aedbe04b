package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/units"
	"github.com/fullpipe/fullpipe/internal/vocab"
	"github.com/fullpipe/fullpipe/internal/wire"
)

func init() {
	register(&command{
		name:    "udp",
		summary: "paced UDP stream: sender vs receiver rate, loss, reordering, jitter",
		usage:   hostUsage + " --rate BPS [flags]",
		long: `Sends a UDP stream at a constant rate to (or, with --reverse, from) a
fullpipe responder and compares what the sender sent with what the
receiver got: rates, loss, duplicates, reordering, and RFC 3550
interarrival jitter.

--rate is the UDP payload rate in bits per second; the report also gives
the receiver's rate including IP and UDP headers (28 bytes per datagram
on IPv4, 48 on IPv6). Each datagram carries a sequence number and a send
timestamp in its first 40 bytes, so --size must be at least 40 bytes.

Example:
  fullpipe udp 198.18.0.2 --rate 50M --size 1400 -t 10s`,
		flags: func(fs *pflag.FlagSet) func(env, []string) error {
			var cf clientFlags
			var cfg result.UDPConfig
			var size int64
			rateVar(fs, &cfg.RateBps, "rate", "b", 10_000_000, "UDP payload rate")
			sizeVar(fs, &size, "size", "s", 1400, "UDP payload bytes per datagram")
			durVar(fs, &cfg.Duration, "duration", "t", 10*time.Second, "how long to send")
			fs.BoolVarP(&cfg.Reverse, "reverse", "R", false, "the responder sends")
			durVar(fs, &cfg.Interval, "interval", "i", time.Second, "reporting interval")
			durVar(fs, &cfg.Drain, "drain", "", 500*time.Millisecond, "how long the receiver keeps counting after the sender stops")
			cf.add(fs)
			return func(e env, args []string) error {
				t, err := cf.target(args)
				if err != nil {
					return err
				}
				if cfg.RateBps <= 0 {
					return usagef("--rate must be positive")
				}
				if size < wire.UDPHeaderLen || size > 65507 {
					return usagef("--size %d: want %d..65507 bytes (the first %d carry fullpipe's header)", size, wire.UDPHeaderLen, wire.UDPHeaderLen)
				}
				if cfg.Duration <= 0 {
					return usagef("--duration must be positive")
				}
				if err := checkInterval(cfg.Interval); err != nil {
					return err
				}
				cfg.Size = int(size)
				var progress func(result.UDPInterval)
				if !cf.json {
					progressf(e, false, "connecting to %s ...", tester.HostPort(t.Addr))
					first := true
					progress = func(iv result.UDPInterval) {
						if first {
							first = false
							fmt.Fprintf(e.stdout, "%-15s %11s %12s %14s %9s %10s\n", "interval", "packets", "bytes", "rate", "lost", "jitter")
						}
						fmt.Fprintf(e.stdout, "%5.1f-%5.1f s   %11d %12s %14s %9d %10s\n", iv.StartS, iv.EndS, iv.Packets,
							units.FormatBytes(float64(iv.Bytes)), units.FormatRate(iv.ThroughputBps), iv.Lost, usF(iv.JitterUs))
					}
				}
				res, err := tester.RunUDP(e.ctx, t, cfg, progress)
				if res != nil {
					withCommand(&res.Meta, e)
				}
				return finish(e, cf.json, res, res != nil, err, func(w io.Writer) { printUDPSummary(w, res) })
			}
		},
	})
}

func printUDPSummary(w io.Writer, r *result.UDP) {
	s := r.Summary
	fmt.Fprintf(w, "\nSummary: UDP %s, %d-byte payloads, target %s", s.Direction, s.SizeBytes, units.FormatRate(float64(s.TargetRateBps)))
	if s.Partial {
		fmt.Fprintf(w, "  PARTIAL: %s", s.PartialReason)
	}
	fmt.Fprintln(w)
	late := "" // an older responder sending down does not report its schedule
	if s.Direction == vocab.Up || s.SenderMaxSlipUs > 0 {
		late = fmt.Sprintf(", %d sent > 1 ms behind schedule (at most %.2f ms)", s.SenderLate, s.SenderMaxSlipUs/1e3)
	}
	fmt.Fprintf(w, "  sender   %d datagrams, %s, %s (payload)%s\n",
		s.SentPackets, bytesExact(int64(s.SentBytes)), units.FormatRate(s.SenderRateBps), late)
	if c := s.Sender(s.Direction); c != nil {
		fmt.Fprintf(w, "  sender CPU %.1f %% of a CPU, its threads waited %.1f %% of the time, its %d CPU(s) %.0f %% busy\n", c.CPUPct, c.WaitPct, c.CPUs, c.CPUsBusyPct)
	}
	fmt.Fprintf(w, "  receiver %d datagrams, %s in %.3f s, %s (payload), %s (with IP+UDP headers)\n",
		s.RecvPackets, bytesExact(int64(s.RecvBytes)), s.IntervalS, units.FormatRate(s.ReceiverRateBps), units.FormatRate(s.ReceiverIPBps))
	fmt.Fprintf(w, "  lost %d (%.3f %%), duplicates %d, reordered %d, jitter %s (RFC 3550)\n",
		s.Lost, s.LossPct, s.Duplicates, s.Reordered, usF(s.JitterUs))
}
