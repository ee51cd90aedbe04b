package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/method"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/units"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

func init() {
	register(&command{
		name:    "trains",
		summary: "packet trains: a policer's rate and bucket, or a queue's rate and size",
		usage:   hostUsage + " --rate RATE --rtt DURATION [flags]",
		long: `Sends back-to-back UDP packet trains of doubling length through the path to a
responder (RFC 6349 step 5, alone) and reads what limits it from how they
arrive: a queue (a shaper, or a FIFO in front of a slower link) spaces the
train at its rate and delays it until it is full; a policer passes its
bucket unspaced, then only its rate; a clean path delivers them whole; a
lossy line loses packets with neither. It reports the rate and the bucket
or queue, each with an error bar, and whether a queue is too small for the
BDP (below 3/7 of it: a CUBIC flow cannot keep the link busy after a loss).

--rate is the bottleneck's rate as far as known (the contract, or what
rfc6349 measured): it paces the trains (4 x the rate) and bounds their
length (3 x the BDP, or 250 ms of the rate). The trains burst above it on
purpose; coordinate with the provider.

Example:
  fullpipe trains 198.18.0.2 --rate 60M --rtt 20ms --direction up`,
		flags: func(fs *pflag.FlagSet) func(env, []string) error {
			var cf clientFlags
			var rate, cir, mtu int64
			var direction string
			cfg := result.TrainsConfig{}
			rateVar(fs, &rate, "rate", "", 0, "the bottleneck's rate as far as known, layer 2 (required)")
			rateVar(fs, &cir, "cir", "", 0, "committed rate, when above --rate (default: --rate)")
			durVar(fs, &cfg.RTT, "rtt", "", 0, "base round-trip time of the path (required; fullpipe rtt measures it)")
			sizeVar(fs, &mtu, "mtu", "", 1500, "path MTU in bytes, both ways (fullpipe mtu finds it)")
			fs.StringVar(&direction, "direction", "both", "up (client sends), down, or both")
			fs.StringVar(&cfg.Link, "link", "ethernet", "layer-2 framing the rates count: ethernet, vlan, qinq, ppp or none")
			cf.add(fs)
			return func(e env, args []string) error {
				t, err := cf.target(args)
				if err != nil {
					return err
				}
				if rate <= 0 || cfg.RTT <= 0 || cfg.RTT > 10*time.Second {
					return usagef("--rate and --rtt are required, e.g. --rate 100M --rtt 20ms (RTT up to 10s)")
				}
				if mtu < 576 || mtu > 9216 {
					return usagef("--mtu %d: want 576..9216 bytes", mtu)
				}
				if cfg.Directions, err = directions(direction); err != nil {
					return err
				}
				cfg.RateBps, cfg.CIRBps, cfg.MTU = float64(rate), float64(cir), int(mtu)
				progress := func(ev method.Event) {
					if !cf.json && ev.Kind == method.Line {
						fmt.Fprintf(e.stdout, "  %s\n", ev.Text)
					}
				}
				if !cf.json {
					fmt.Fprintf(e.stdout, "packet trains to %s: rate %s, RTT %v, MTU %d B\n", tester.HostPort(t.Addr), units.FormatRate(float64(rate)), cfg.RTT, mtu)
				}
				res, err := method.Trains(e.ctx, tester.Remote{T: t}, cfg, progress)
				if res != nil {
					withCommand(&res.Meta, e)
				}
				return finish(e, cf.json, res, res != nil, err, func(w io.Writer) { printTrains(w, res) })
			}
		},
	})
}

// directions parses --direction.
func directions(d string) ([]vocab.Direction, error) {
	ds, err := vocab.ParseDirections(d)
	if err != nil {
		return nil, usagef("--%v", err)
	}
	return ds, nil
}

// joinDirections says "up", "down" or "up and down".
func joinDirections(ds []vocab.Direction) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = string(d)
	}
	return strings.Join(s, " and ")
}

func printTrains(w io.Writer, r *result.Trains) {
	for _, dir := range vocab.Both {
		d := r.Directions[dir]
		if d == nil || d.Verdict == nil {
			continue
		}
		v := d.Verdict
		fmt.Fprintf(w, "\n%s: %s", dir, v.Kind)
		switch v.Kind {
		case "policer":
			fmt.Fprintf(w, " at %s ± %s, bucket %.0f ± %.0f B", units.FormatRate(v.RateBps.Value), units.FormatRate(v.RateBps.Err), v.BucketBytes.Value, v.BucketBytes.Err)
		case "queue":
			at := ""
			if v.QueueAtLeast {
				at = "at least "
			}
			fmt.Fprintf(w, " at %s ± %s, %s%.0f ± %.0f B", units.FormatRate(v.RateBps.Value), units.FormatRate(v.RateBps.Err), at, v.QueueBytes.Value, v.QueueBytes.Err)
			if d.SmallQueue {
				fmt.Fprintf(w, ": too small for the BDP of %.0f B", d.BDPBytes)
			}
		}
		fmt.Fprintf(w, "\n  %s\n", v.Why)
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
}
