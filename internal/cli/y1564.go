package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/method"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/units"
	"github.com/fullpipe/fullpipe/internal/y1564"
)

func y1564Spec() spec {
	return spec{
		name: "y1564", usage: hostUsage + " --service name=NAME,cir=RATE[,...] [flags]", pos: argTarget,
		summary: "ITU-T Y.1564 (EtherSAM): service configuration and performance tests, PASS/FAIL per service",
		long: `Runs ITU-T Y.1564 through a responder: for each service and direction the
service configuration test (UDP streams at 25, 50, 75 and 100 % of the CIR,
then CIR + EIR, then a policing step at CIR + 125 % EIR, or 125 % CIR when
the EIR is 0), then the service performance test (every service at its CIR
at once for --perf-time). Each step is judged against the service's
acceptance criteria: frame loss ratio (FLR), frame transfer delay (FTD),
frame delay variation (FDV) and, in the performance test, availability.

Rates are information rates at layer 2: the bits of each Ethernet frame
from its destination MAC through its FCS (no preamble or gap). A frame of
F bytes carries F - 46 bytes of UDP payload over IPv4 (64 bytes: 18),
F - 66 over IPv6. FTD and FDV are round trips of
latency probes carried in each stream: set ftd= and fdv= as round trips.
At CIR + EIR frames above the CIR may be lost; at the policing step the IR
must stay within CIR + EIR and a tolerance (the bucket over the step): the
report says "policing observed at X" when the network discarded the excess
and "not policed" when it carried it.

A service is --service with comma-separated keys: name (required), cir
(required), eir, frame (bytes, default 512), dscp, burst (CBS + EBS bytes,
default 12176), flr (max %), ftd, fdv (max durations), avail (min %).
Omitted criteria: FLR 0 %, FTD and FDV not judged, availability 0 %.
--config FILE reads the whole run as JSON instead (docs/y1564.md).

Exit 0 when every service passes, 1 when one fails, stops early or
was limited by this host's generator (HOST-LIMITED).`,
		example: `  fullpipe y1564 198.18.0.2 --service name=data,cir=20M,eir=10M,frame=512,flr=0.1,ftd=20ms,fdv=5ms,avail=99.9
                                  one service, both directions, 15-minute performance test
  fullpipe y1564 198.18.0.2 --service name=data,cir=20M,eir=10M --service name=voice,cir=5M,frame=256,dscp=46,flr=0.01,ftd=10ms,fdv=2ms \
      --direction up --step-time 5s --perf-time 2m --report y1564.html
                                  two services told apart by DSCP, a page with the tables and charts
  fullpipe y1564 198.18.0.2 --config services.json --json
                                  the run as JSON (result.Y1564Config), the document as JSON`,
		new: func() command { return &y1564Args{} },
	}
}

// y1564Args are y1564's flags; validate turns them into cfg.
type y1564Args struct {
	clientArgs
	cfg       result.Y1564Config
	services  []string
	steps     string
	direction string
	config    string
}

func (a *y1564Args) flags(fs *pflag.FlagSet) {
	fs.Var(texts(&a.services, "KEY=VALUE,..."), "service", "a service: name=NAME,cir=RATE[,eir=RATE,frame=BYTES,dscp=N,burst=BYTES,flr=PCT,ftd=DUR,fdv=DUR,avail=PCT] (repeatable)")
	fs.Var(text(&a.config, "", "FILE"), "config", "read the run (services and all) from a JSON file instead of --service")
	fs.Var(text(&a.steps, "25,50,75,100", "PCT,..."), "steps", "the CIR steps, percent of the CIR")
	fs.Var(dur(&a.cfg.StepTime, result.DefaultY1564StepTime), "step-time", "each configuration step's time")
	fs.Var(dur(&a.cfg.PerfTime, result.DefaultY1564PerfTime), "perf-time", "the performance test's time (Y.1564: 15m, 2h or 24h)")
	fs.Var(oneOf(&a.direction, "both", "up", "down", "both"), "direction", "up (client sends), down, or both")
	fs.Var(pct(&a.cfg.UnavailFLRPct, result.DefaultY1564UnavailFLR), "unavailable-flr", "a second losing more than this percent of its frames is unavailable")
	fs.Var(num(&a.cfg.ProbesPerS, result.DefaultY1564Probes, "per-second"), "probes", "latency probes a second in each stream")
	fs.BoolVar(&a.cfg.SkipConfig, "skip-config", false, "no service configuration test")
	fs.BoolVar(&a.cfg.SkipPerf, "skip-perf", false, "no service performance test")
	a.clientArgs.flags(fs)
}

