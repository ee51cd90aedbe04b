package result

// One point of a window sweep as the engine runs it: its config and
// what it measured, turned into the sweep's point.

import (
	"errors"
	"fmt"
	"time"

	"github.com/fullpipe/fullpipe/internal/frame"
	"github.com/fullpipe/fullpipe/internal/sweep"
	"github.com/fullpipe/fullpipe/internal/vocab"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// PointSlack is how long a sweep point's probe session lasts beyond its
// baseline and its TCP test.
const PointSlack = 30 * time.Second

// WindowPointConfig is one point of a window sweep: a TCP test at an
// exact window with stamped UDP probes before it (the baseline) and
// during it (the load).
type WindowPointConfig struct {
	TCP TCPConfig
	// DSCPs are the probe classes, used in turn (at least one).
	DSCPs []int
	// Baseline probes are sent BaselineGap apart before the load.
	Baseline    int
	BaselineGap time.Duration
	// ProbeGap is the period of probes during the load.
	ProbeGap time.Duration
	// Settle: probes and rate intervals earlier than this after the TCP
	// test's start are not counted (slow start, the queue filling).
	Settle time.Duration
	// Seed draws the probes' send times within their slots.
	Seed uint64
}

// WindowPointRun is what one point measured.
type WindowPointRun struct {
	TCP          *TCP
	Baseline     []sweep.Probe
	BaselineSent []int
	Loaded       []sweep.Probe
	LoadedSent   []int
}

// Point turns a run into a sweep point: goodput and TCP_INFO figures of
// the data direction, the rates of the intervals after the settle time,
// and the probes' one-way delay increments.
func (r *WindowPointRun) Point(cfg WindowPointConfig, mss int) sweep.WindowPoint {
	pt := sweep.WindowPoint{WindowBytes: cfg.TCP.Window, WindowMSS: float64(cfg.TCP.Window) / float64(mss)}
	dir := vocab.Up
	if cfg.TCP.Reverse {
		dir = vocab.Down
	}
	if r.TCP != nil {
		sum := r.TCP.Summary
		pt.Partial = sum.Partial
		pt.InflightMaxBytes = sum.WindowEffective
		if d := sum.Directions[dir]; d != nil {
			pt.GoodputBps, pt.BytesSent, pt.BytesRetrans, pt.RetransSegs = d.ThroughputBps, d.BytesSent, d.BytesRetrans, d.RetransSegs
			if d.BytesSent > 0 {
				pt.LossPct = float64(d.BytesRetrans) / float64(d.BytesSent) * 100
			}
		}
		settle, end, slice := cfg.Settle.Seconds(), cfg.TCP.Duration.Seconds(), cfg.TCP.Interval.Seconds()
		var rates []float64
		for _, iv := range r.TCP.Intervals { // whole slices only: not the short last one
			if iv.StartS >= settle-1e-3 && iv.EndS <= end+1e-3 && iv.EndS-iv.StartS >= 0.9*slice {
				rates = append(rates, iv.ThroughputBps)
			}
		}
		pt.RateSpread(rates)
	}
	pt.Classes, pt.DelayIncrementMs, pt.DelayIncrementMaxMs, pt.HasDelay =
		sweep.ClassDelays(cfg.DSCPs, r.Baseline, r.Loaded, r.BaselineSent, r.LoadedSent, vocab.Of(cfg.TCP.Reverse))
	return pt
}

// WithDefaults fills the zero fields: TCP's defaults, probes of DSCP 0,
// 10 baseline probes 20 ms apart, probes every 100 ms during the load.
// Settle 0 counts from the start.
func (c WindowPointConfig) WithDefaults() WindowPointConfig {
	c.TCP = c.TCP.WithDefaults()
	if len(c.DSCPs) == 0 {
		c.DSCPs = []int{0}
	}
	if c.Baseline == 0 {
		c.Baseline = DefaultBaseline
	}
	if c.BaselineGap == 0 {
		c.BaselineGap = DefaultBaselineGap
	}
	if c.ProbeGap == 0 {
		c.ProbeGap = DefaultProbeGap
	}
	return c
}

// Validate reports what is wrong with c, or nil.
func (c WindowPointConfig) Validate() error {
	if err := c.TCP.Validate(); err != nil {
		return within("tcp", err)
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
		if d < 0 || d > frame.MaxDSCP {
			return fmt.Errorf("probe dscp %d: want 0 to 63", d)
		}
	}
	return formOnly(c.Request())
}

// Request is the probe session's: it spans the baseline, the TCP
// test and some slack, with a probe every ProbeGap.
func (c WindowPointConfig) Request() wire.Request {
	span := c.TCP.Duration + time.Duration(c.Baseline)*c.BaselineGap + PointSlack
	probes := c.Baseline + int(span/max(c.ProbeGap, time.Millisecond)) + 10
	return wire.Request{Kind: wire.KindRTT, Duration: span, Interval: time.Second,
		Probes: probes, ProbeSize: wire.EchoStampLen, UDPPorts: len(c.DSCPs)}
}
