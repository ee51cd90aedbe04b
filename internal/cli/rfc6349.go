package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/lab"
	"github.com/fullpipe/fullpipe/internal/method"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/rfc6349"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/units"
)

const rfcLong = `Runs the RFC 6349 TCP throughput method against a responder, in order:
  1. path MTU in each direction by probing (works without ICMP)
  2. baseline RTT (minimum of UDP probes before any load) and bottleneck
     bandwidth (a UDP rate search from the CIR, counted at layer 2), giving
     BDP = BB x RTT / 8 per direction
  3. walk the window: TCP at 25, 50, 75 and 100 % of the BDP (exact
     windows), split over ceil(window / --max-window) connections
     --sweep N adds a window sweep (as ` + "`fullpipe sweep window`" + `): N exact
     windows up to 3 x BDP with one-way delay probes, classified into
     linear, saturation and overflow; it estimates the bottleneck queue
  4. TCP throughput at the full BDP: TCP Transfer Time Ratio, TCP
     Efficiency and Buffer Delay %, against the ideal from the negotiated
     MSS and the link's framing (--link)
  5. shaping vs policing: several connections past the CIR
  6. verdict (actual >= 95 % of ideal and efficiency >= 99 % by default)
     and the likely cause in plain words
Without HOST it builds a lab path on this machine (scenario 1 of the
design: 100 Mbit/s, 20 ms RTT; see ` + "`fullpipe lab profiles`" + `), starts a
responder inside and tests it with --cir 100M; that needs root.

The default run takes about 2 minutes on a 100 Mbit/s path (30 s of
throughput per direction); --quick about 1 minute. Exit status 1 when the
verdict is FAIL.`

func rfc6349Spec() spec {
	return spec{
		name: "rfc6349", usage: "[HOST[:PORT]] --cir RATE [flags]", pos: argOptTarget,
		summary: "the RFC 6349 method: MTU, RTT, BB, window walk, throughput, shaping, verdict",
		long:    rfcLong,
		example: `  sudo fullpipe rfc6349 --report rfc6349.html
                                  on a lab path built here (scenario 1), text and HTML report
  fullpipe rfc6349 198.18.0.2 --cir 100M --quick
                                  a turn-up check of a 100 Mbit/s service, about 1 minute
  fullpipe rfc6349 -c 198.18.0.2 --cir 1G --max-window 64KiB -J
                                  hosts without window scaling; one JSON document`,
		new: func() command { return &rfcArgs{cfg: result.RFC6349Config{Thresholds: rfc6349.DefaultThresholds}} },
	}
}

// rfcArgs are rfc6349's flags; validate turns them into cfg.
type rfcArgs struct {
	clientArgs
	cfg                result.RFC6349Config
	cir, maxWindow     int64
	direction, profile string
	quick              bool
	inLab, cirGiven    bool // no HOST: run in a lab built here
}

func (a *rfcArgs) flags(fs *pflag.FlagSet) {
	c := &a.cfg
	fs.Var(rate(&a.cir, 0), "cir", "committed rate of the service under test (required with HOST)")
	fs.Var(oneOf(&a.direction, "both", "up", "down", "both"), "direction", "up (client sends), down, or both")
	fs.VarP(dur(&c.Duration, 30*time.Second), "duration", "t", "throughput test length per direction (RFC 6349: > 30 s)")
	fs.Var(dur(&c.StepDuration, 5*time.Second), "step-duration", "length of each window-walk and shaping test")
	fs.BoolVar(&a.quick, "quick", false, "a turn-up check: 10 s throughput, 3 s steps")
	fs.Var(size(&a.maxWindow, 0), "max-window", "largest window the user's hosts allow per connection, e.g. 64KiB without window scaling (default: none)")
	fs.Var(oneOf(&c.Link, "ethernet", "ethernet", "vlan", "qinq", "ppp", "none"), "link", "layer-2 framing for the ideal")
	fs.Var(pct(&c.Thresholds.MinActualPct, rfc6349.DefaultThresholds.MinActualPct), "min-actual-pct", "pass if actual throughput is at least this % of ideal")
	fs.Var(pct(&c.Thresholds.MinEfficiencyPct, rfc6349.DefaultThresholds.MinEfficiencyPct), "min-efficiency-pct", "pass if TCP Efficiency is at least this %")
	fs.VarP(text(&c.CC, "", "NAME"), "cc", "C", "congestion control for the walk and throughput tests (default: the sender's)")
	fs.Var(count(&c.ShapingConns, 4), "shaping-connections", "connections in the shaping vs policing test")
	fs.Var(count(&c.SweepPoints, 0), "sweep", "also sweep the window: this many windows up to 3 x BDP, --step-duration each (0: no sweep; 9 is a good start)")
	a.profile = "window"
	fs.Var(textValue{v: &a.profile, meta: "PROFILE", choices: lab.ProfileNames()}, "profile", "without HOST: the lab profile to test")
	a.clientArgs.flags(fs)
}

