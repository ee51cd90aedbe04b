package tester

// Defaults and validation of a window point, and what every Run function
// starts with (checked). The tests' own configs validate themselves in
// package result.

import (
	"errors"
	"fmt"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// WithDefaults fills the zero fields: TCP's defaults, probes of DSCP 0,
// 10 baseline probes 20 ms apart, probes every 100 ms during the load.
// Settle 0 counts from the start.
func (c WindowPointConfig) WithDefaults() WindowPointConfig {
	c.TCP = c.TCP.WithDefaults()
	if len(c.DSCPs) == 0 {
		c.DSCPs = []int{0}
	}
	if c.Baseline == 0 {
		c.Baseline = result.DefaultBaseline
	}
	if c.BaselineGap == 0 {
		c.BaselineGap = result.DefaultBaselineGap
	}
	if c.ProbeGap == 0 {
		c.ProbeGap = result.DefaultProbeGap
	}
	return c
}

// Validate reports what is wrong with c, or nil.
func (c WindowPointConfig) Validate() error {
	if err := c.TCP.Validate(); err != nil {
		return fmt.Errorf("tcp: %w", err)
	}
	switch {
	case c.TCP.Duration <= 0:
		return errors.New("a window point runs for a duration, not a byte count")
	case len(c.DSCPs) < 1 || len(c.DSCPs) > wire.MaxUDPPorts:
		return fmt.Errorf("%d probe classes: want 1 to %d", len(c.DSCPs), wire.MaxUDPPorts)
	case c.Baseline < 1 || c.BaselineGap <= 0:
		return fmt.Errorf("baseline of %d probes %v apart: want at least 1, a positive gap", c.Baseline, c.BaselineGap)
	case c.ProbeGap < time.Millisecond:
		return fmt.Errorf("probe gap %v is below 1ms", c.ProbeGap)
	case c.Settle < 0 || c.Settle >= c.TCP.Duration:
		return fmt.Errorf("settle %v: want 0 to less than the duration %v", c.Settle, c.TCP.Duration)
	}
	for _, d := range c.DSCPs {
		if d < 0 || d > 63 {
			return fmt.Errorf("probe dscp %d: want 0 to 63", d)
		}
	}
	return c.probeRequest().Validate(wire.FormOnly())
}

// checked is cfg with its defaults, or why it cannot run; what every Run
// function starts with, before any connection.
func checked[C interface {
	WithDefaults() C
	Validate() error
}](kind string, cfg C) (C, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("%s test: %w", kind, err)
	}
	return cfg, nil
}

// probeRequest is the probe session's: it spans the baseline, the TCP
// test and some slack, with a probe every ProbeGap.
func (c WindowPointConfig) probeRequest() wire.Request {
	span := c.TCP.Duration + time.Duration(c.Baseline)*c.BaselineGap + probeSlack
	probes := c.Baseline + int(span/max(c.ProbeGap, time.Millisecond)) + 10
	return wire.Request{Kind: wire.KindRTT, Duration: span, Interval: time.Second,
		Probes: probes, ProbeSize: wire.EchoStampLen, UDPPorts: len(c.DSCPs)}
}
