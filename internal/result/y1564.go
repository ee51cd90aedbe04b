package result

import (
	"fmt"
	"math"
	"time"

	"github.com/fullpipe/fullpipe/internal/vocab"
	"github.com/fullpipe/fullpipe/internal/y1564"
)

// The Y.1564 (EtherSAM) document (fullpipe y1564): each service's
// configuration steps and its performance test, judged against its
// acceptance criteria (package y1564, docs/y1564.md).

// Y.1564's defaults.
const (
	DefaultY1564StepTime   = 10 * time.Second
	DefaultY1564PerfTime   = 15 * time.Minute // Y.1564's shortest service performance test
	DefaultY1564Frame      = 512
	DefaultY1564UnavailFLR = 50 // percent: a second that lost more than half its frames is unavailable
	DefaultY1564Probes     = 100
	// Y1564Drain is how long each step's receiver keeps counting after
	// its sender stopped: frames still queued on the path are not lost.
	Y1564Drain = time.Second
	// MaxY1564Services bounds a run's services (each a stream at once in
	// the performance test).
	MaxY1564Services = 8
)

// Y1564Config is a Y.1564 run.
type Y1564Config struct {
	Services   []y1564.Service   `json:"services"`
	Directions []vocab.Direction `json:"directions"`
	StepsPct   []float64         `json:"steps_pct"`    // the CIR steps, percent of the CIR
	StepTime   time.Duration     `json:"step_time_ns"` // each configuration step
	PerfTime   time.Duration     `json:"perf_time_ns"` // the performance test
	// UnavailFLRPct: a 1-second interval that lost more than this percent
	// of its frames is unavailable (y1564.Availability).
	UnavailFLRPct float64 `json:"unavail_flr_pct"`
	// ProbesPerS is how many latency probes a second each stream carries
	// (UDPConfig.EchoEvery from its frame rate; at least every frame).
	ProbesPerS int  `json:"probes_per_s"`
	SkipConfig bool `json:"skip_config,omitempty"` // no service configuration test
	SkipPerf   bool `json:"skip_perf,omitempty"`   // no service performance test
	// IPv6: the target is IPv6, so each frame carries 20 bytes less UDP
	// payload (frame − 66) than over IPv4 (frame − 46).
	IPv6 bool `json:"ipv6,omitempty"`
}

// WithDefaults fills the zero fields: both directions, the steps 25, 50,
// 75 and 100 % of the CIR, 10 s steps, a 15-minute performance test,
// 512-byte frames, unavailable above 50 % loss, 100 probes a second.
func (c Y1564Config) WithDefaults() Y1564Config {
	if len(c.Directions) == 0 {
		c.Directions = bothWays()
	}
	if len(c.StepsPct) == 0 {
		c.StepsPct = append([]float64(nil), y1564.DefaultStepsPct...)
	}
	if c.StepTime == 0 {
		c.StepTime = DefaultY1564StepTime
	}
	if c.PerfTime == 0 {
		c.PerfTime = DefaultY1564PerfTime
	}
	if c.UnavailFLRPct == 0 {
		c.UnavailFLRPct = DefaultY1564UnavailFLR
	}
	if c.ProbesPerS == 0 {
		c.ProbesPerS = DefaultY1564Probes
	}
	c.Services = append([]y1564.Service(nil), c.Services...)
	for i := range c.Services {
		if c.Services[i].FrameBytes == 0 {
			c.Services[i].FrameBytes = DefaultY1564Frame
		}
	}
	return c
}

