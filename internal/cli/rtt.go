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

func init() {
	register(&command{
		name:    "rtt",
		summary: "UDP round-trip time probes: min/mean/median/p99/max, loss",
		usage:   hostUsage + " [flags]",
		long: `Sends UDP echo probes to a fullpipe responder and times each reply on this
host's monotonic clock. The RTT includes both hosts' UDP stacks and the
responder's echo, typically tens of microseconds on a LAN host.

Example:
  fullpipe rtt 198.18.0.2 --count 100 --interval 10ms`,
		flags: func(fs *pflag.FlagSet) func(env, []string) error {
			var cf clientFlags
			var cfg result.RTTConfig
			var size int64
			fs.IntVarP(&cfg.Count, "count", "c", 10, "probes to send")
			durVar(fs, &cfg.Interval, "interval", "i", 100*time.Millisecond, "time between probes")
			sizeVar(fs, &size, "size", "s", 64, "UDP payload bytes per probe (at least 40)")
			cf.add(fs)
			return func(e env, args []string) error {
				t, err := cf.target(args)
				if err != nil {
					return err
				}
				if cfg.Count < 1 || cfg.Count > 1_000_000 {
					return usagef("--count %d: want 1..1,000,000", cfg.Count)
				}
				if span := time.Duration(cfg.Count) * cfg.Interval; span > 9*time.Minute {
					return usagef("%d probes %v apart take %v; a responder allows 10m per test by default: send fewer or closer probes", cfg.Count, cfg.Interval, span.Round(time.Second))
				}
				if cfg.Interval < time.Millisecond {
					return usagef("--interval %v is below the 1ms minimum", cfg.Interval)
				}
				if size < 40 || size > 65507 {
					return usagef("--size %d: want 40..65507 bytes", size)
				}
				cfg.Size = int(size)
				var onReply func(uint64, time.Duration)
				if !cf.json {
					progressf(e, false, "probing %s: %d probes of %d bytes, %v apart ...", tester.HostPort(t.Addr), cfg.Count, cfg.Size, cfg.Interval)
					onReply = func(seq uint64, rtt time.Duration) {
						fmt.Fprintf(e.stdout, "reply seq=%d rtt=%s\n", seq, units.FormatDuration(rtt))
					}
				}
				res, err := tester.RunRTT(e.ctx, t, cfg, onReply)
				if res != nil {
					withCommand(&res.Meta, e)
				}
				return finish(e, cf.json, res, res != nil, err, func(w io.Writer) { printRTTSummary(w, res) })
			}
		},
	})
}

func printRTTSummary(w io.Writer, r *result.RTT) {
	s := r.Summary
	fmt.Fprintf(w, "\nSummary: %d probes to %s, %d received, loss %.1f %%", s.Sent, r.Target, s.Received, s.LossPct)
	if s.Partial {
		fmt.Fprintf(w, "  PARTIAL: %s", s.PartialReason)
	}
	fmt.Fprintln(w)
	if s.Received > 0 {
		fmt.Fprintf(w, "  RTT min %s, mean %s, median %s, p99 %s, max %s, stddev %s\n",
			usF(s.MinUs), usF(s.MeanUs), usF(s.MedianUs), usF(s.P99Us), usF(s.MaxUs), usF(s.StdDevUs))
	}
}