func (a *rfcArgs) validate(in input) error {
	if len(in.args) == 0 && !in.changed("client") {
		a.inLab, a.cirGiven = true, in.changed("cir")
		return nil // the run inside the lab checks the rest
	}
	if err := a.resolve(in); err != nil {
		return err
	}
	c := &a.cfg
	if !in.changed("cir") { // a value given is the config's to judge
		return usagef("--cir is required: the committed rate the service should carry, e.g. --cir 100M")
	}
	var err error
	if c.Directions, err = directions(a.direction); err != nil {
		return err
	}
	if a.quick {
		if !in.changed("duration") {
			c.Duration = 10 * time.Second
		}
		if !in.changed("step-duration") {
			c.StepDuration = 3 * time.Second
		}
	}
	if err := refuseZeros(in,
		zeroed{"duration", c.Duration == 0, fmt.Sprintf("want at least %v", result.MinStepDuration)},
		zeroed{"step-duration", c.StepDuration == 0, fmt.Sprintf("want at least %v", result.MinStepDuration)},
		zeroed{"shaping-connections", c.ShapingConns == 0, fmt.Sprintf("want at least %d", result.MinShapingConns)},
		zeroed{"max-window", a.maxWindow == 0, fmt.Sprintf("want at least %d bytes (leave --max-window out for none)", result.MinRFCMaxWindow)},
	); err != nil {
		return err
	}
	c.CIRBps, c.MaxWindow = a.cir, int(a.maxWindow)
	return nil
}

func (a *rfcArgs) run(e env) error {
	if a.inLab {
		return rfcInLab(e, a)
	}
	cfg := a.cfg
	if !a.json {
		fmt.Fprintf(e.stdout, "RFC 6349 test of %s, CIR %s, %s\n", tester.HostPort(a.target.Addr), units.FormatRate(float64(a.cir)), joinDirections(cfg.Directions))
	}
	progress := func(ev method.Event) {
		e.lab.note(ev)
		if !a.json {
			printStep(e.stdout, ev)
		}
	}
	res, err := method.Run(e.ctx, tester.Remote{T: a.target}, cfg, progress)
	if res != nil {
		withCommand(&res.Meta, e)
	}
	ferr := finish(e, &a.clientArgs, res, res != nil, err)
	if ferr == nil && res != nil && !res.Verdict.Pass {
		if res.Meta.Lab != nil && res.Meta.Lab.LabLimited {
			return exitError{ExitFailed, errors.New("verdict: FAIL, on a lab that could not hold its path (LAB-LIMITED above): the lab's figures, not the path's")}
		}
		return exitError{ExitFailed, errors.New("verdict: FAIL")}
	}
	return ferr
}

// rfcInLab builds a lab path with a responder inside and runs this same
// command again inside the client namespace, against it.
func rfcInLab(e env, a *rfcArgs) error {
	profile, cir := a.profile, a.cir
	p, ok := lab.Profiles[profile]
	if !ok {
		return usagef("unknown profile %q (see `fullpipe lab profiles`)", profile)
	}
	if os.Geteuid() != 0 {
		return usagef("without HOST the test runs on a lab path, which needs root; or give HOST and --cir")
	}
	if cir == 0 {
		cir = p.Up.RateBps
		if cir == 0 {
			cir = p.Up.FRCIRBps
		}
		if p.Up.PoliceBps > 0 {
			cir = p.Up.PoliceBps
		}
	}
	d := demo{e: e}
	l, cfg, stop, err := d.labWithResponder("fp6349", profile)
	if err != nil {
		return err
	}
	defer stop()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"lab", "exec", "client", "--name", cfg.Name, "--", self, "rfc6349", l.Server.Addr.String()}
	args = append(args, e.args[2:]...)
	if !a.cirGiven {
		args = append(args, "--cir", fmt.Sprint(cir)+"bit/s")
	}
	if !a.json {
		fmt.Fprintf(e.stdout, "lab path %q (profile %s: %s)\n  %s\n", cfg.Name, profile, p.Teaches, describe(p.Up))
	}
	cmd := exec.CommandContext(e.ctx, self, args...)
	cmd.Stdout, cmd.Stderr = e.stdout, e.stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return exitError{ee.ExitCode(), errors.New("the test inside the lab ended with a failure (above)")}
		}
		return err
	}
	return nil
}
