package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/method"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/units"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

func trainsSpec() spec {
	return spec{
		name: "trains", usage: hostUsage + " --rate RATE --rtt DURATION [flags]", pos: argTarget,
		summary: "packet trains: a policer's rate and bucket, or a queue's rate and size",
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
purpose; coordinate with the provider.`,
		example: `  fullpipe trains 198.18.0.2 --rate 60M --rtt 20ms --direction up
                                  what limits the upload of a 60 Mbit/s, 20 ms path
  fullpipe trains 198.18.0.2 --rate 60M --rtt 20ms --report trains.html
                                  also a page with each direction's verdict and trains`,
		new: func() command { return &trainsArgs{} },
	}
}

// trainsArgs are trains' flags; validate turns them into cfg.
type trainsArgs struct {
	clientArgs
	cfg            result.TrainsConfig
	rate, cir, mtu int64
	direction      string
}

func (a *trainsArgs) flags(fs *pflag.FlagSet) {
	fs.Var(rate(&a.rate, 0), "rate", "the bottleneck's rate as far as known, layer 2 (required)")
	fs.Var(rate(&a.cir, 0), "cir", "committed rate, when above --rate (default: --rate)")
	fs.Var(dur(&a.cfg.RTT, 0), "rtt", "base round-trip time of the path (required; fullpipe rtt measures it)")
	fs.Var(size(&a.mtu, 1500), "mtu", "path MTU, both ways (fullpipe mtu finds it)")
	fs.Var(oneOf(&a.direction, "both", "up", "down", "both"), "direction", "up (client sends), down, or both")
	fs.Var(oneOf(&a.cfg.Link, "ethernet", "ethernet", "vlan", "qinq", "ppp", "none"), "link", "layer-2 framing the rates count")
	a.clientArgs.flags(fs)
}

func (a *trainsArgs) validate(in input) error {
	err := a.resolve(in)
	if err != nil {
		return err
	}
	if !in.changed("rate") || !in.changed("rtt") { // values given are the config's to judge
		return usagef("--rate and --rtt are required, e.g. --rate 100M --rtt 20ms")
	}
	if err := refuseZeros(in, zeroed{"mtu", a.mtu == 0, fmt.Sprintf("want the path MTU in bytes (leave --mtu out for %d)", result.DefaultTrainsMTU)}); err != nil {
		return err
	}
	if a.cfg.Directions, err = directions(a.direction); err != nil {
		return err
	}
	a.cfg.RateBps, a.cfg.CIRBps, a.cfg.MTU = float64(a.rate), float64(a.cir), int(a.mtu)
	return nil
}

func (a *trainsArgs) run(e env) error {
	progress := func(ev method.Event) {
		e.lab.note(ev)
		if !a.json && ev.Kind == method.Line {
			fmt.Fprintf(e.stdout, "  %s\n", ev.Text)
		}
	}
	if !a.json {
		fmt.Fprintf(e.stdout, "packet trains to %s: rate %s, RTT %v, MTU %d B\n", tester.HostPort(a.target.Addr), units.FormatRate(float64(a.rate)), a.cfg.RTT, a.mtu)
	}
	res, err := method.Trains(e.ctx, tester.Remote{T: a.target}, a.cfg, progress)
	if res != nil {
		withCommand(&res.Meta, e)
	}
	return finish(e, &a.clientArgs, res, res != nil, err)
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
