package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/frame"
	"github.com/fullpipe/fullpipe/internal/method"
	"github.com/fullpipe/fullpipe/internal/report"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/units"
)

// maxSweepDuration bounds each point of a sweep from the command line
// (the points' own bounds, and the sweep's, are its config's).
const maxSweepDuration = 60 * time.Second

func sweepSpec() spec {
	return spec{
		name: "sweep", usage: "window|msglen " + hostUsage + " [flags]",
		summary: "window sweep (regions: linear, saturation, overflow) or message-length sweep",
		long: `Runs a series of tests against a responder, one per point, and reads the
path from the curve: sweep window walks the TCP window and finds the
bottleneck's rate, the BDP and the queue (docs/sweep.md); sweep msglen
walks the size of each write, TCP and UDP.`,
		example: `  fullpipe sweep window 198.18.0.2 --from 1mss --to 12mss --duration 4
  fullpipe sweep msglen 198.18.0.2 --udp-rate 50M --duration 2`,
		sub: []spec{windowSweepSpec(), msgLenSweepSpec()},
	}
}

func windowSweepSpec() spec {
	return spec{
		name: "window", usage: hostUsage + " [flags]", pos: argTarget,
		summary: "one TCP test per exact window: linear, saturation and overflow regions",
		long: `sweep window: one TCP test per window, from --from to --to by --step, each
with an exact window (the sender keeps at most W bytes in flight). At each
window: goodput at the receiver; the spread of the instantaneous rate
(rates over --interval slices of the receiver's progress: mean, p10, p90,
standard deviation); loss (TCP retransmissions from the sender's
TCP_INFO); and the one-way delay increment of the data direction: small
UDP probes every --probe-gap during the load, each compared with the
least delay of a baseline of probes sent just before the load. Each probe
goes at a random time within its --probe-gap slot (seeded, --seed), so
the probes sample the queue's sawtooth at every phase rather than at one. The
responder stamps its receive time into each reply (echo mode 3), so the
forward and reverse delays are separated and the clocks need no
synchronisation: the offset cancels against the baseline.

Each window falls in one region:
  linear      window < BDP: goodput grows in proportion to the window
              (W x 8 / RTT), no queue, no delay increment
  transition  below both that line and the plateau: the window refills
              late because of delay jitter
  saturation  goodput flat at the bottleneck rate; the queue holds
              W - BDP, so the delay increment grows as (W - BDP) x 8 / rate
              (plus half a segment's time: the one in service)
  overflow    W > BDP + queue: the queue overflows, segments are lost
              and retransmitted, goodput saw-tooths below the plateau
and the boundaries say what the path is: bottleneck rate = the plateau;
BDP = where the line meets the plateau; bottleneck queue = window at the
overflow edge - BDP. See docs/sweep.md.

Windows are bytes (64KiB, 20000) or segments: Nmss = N x --segment bytes,
1448 by default (a 1500-byte MTU with TCP timestamps: 1500 - 20 IP - 20
TCP - 12 options). The congestion control defaults to reno: a loss-based
TCP whose only limit before loss is the window. bbr keeps its own bound on
bytes in flight (twice its estimate of the BDP) and would hide the
saturation and overflow regions.`,
		example: `  fullpipe sweep window 198.18.0.2 --from 1mss --to 12mss --duration 4s
      scenario 7 on a 256 kbit/s frame-relay CIR with an 8 kB switch queue
  fullpipe sweep window 198.18.0.2 --from 1mss --to 64mss --step 2mss --dscp-probes 46,0
      probes alternate between DSCP 46 (EF) and 0 (best effort)
  fullpipe sweep window 198.18.0.2 --from 16KiB --to 512KiB --step 16KiB --direction down
  fullpipe sweep window 198.18.0.2 --to 32mss --report sweep.html
      also a page charting goodput and delay increment against the window, by region`,
		new: func() command { return &windowSweepArgs{} },
	}
}

// windowSweepArgs are sweep window's flags; validate turns them into cfg.
type windowSweepArgs struct {
	clientArgs
	cfg                   result.WindowSweepConfig
	from, to, step, dscps string
	direction             string
	segment               int64
}