func (a *y1564Args) validate(in input) error {
	if err := a.resolve(in); err != nil {
		return err
	}
	if a.config != "" {
		return a.readConfig()
	}
	if len(a.services) == 0 {
		return usagef("--service is required, e.g. --service name=data,cir=20M,eir=10M")
	}
	for _, s := range a.services {
		svc, err := parseService(s)
		if err != nil {
			return usagef("--service %s: %v", s, err)
		}
		a.cfg.Services = append(a.cfg.Services, svc)
	}
	a.cfg.StepsPct = nil
	for _, p := range strings.Split(a.steps, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return usagef("--steps %s: want percents of the CIR, e.g. 25,50,75,100", a.steps)
		}
		a.cfg.StepsPct = append(a.cfg.StepsPct, v)
	}
	var err error
	if a.cfg.Directions, err = directions(a.direction); err != nil {
		return err
	}
	a.cfg.IPv6 = a.ipv6()
	if err := a.cfg.WithDefaults().Validate(); err != nil {
		return usagef("%v", err)
	}
	return nil
}

// readConfig reads --config: a result.Y1564Config as JSON.
func (a *y1564Args) readConfig() error {
	b, err := os.ReadFile(a.config)
	if err != nil {
		return usagef("--config: %v", err)
	}
	var c result.Y1564Config
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return usagef("--config %s: %v (docs/y1564.md shows the keys)", a.config, err)
	}
	c.IPv6 = c.IPv6 || a.ipv6()
	if err := c.WithDefaults().Validate(); err != nil {
		return usagef("--config %s: %v", a.config, err)
	}
	a.cfg = c
	return nil
}

// parseService parses one --service's keys.
func parseService(s string) (y1564.Service, error) {
	svc := y1564.Service{FrameBytes: result.DefaultY1564Frame}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return svc, fmt.Errorf("%q: want key=value", kv)
		}
		if err := setServiceKey(&svc, strings.TrimSpace(k), strings.TrimSpace(v)); err != nil {
			return svc, fmt.Errorf("%s=%s: %w", k, v, err)
		}
	}
	if svc.Name == "" || svc.CIRBps <= 0 {
		return svc, errors.New("name= and cir= are required")
	}
	return svc, nil
}

// setServiceKey sets one key of a service.
func setServiceKey(svc *y1564.Service, k, v string) error {
	var err error
	num := func(dst *float64) { *dst, err = strconv.ParseFloat(v, 64) }
	integer := func(dst *int) { *dst, err = strconv.Atoi(v) }
	rateOf := func(dst *float64) {
		var r int64
		r, err = units.ParseRate(v)
		*dst = float64(r)
	}
	switch k {
	case "name":
		svc.Name = v
	case "cir":
		rateOf(&svc.CIRBps)
	case "eir":
		rateOf(&svc.EIRBps)
	case "frame":
		integer(&svc.FrameBytes)
	case "dscp":
		integer(&svc.DSCP)
	case "burst":
		integer(&svc.BurstBytes)
	case "flr":
		num(&svc.SAC.MaxFLRPct)
	case "avail":
		num(&svc.SAC.MinAvailPct)
	case "ftd":
		svc.SAC.MaxFTD, err = units.ParseDuration(v)
	case "fdv":
		svc.SAC.MaxFDV, err = units.ParseDuration(v)
	default:
		return errors.New("unknown key (name, cir, eir, frame, dscp, burst, flr, ftd, fdv, avail)")
	}
	return err
}

func (a *y1564Args) run(e env) error {
	if !a.json {
		names := make([]string, len(a.cfg.Services))
		for i, s := range a.cfg.Services {
			names[i] = fmt.Sprintf("%s (CIR %s, EIR %s, %d B, DSCP %d)", s.Name, units.FormatRate(s.CIRBps), units.FormatRate(s.EIRBps), s.FrameBytes, s.DSCP)
		}
		fmt.Fprintf(e.stdout, "Y.1564 test of %s: %s\n", tester.HostPort(a.target.Addr), strings.Join(names, "; "))
	}
	progress := func(ev method.Event) {
		e.lab.note(ev)
		switch {
		case a.json || printStep(e.stdout, ev):
		case ev.Kind == method.Sample && ev.Step == method.StepY1564Perf && ev.UDP != nil && int(ev.UDP.EndS+0.5)%10 == 0:
			iv := ev.UDP // every 10 s of the performance test, per stream
			fmt.Fprintf(e.stdout, "  %s %s: %.0f s, %s of payload, %d lost\n", ev.Text, ev.Direction, iv.EndS, units.FormatRate(iv.ThroughputBps), iv.Lost)
		}
	}
	res, err := method.RunY1564(e.ctx, tester.Remote{T: a.target}, a.cfg, progress)
	if res != nil {
		withCommand(&res.Meta, e)
	}
	ferr := finish(e, &a.clientArgs, res, res != nil, err)
	if ferr == nil && res != nil && res.Verdict != y1564.Pass {
		return exitError{ExitFailed, fmt.Errorf("verdict: %s", res.Verdict)}
	}
	return ferr
}
