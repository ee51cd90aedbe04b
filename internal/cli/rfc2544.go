package cli

import (
	"fmt"
	"net"
	"strings"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/method"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/units"
)

func rfc2544Spec() spec {
	return spec{
		name: "rfc2544", usage: hostUsage + " --rate RATE [flags]", pos: argTarget,
		summary: "RFC 2544 benchmarks: throughput, latency, frame loss, back-to-back per frame size",
		long: `Runs RFC 2544's benchmarks (§26) through a responder, per direction and
Ethernet frame size (64, 128, 256, 512, 1024, 1280, 1518 B, and 9018 B with
--mtu 9000), each frame sent as one UDP datagram of frame - 46 bytes over
IPv4 (frame - 66 over IPv6):
  throughput     the highest rate with no frame lost, and the highest losing
                 at most --loss-ratio, in one binary search from the line rate
                 down to --resolution (FD.io CSIT's MLRsearch does the same)
  latency        round trip of probes inside a stream at the throughput rate
                 (min, mean, percentiles, max), beside what the path's delay
                 and serialisation predict
  loss           frame loss at 100 % of the line rate down to 10 % in steps
                 of 10 %, until two steps lose nothing
  back-to-back   the longest burst at this host's fastest that arrives whole,
                 and the buffer it implies behind the line
When loss does not depend on the rate (a lossy line, not a rate limit) it
says so, and reports the loss and the BER fitted to loss against frame
size instead of a collapsed zero-loss throughput.

--rate is the line's rate (layer 1, as Ethernet rates are stated): 100 % of
every table. fullpipe cannot know it; ask the provider. Trials last --trial
(RFC 2544: 60 s; the default 2 s keeps a run of 7 sizes in both directions
to about 15-25 minutes; longer trials see rarer losses). A size this host
cannot send at the rate is marked generator-limited, not read as loss.
Exit status 1 when the run stopped early (the partial tables are printed).`,
		example: `  fullpipe rfc2544 198.18.0.2 --rate 100M
                                  all four benchmarks, both directions, the RFC's sizes
  fullpipe rfc2544 198.18.0.2 --rate 1G --sizes 128,512,1518 --tests throughput,latency --direction up
                                  throughput and latency only, upload, three sizes
  fullpipe rfc2544 198.18.0.2 --rate 2M --trial 60s --tests throughput,loss --report rfc2544.html
                                  a slow line with the RFC's 60 s trials; text and an HTML page`,
		new: func() command { return &rfc2544Args{} },
	}
}

// rfc2544Args are rfc2544's flags; validate turns them into cfg.
type rfc2544Args struct {
	clientArgs
	cfg                     result.RFC2544Config
	rate, mtu               int64
	direction, sizes, tests string
}

func (a *rfc2544Args) flags(fs *pflag.FlagSet) {
	c := &a.cfg
	fs.Var(rate(&a.rate, 0), "rate", "the line's rate, layer 1: 100 % of every table (required)")
	fs.Var(text(&a.sizes, "", "bytes,..."), "sizes", "Ethernet frame sizes with FCS, comma-separated (default: 64,128,256,512,1024,1280,1518, and 9018 where --mtu allows)")
	fs.Var(text(&a.tests, "throughput,latency,loss,back-to-back", "tests,..."), "tests", "benchmarks to run, comma-separated")
	fs.Var(oneOf(&a.direction, "both", "up", "down", "both"), "direction", "up (client sends), down, or both")
	fs.Var(dur(&c.Trial, result.DefaultRFC2544Trial), "trial", "each trial's length (RFC 2544: 60s)")
	fs.Var(pct(&c.ResolutionPct, result.DefaultRFC2544Resolution), "resolution", "the throughput search's resolution, % of the line rate")
	fs.Var(pct(&c.LossRatioPct, result.DefaultRFC2544LossRatio), "loss-ratio", "the search's second goal: the highest rate losing at most this %")
	fs.Var(num(&c.LatencyTrials, result.DefaultRFC2544LatencyTrials, "N"), "latency-trials", "latency trials per size (RFC 2544: 20)")
	fs.Var(num(&c.BurstTrials, result.DefaultRFC2544BurstTrials, "N"), "burst-trials", "back-to-back searches per size (RFC 2544: 50)")
	fs.Var(size(&a.mtu, result.DefaultRFC2544MTU), "mtu", "the path's IP MTU: sizes above it are left out (9000 adds the jumbo frame)")
	a.clientArgs.flags(fs)
}

func (a *rfc2544Args) validate(in input) error {
	if err := a.resolve(in); err != nil {
		return err
	}
	c := &a.cfg
	if a.rate <= 0 {
		return usagef("--rate is required: the line's rate, 100 %% of every table (e.g. --rate 100M); fullpipe cannot know it, ask the provider")
	}
	c.LineRateBps, c.MTU = a.rate, int(a.mtu)
	c.IPv6 = a.ipv6()
	for _, f := range splitComma(a.sizes) {
		n, err := units.ParseSize(f)
		if err != nil {
			return usagef("--sizes %q: want frame sizes in bytes, comma-separated", a.sizes)
		}
		c.FrameSizes = append(c.FrameSizes, int(n))
	}
	c.Tests = splitComma(a.tests)
	var err error
	if c.Directions, err = directions(a.direction); err != nil {
		return err
	}
	return nil
}

func (a *rfc2544Args) run(e env) error {
	progress := func(ev method.Event) {
		e.lab.note(ev)
		if !a.json && !printStep(e.stdout, ev) && ev.Kind == method.Warning {
			fmt.Fprintf(e.stdout, "  warning: %s\n", ev.Text)
		}
	}
	if !a.json {
		fmt.Fprintf(e.stdout, "RFC 2544 to %s: line rate %s, trials of %v\n", tester.HostPort(a.target.Addr), units.FormatRate(float64(a.rate)), a.cfg.Trial)
	}
	res, err := method.RunRFC2544(e.ctx, tester.Remote{T: a.target}, a.cfg, progress)
	if res != nil {
		withCommand(&res.Meta, e)
	}
	return finish(e, &a.clientArgs, res, res != nil, err)
}

// splitComma is s's comma-separated fields, trimmed, without empty ones.
func splitComma(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// ipv6 says whether the target is IPv6 (-6 or an IPv6 literal): its
// frames carry 20 bytes less UDP payload.
func (c *clientArgs) ipv6() bool { return c.target.Family == "6" || isIPv6(c.target.Addr) }

// isIPv6 says whether addr (HOST or HOST:PORT) is an IPv6 literal.
func isIPv6(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.To4() == nil
}