func (a *windowSweepArgs) flags(fs *pflag.FlagSet) {
	c := &a.cfg
	fs.Var(text(&a.from, "1mss", "bytes|Nmss"), "from", "smallest window")
	fs.Var(text(&a.to, "64mss", "bytes|Nmss"), "to", "largest window")
	fs.Var(text(&a.step, "1mss", "bytes|Nmss"), "step", "step between windows")
	fs.Var(size(&a.segment, result.DefaultSweepMSS), "segment", "bytes one mss stands for in --from/--to/--step")
	fs.VarP(dur(&c.Duration, 5*time.Second), "duration", "t", "length of each window's test")
	fs.Var(oneOf(&a.direction, "up", "up", "down"), "direction", "up (this host sends) or down (the responder sends)")
	fs.Var(text(&a.dscps, "0", "DSCP[,DSCP]"), "dscp-probes", "DSCP of the delay probes, 0..63; two values A,B alternate")
	fs.VarP(text(&c.CC, "reno", "NAME"), "cc", "C", "congestion control of the sender (reno, cubic, bbr)")
	fs.Var(dur(&c.ProbeGap, 100*time.Millisecond), "probe-gap", "time between delay probes during the load")
	fs.Var(seed(&c.Seed, 1), "seed", "seed of the probes' random send times within each --probe-gap slot (replay with the same seed)")
	fs.Var(count(&c.BaselineProbes, 10), "baseline-probes", "idle probes before each load (20 ms apart) for the baseline")
	fs.VarP(dur(&c.Interval, 200*time.Millisecond), "interval", "i", "slice of the receiver's progress for the instantaneous rate")
	a.clientArgs.flags(fs)
}

func (a *windowSweepArgs) validate(in input) error {
	if err := a.resolve(in); err != nil {
		return err
	}
	c := &a.cfg
	if err := checkSweepTimes(in, c.Duration, c.Interval); err != nil {
		return err
	}
	if err := refuseZeros(in,
		zeroed{"segment", a.segment == 0, fmt.Sprintf("want %d to %d bytes", result.MinMSS, result.MaxMSS)},
		zeroed{"probe-gap", c.ProbeGap == 0, fmt.Sprintf("want %v to half of --duration", result.MinProbeGap)},
		zeroed{"baseline-probes", c.BaselineProbes == 0, fmt.Sprintf("want %d to %d", result.MinBaselineProbes, result.MaxBaselineProbes)},
	); err != nil {
		return err
	}
	c.MSS, c.Settle = int(a.segment), c.Duration/3
	return windowFlags(c, a.from, a.to, a.step, a.direction, a.dscps)
}

// checkSweepTimes refuses a point longer than the command line allows
// and a duration or interval of 0 (the config's defaults).
func checkSweepTimes(in input, d, interval time.Duration) error {
	if d > maxSweepDuration {
		return usagef("--duration %v: want %v..%v per point", d, result.MinStepDuration, maxSweepDuration)
	}
	return refuseZeros(in,
		zeroed{"duration", d == 0, fmt.Sprintf("want %v to %v per point", result.MinStepDuration, maxSweepDuration)},
		zeroed{"interval", interval == 0, fmt.Sprintf("want %v to half of --duration", result.MinSweepInterval)},
	)
}

func (a *windowSweepArgs) run(e env) error {
	cfg := a.cfg
	n := len(cfg.Windows)
	progressf(e, false, "sweeping %d windows against %s, %v each (about %v in all) ...",
		n, tester.HostPort(a.target.Addr), cfg.Duration, (time.Duration(n) * (cfg.Duration + 2*time.Second)).Round(time.Second))
	progress := func(ev method.Event) {
		e.lab.note(ev)
		i, p := ev.Index, ev.Window
		if p == nil {
			return
		}
		report.WindowPoint(e.stderr, i, n, p)
	}
	res, err := method.RunWindowSweep(e.ctx, tester.Remote{T: a.target}, cfg, progress)
	if res != nil {
		withCommand(&res.Meta, e)
	}
	return finish(e, &a.clientArgs, res, res != nil, err)
}

// parseWindow reads a window in bytes or in segments ("12mss").
func parseWindow(s string, segment int64) (int64, error) {
	if n, ok := strings.CutSuffix(strings.ToLower(strings.TrimSpace(s)), "mss"); ok {
		k, err := strconv.ParseFloat(n, 64)
		if err != nil || k <= 0 {
			return 0, fmt.Errorf("%q: want a positive number before mss, e.g. 4mss", s)
		}
		return int64(k * float64(segment)), nil
	}
	return units.ParseSize(s)
}

