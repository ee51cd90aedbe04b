package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/lab"
	"github.com/fullpipe/fullpipe/internal/method"
	"github.com/fullpipe/fullpipe/internal/report"
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

func init() {
	register(&command{
		name:    "rfc6349",
		summary: "the RFC 6349 method: MTU, RTT, BB, window walk, throughput, shaping, verdict",
		usage:   "[HOST[:PORT]] --cir RATE [flags]",
		long:    rfcLong,
		flags: func(fs *pflag.FlagSet) func(env, []string) error {
			var cf clientFlags
			cfg := result.RFC6349Config{Thresholds: rfc6349.DefaultThresholds}
			var cir, maxWindow int64
			var direction, reportFile, profile string
			var quick bool
			rateVar(fs, &cir, "cir", "", 0, "committed rate of the service under test (required with HOST)")
			fs.StringVar(&direction, "direction", "both", "up (client sends), down, or both")
			durVar(fs, &cfg.Duration, "duration", "t", 30*time.Second, "throughput test length per direction (RFC 6349: > 30 s)")
			durVar(fs, &cfg.StepDuration, "step-duration", "", 5*time.Second, "length of each window-walk and shaping test")
			fs.BoolVar(&quick, "quick", false, "a turn-up check: 10 s throughput, 3 s steps")
			sizeVar(fs, &maxWindow, "max-window", "", 0, "largest window the user's hosts allow per connection, e.g. 64KiB without window scaling (default: none)")
			fs.StringVar(&cfg.Link, "link", "ethernet", "layer-2 framing for the ideal: ethernet, vlan, qinq, ppp or none")
			fs.Float64Var(&cfg.Thresholds.MinActualPct, "min-actual-pct", rfc6349.DefaultThresholds.MinActualPct, "pass if actual throughput is at least this % of ideal")
			fs.Float64Var(&cfg.Thresholds.MinEfficiencyPct, "min-efficiency-pct", rfc6349.DefaultThresholds.MinEfficiencyPct, "pass if TCP Efficiency is at least this %")
			fs.StringVar(&cfg.CC, "cc", "", "congestion control for the walk and throughput tests (default: the sender's)")
			fs.IntVar(&cfg.ShapingConns, "shaping-connections", 4, "connections in the shaping vs policing test")
			fs.IntVar(&cfg.SweepPoints, "sweep", 0, "also sweep the window: this many windows up to 3 x BDP, --step-duration each (0: no sweep; 9 is a good start)")
			fs.StringVar(&reportFile, "report", "", "write a self-contained HTML report to this file")
			fs.StringVar(&profile, "profile", "window", "without HOST: the lab profile to test")
			cf.add(fs)
			return func(e env, args []string) error {
				if len(args) == 0 {
					return rfcInLab(e, profile, cir)
				}
				t, err := cf.target(args)
				if err != nil {
					return err
				}
				if cir <= 0 {
					return usagef("--cir is required: the committed rate the service should carry, e.g. --cir 100M")
				}
				if cfg.Directions, err = directions(direction); err != nil {
					return err
				}
				if _, err := rfc6349.LinkByName(cfg.Link); err != nil {
					return usagef("%v", err)
				}
				if quick {
					if !fs.Changed("duration") {
						cfg.Duration = 10 * time.Second
					}
					if !fs.Changed("step-duration") {
						cfg.StepDuration = 3 * time.Second
					}
				}
				if cfg.Duration < time.Second || cfg.StepDuration < time.Second || cfg.ShapingConns < 2 || cfg.ShapingConns > maxStreams {
					return usagef("durations must be at least 1s and --shaping-connections 2..%d", maxStreams)
				}
				if cfg.SweepPoints < 0 || cfg.SweepPoints > 64 {
					return usagef("--sweep %d: want 0 (no sweep) to 64 windows", cfg.SweepPoints)
				}
				if maxWindow < 0 || (fs.Changed("max-window") && maxWindow < 1500) {
					return usagef("--max-window must be at least 1500 bytes")
				}
				cfg.CIRBps, cfg.MaxWindow = cir, int(maxWindow)
				if !cf.json {
					fmt.Fprintf(e.stdout, "RFC 6349 test of %s, CIR %s, %s\n", tester.HostPort(t.Addr), units.FormatRate(float64(cir)), joinDirections(cfg.Directions))
				}
				progress := func(ev method.Event) {
					switch {
					case cf.json:
					case ev.Kind == method.Started:
						fmt.Fprintf(e.stdout, "\n%s\n", ev.Text)
					case ev.Kind == method.Line:
						fmt.Fprintf(e.stdout, "  %s\n", ev.Text)
					}
				}
				res, err := method.Run(e.ctx, tester.Remote{T: t}, cfg, progress)
				if res != nil {
					withCommand(&res.Meta, e)
					if reportFile != "" {
						if werr := os.WriteFile(reportFile, report.HTML(res), 0o644); werr != nil {
							return werr
						}
					}
				}
				ferr := finish(e, cf.json, res, res != nil, err, func(w io.Writer) { report.Text(w, res) })
				if ferr == nil && res != nil && !res.Verdict.Pass {
					return exitError{ExitFailed, errors.New("verdict: FAIL")}
				}
				return ferr
			}
		},
	})
}

// rfcInLab builds a lab path with a responder inside and runs this same
// command again inside the client namespace, against it.
func rfcInLab(e env, profile string, cir int64) error {
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
	if !hasFlag(e.args, "--cir") {
		args = append(args, "--cir", fmt.Sprint(cir)+"bit/s")
	}
	if !hasFlag(e.args, "--json") {
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

func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}