// Validate reports what is wrong with c, or nil: its own bounds, then
// each service's slowest and fastest step as the engine will run it.
func (c Y1564Config) Validate() error {
	switch {
	case len(c.Services) < 1 || len(c.Services) > MaxY1564Services:
		return fieldErr("services", "%d services: 1 to %d are required (--service name=...,cir=...)", len(c.Services), MaxY1564Services)
	case c.SkipConfig && c.SkipPerf:
		return fieldErr("skip_perf", "both tests skipped: nothing to run")
	case c.StepTime < MinStepDuration:
		return fieldErr("step_time_ns", "%v: want at least %v", c.StepTime, MinStepDuration)
	case c.PerfTime < MinStepDuration:
		return fieldErr("perf_time_ns", "%v: want at least %v", c.PerfTime, MinStepDuration)
	case c.UnavailFLRPct <= 0 || c.UnavailFLRPct > 100:
		return fieldErr("unavail_flr_pct", "unavailable above %g %% loss: want above 0 to 100", c.UnavailFLRPct)
	case c.ProbesPerS < 1 || c.ProbesPerS > 10000:
		return fieldErr("probes_per_s", "%d probes a second: want 1 to 10000", c.ProbesPerS)
	}
	for _, p := range c.StepsPct {
		if p <= 0 || p > 100 {
			return fieldErr("steps_pct", "step %g %% of the CIR: want above 0 to 100", p)
		}
	}
	if err := checkDirections(c.Directions); err != nil {
		return err
	}
	names := map[string]bool{}
	for i, s := range c.Services {
		at := fmt.Sprintf("services[%d]", i)
		if err := s.Validate(); err != nil {
			return within(at, err)
		}
		if names[s.Name] {
			return fieldErr(at, "service %q named twice", s.Name)
		}
		names[s.Name] = true
		steps := y1564.Steps(s, c.StepsPct)
		for _, st := range []y1564.Step{steps[0], steps[len(steps)-1]} {
			if err := c.Trial(s, st, vocab.Up).Validate(); err != nil {
				return within(at, fmt.Errorf("service %q, step %s: %w", s.Name, st.Name(), err))
			}
		}
	}
	return nil
}

// Trial is the engine's UDP test that runs step st of service s in dir:
// frames of s.FrameBytes carry FrameBytes − 46 bytes of UDP payload (− 66
// over IPv6), paced
// at the step's frame rate, marked with the service's DSCP, with a
// latency probe every EchoEvery frames (ProbesPerS a second), counted in
// 1-second intervals.
func (c Y1564Config) Trial(s y1564.Service, st y1564.Step, dir vocab.Direction) UDPConfig {
	d := c.StepTime
	if st.Kind == y1564.StepPerf {
		d = c.PerfTime
	}
	fps := s.FramesPerSecond(st.RateBps)
	every := max(1, int(math.Round(fps/float64(max(c.ProbesPerS, 1)))))
	return UDPConfig{RateBps: int64(math.Round(s.PayloadBps(st.RateBps, c.IPv6))), Size: s.Payload(c.IPv6),
		Duration: d, Reverse: dir == vocab.Down, Interval: time.Second, Drain: Y1564Drain, DSCP: s.DSCP, EchoEvery: every}
}

// Y1564 is a Y.1564 run: each service's result per direction, and the
// run's verdict (y1564.Combine of the services').
type Y1564 struct {
	Meta
	Config   Y1564Config    `json:"config"`
	Services []Y1564Service `json:"services"`
	Verdict  y1564.Verdict  `json:"verdict"`
	Warnings []string       `json:"warnings"`
	// Partial: stopped early (Ctrl-C, a responder that vanished); the
	// steps not run are missing and their services FAIL.
	Partial       bool   `json:"partial"`
	PartialReason string `json:"partial_reason,omitempty"`
}

// Y1564Service is one service in one direction: its configuration steps,
// its performance test, and its verdicts.
type Y1564Service struct {
	Name          string          `json:"name"`
	Direction     vocab.Direction `json:"direction"`
	Steps         []Y1564Step     `json:"config_steps"`
	ConfigVerdict y1564.Verdict   `json:"config_verdict,omitempty"` // empty when skipped
	Performance   *Y1564Step      `json:"performance,omitempty"`
	PerfVerdict   y1564.Verdict   `json:"perf_verdict,omitempty"` // empty when skipped
	Verdict       y1564.Verdict   `json:"verdict"`
}

// Y1564Step is one step: what it offered, what it measured, its
// judgement.
type Y1564Step struct {
	Step      y1564.Step      `json:"step"`
	Figures   y1564.Figures   `json:"figures"`
	Judgement y1564.Judgement `json:"judgement"`
}