// windowFlags expands --from, --to and --step into cfg's windows (at
// most the sweep's points: the flags could ask for millions), and reads
// --direction and --dscp-probes. The config checks the rest.
func windowFlags(cfg *result.WindowSweepConfig, from, to, step, direction, dscps string) error {
	seg := int64(cfg.MSS)
	lo, err := parseWindow(from, seg)
	if err != nil {
		return usagef("--from %v", err)
	}
	hi, err := parseWindow(to, seg)
	if err != nil {
		return usagef("--to %v", err)
	}
	st, err := parseWindow(step, seg)
	if err != nil {
		return usagef("--step %v", err)
	}
	switch {
	case lo <= 0 || st <= 0:
		return usagef("--from and --step must be positive")
	case hi < lo:
		return usagef("--to %d B is below --from %d B", hi, lo)
	case hi > result.MaxWindow:
		return usagef("--to %d B is above the 1 GiB TCP maximum", hi)
	case (hi-lo)/st+1 > result.MaxSweepPoints:
		return usagef("%d windows from %d B to %d B by %d B: at most %d; take a larger --step", (hi-lo)/st+1, lo, hi, st, result.MaxSweepPoints)
	}
	for w := lo; w <= hi; w += st {
		cfg.Windows = append(cfg.Windows, int(w))
	}
	switch direction {
	case "up":
	case "down":
		cfg.Reverse = true
	default:
		return usagef("--direction %q: want up or down", direction)
	}
	for _, f := range strings.Split(dscps, ",") {
		d, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || d < 0 || d > frame.MaxDSCP {
			return usagef("--dscp-probes %q: want one or two DSCP values 0..63, e.g. 46,0", dscps)
		}
		cfg.ProbeDSCPs = append(cfg.ProbeDSCPs, d)
	}
	return nil
}

func msgLenSweepSpec() spec {
	return spec{
		name: "msglen", usage: hostUsage + " [flags]", pos: argTarget,
		summary: "TCP and UDP goodput against the size of each write",
		long: `sweep msglen: TCP and UDP goodput against the size of each write (64 B to
64 KiB by default), with the UDP sender's and receiver's rates side by
side: where they part, datagrams are lost (larger datagrams are lost more
often on a line that loses cells or fragments). UDP sizes above 65,507 B
are sent as 65,507 B.`,
		example: `  fullpipe sweep msglen 198.18.0.2 --udp-rate 50M --duration 2s
      11 sizes from 64 B to 64 KiB, TCP then UDP at 50 Mbit/s, 2 s each
  fullpipe sweep msglen 198.18.0.2 --sizes 512,1400,9000 -J
  fullpipe sweep msglen 198.18.0.2 --report msglen.html
      also a page charting TCP and UDP goodput per size`,
		new: func() command { return &msgLenSweepArgs{} },
	}
}

// msgLenSweepArgs are sweep msglen's flags; validate turns them into cfg.
type msgLenSweepArgs struct {
	clientArgs
	cfg   result.MsgLenSweepConfig
	sizes string
}

func (a *msgLenSweepArgs) flags(fs *pflag.FlagSet) {
	c := &a.cfg
	fs.Var(text(&a.sizes, "64,128,256,512,1024,2048,4096,8192,16384,32768,65536", "bytes,..."), "sizes", "write sizes, comma-separated")
	fs.Var(rate(&c.UDPRateBps, 50_000_000), "udp-rate", "UDP offered rate")
	fs.VarP(dur(&c.Duration, 5*time.Second), "duration", "t", "length of each size's test, TCP and UDP each")
	fs.VarP(dur(&c.Interval, 200*time.Millisecond), "interval", "i", "slice of the receiver's progress for the instantaneous rate")
	a.clientArgs.flags(fs)
}

func (a *msgLenSweepArgs) validate(in input) error {
	if err := a.resolve(in); err != nil {
		return err
	}
	c := &a.cfg
	if err := checkSweepTimes(in, c.Duration, c.Interval); err != nil {
		return err
	}
	if err := refuseZeros(in, zeroed{"udp-rate", c.UDPRateBps == 0, "want a positive rate"}); err != nil {
		return err
	}
	for _, f := range strings.Split(a.sizes, ",") {
		n, err := units.ParseSize(strings.TrimSpace(f))
		if err != nil {
			return usagef("--sizes %q: want write sizes in bytes, comma-separated", a.sizes)
		}
		c.Sizes = append(c.Sizes, int(n))
	}
	return nil
}

func (a *msgLenSweepArgs) run(e env) error {
	cfg := a.cfg
	n := len(cfg.Sizes)
	progressf(e, false, "sweeping %d write sizes against %s, TCP then UDP at %s, %v each (about %v in all) ...",
		n, tester.HostPort(a.target.Addr), units.FormatRate(float64(cfg.UDPRateBps)), cfg.Duration, (time.Duration(n) * 2 * (cfg.Duration + time.Second)).Round(time.Second))
	progress := func(ev method.Event) {
		e.lab.note(ev)
		i, p := ev.Index, ev.MsgLen
		if p == nil {
			return
		}
		report.MsgLenPoint(e.stderr, i, n, p)
	}
	res, err := method.RunMsgLenSweep(e.ctx, tester.Remote{T: a.target}, cfg, progress)
	if res != nil {
		withCommand(&res.Meta, e)
	}
	return finish(e, &a.clientArgs, res, res != nil, err)
}
