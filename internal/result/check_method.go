package result

// Defaults and validation of the method configs. Each Run function of
// package method starts with WithDefaults, then Validate, before any
// connection. What a config asks of the engine is checked by the
// engine's own configs (their Validate, and through them the request's
// rules); the responder's limits are checked by the client once the
// responder has announced them.

import (
	"fmt"
	"slices"
	"time"

	"github.com/fullpipe/fullpipe/internal/frame"
	"github.com/fullpipe/fullpipe/internal/rfc6349"
	"github.com/fullpipe/fullpipe/internal/vocab"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// Bounds of the methods' configs.
const (
	// MaxSweepPoints bounds the windows or sizes of one sweep.
	MaxSweepPoints = 256
	// MaxRFCSweepPoints bounds the window sweep inside an RFC 6349 run.
	MaxRFCSweepPoints = 64
	// MinStepDuration is the shortest test of a method's steps.
	MinStepDuration = time.Second
	// MinRFCMaxWindow is the smallest MaxWindow an RFC 6349 run takes:
	// one full-size segment.
	MinRFCMaxWindow = 1500
	// MaxWriteSize bounds a msglen sweep's sizes.
	MaxWriteSize = 16 << 20
	// MinShapingConns is the fewest connections of RFC 6349's shaping
	// step: it tells a shaper from a policer by how several share it.
	MinShapingConns = 2
	// MinSweepInterval is the shortest slice a sweep reads its
	// instantaneous rate over (at most half a point).
	MinSweepInterval = 50 * time.Millisecond
	// MinProbeGap is the shortest gap between a window sweep's delay
	// probes (at most half a point), MinBaselineProbes and
	// MaxBaselineProbes bound the idle probes before each point.
	MinProbeGap                          = 10 * time.Millisecond
	MinBaselineProbes, MaxBaselineProbes = 3, 100
)

// Defaults of zero method config fields.
const (
	// MsgLenUDPDrain is how long a msglen sweep's UDP receiver counts
	// after the sender stops.
	MsgLenUDPDrain            = 300 * time.Millisecond
	DefaultThroughputDuration = 30 * time.Second // RFC 6349: > 30 s
	DefaultStepDuration       = 5 * time.Second
	DefaultLink               = "ethernet"
	DefaultShapingConns       = 4
	DefaultSweepDuration      = 5 * time.Second
	DefaultSweepMSS           = frame.EthernetMTU - frame.IPv4TCP - frame.TCPTimestamps // a 1500-byte MTU's segment with TCP timestamps (frame.Segment)
	DefaultSweepCC            = "reno"
	DefaultSweepInterval      = 200 * time.Millisecond
	DefaultMsgLenUDPRateBps   = 50_000_000
	DefaultTrainsMTU          = 1500
)

// bothWays is the default of every Directions.
func bothWays() []vocab.Direction { return []vocab.Direction{vocab.Up, vocab.Down} }

// checkDirections refuses an empty list, unknown names and repeats.
func checkDirections(dirs []vocab.Direction) error {
	if len(dirs) == 0 {
		return fieldErr("directions", "none: want up, down or both")
	}
	for i, d := range dirs {
		if !d.Valid() || slices.Contains(dirs[:i], d) {
			return fieldErr("directions", "%q: want up, down or both, each once", dirs)
		}
	}
	return nil
}

// WithDefaults fills the zero fields: both directions, a 30 s throughput
// test, 5 s steps, Ethernet framing, the default thresholds (95 %, 99
// %), 4 shaping connections. CIRBps has no default: it is the contract
// under test. CC "" is the senders' default, MaxWindow 0 none,
// SweepPoints 0 no sweep.
func (c RFC6349Config) WithDefaults() RFC6349Config {
	if len(c.Directions) == 0 {
		c.Directions = bothWays()
	}
	if c.Duration == 0 {
		c.Duration = DefaultThroughputDuration
	}
	if c.StepDuration == 0 {
		c.StepDuration = DefaultStepDuration
	}
	if c.Link == "" {
		c.Link = DefaultLink
	}
	if c.Thresholds.MinActualPct == 0 {
		c.Thresholds.MinActualPct = rfc6349.DefaultThresholds.MinActualPct
	}
	if c.Thresholds.MinEfficiencyPct == 0 {
		c.Thresholds.MinEfficiencyPct = rfc6349.DefaultThresholds.MinEfficiencyPct
	}
	if c.ShapingConns == 0 {
		c.ShapingConns = DefaultShapingConns
	}
	return c
}

// Validate reports what is wrong with c, or nil.
func (c RFC6349Config) Validate() error {
	pct := func(p float64) bool { return p >= 0 && p <= 100 }
	switch {
	case c.CIRBps <= 0:
		return fieldErr("cir_bps", "required: the committed rate the service should carry, e.g. 100e6")
	case c.Duration < MinStepDuration:
		return fieldErr("throughput_duration_ns", "%v: want at least %v", c.Duration, MinStepDuration)
	case c.StepDuration < MinStepDuration:
		return fieldErr("step_duration_ns", "%v: want at least %v", c.StepDuration, MinStepDuration)
	case c.ShapingConns < MinShapingConns:
		return fieldErr("shaping_connections", "%d: want at least %d", c.ShapingConns, MinShapingConns)
	case c.SweepPoints < 0 || c.SweepPoints > MaxRFCSweepPoints:
		return fieldErr("sweep_points", "%d: want 0 (no sweep) to %d windows", c.SweepPoints, MaxRFCSweepPoints)
	case c.MaxWindow < 0 || c.MaxWindow > 0 && c.MaxWindow < MinRFCMaxWindow:
		return fieldErr("max_window_bytes", "%d: want 0 (none) or at least %d", c.MaxWindow, MinRFCMaxWindow)
	case !pct(c.Thresholds.MinActualPct) || !pct(c.Thresholds.MinEfficiencyPct):
		return fieldErr("thresholds", "%+v: want percentages of 0 to 100", c.Thresholds)
	}
	if err := checkDirections(c.Directions); err != nil {
		return err
	}
	if _, err := rfc6349.LinkByName(c.Link); err != nil {
		return within("link", err)
	}
	// The shaping step's test: the most connections, the given cc.
	shaping := TCPConfig{Streams: c.ShapingConns, Duration: c.StepDuration, CC: c.CC}.WithDefaults()
	if err := shaping.Validate(); err != nil {
		return within("shaping_connections", fmt.Errorf("the shaping step's test: %w", err))
	}
	return nil
}

// WithDefaults fills the zero fields: the windows 1 to 64 mss by 1 mss
// of 1448 bytes, 5 s each with reno, probes of DSCP 0 every 100 ms after
// 10 baseline probes, the first third of each point not counted, 200 ms
// rate slices. Seed 0 is a seed like any other.
func (c WindowSweepConfig) WithDefaults() WindowSweepConfig {
	if c.MSS == 0 {
		c.MSS = DefaultSweepMSS
	}
	if len(c.Windows) == 0 {
		for k := 1; k <= 64; k++ {
			c.Windows = append(c.Windows, k*c.MSS)
		}
	}
	if c.Duration == 0 {
		c.Duration = DefaultSweepDuration
	}
	if c.CC == "" {
		c.CC = DefaultSweepCC
	}
	if len(c.ProbeDSCPs) == 0 {
		c.ProbeDSCPs = []int{0}
	}
	if c.ProbeGap == 0 {
		c.ProbeGap = DefaultProbeGap
	}
	if c.BaselineProbes == 0 {
		c.BaselineProbes = DefaultBaseline
	}
	if c.Settle == 0 {
		c.Settle = c.Duration / 3
	}
	if c.Interval == 0 {
		c.Interval = DefaultSweepInterval
	}
	return c
}

// Validate reports what is wrong with c, or nil: the sweep's own bounds,
// (method checks each point as the engine will run it).
func (c WindowSweepConfig) Validate() error {
	switch {
	case len(c.Windows) < 1 || len(c.Windows) > MaxSweepPoints:
		return fieldErr("windows_bytes", "%d windows: want 1 to %d", len(c.Windows), MaxSweepPoints)
	case c.MSS < MinMSS || c.MSS > MaxMSS:
		return fieldErr("mss_bytes", "%d: want %d to %d bytes", c.MSS, MinMSS, MaxMSS)
	case c.Duration < MinStepDuration:
		return fieldErr("duration_ns", "%v: want at least %v per point", c.Duration, MinStepDuration)
	case c.Interval < MinSweepInterval || c.Interval > c.Duration/2:
		return fieldErr("interval_ns", "%v: want %v to half of the duration", c.Interval, MinSweepInterval)
	case c.ProbeGap < MinProbeGap || c.ProbeGap > c.Duration/2:
		return fieldErr("probe_gap_ns", "%v: want %v to half of the duration", c.ProbeGap, MinProbeGap)
	case c.BaselineProbes < MinBaselineProbes || c.BaselineProbes > MaxBaselineProbes:
		return fieldErr("baseline_probes", "%d: want %d to %d", c.BaselineProbes, MinBaselineProbes, MaxBaselineProbes)
	case len(c.ProbeDSCPs) > 2:
		return fieldErr("probe_dscps", "%d probe classes: at most two", len(c.ProbeDSCPs))
	}
	for _, w := range c.Windows {
		if w < 1 {
			return fieldErr("windows_bytes", "%d bytes: want at least 1", w)
		}
	}
	return nil
}

// WithDefaults fills the zero fields: write sizes 64 B to 64 KiB by
// doubling, 5 s per size and protocol, UDP at 50 Mbit/s, 200 ms slices.
func (c MsgLenSweepConfig) WithDefaults() MsgLenSweepConfig {
	if len(c.Sizes) == 0 {
		for n := 64; n <= 64<<10; n *= 2 {
			c.Sizes = append(c.Sizes, n)
		}
	}
	if c.Duration == 0 {
		c.Duration = DefaultSweepDuration
	}
	if c.UDPRateBps == 0 {
		c.UDPRateBps = DefaultMsgLenUDPRateBps
	}
	if c.Interval == 0 {
		c.Interval = DefaultSweepInterval
	}
	return c
}

// Validate reports what is wrong with c, or nil: the sweep's own bounds,
// then each size's TCP and UDP tests as the engine will run them.
func (c MsgLenSweepConfig) Validate() error {
	switch {
	case len(c.Sizes) < 1 || len(c.Sizes) > MaxSweepPoints:
		return fieldErr("sizes_bytes", "%d sizes: want 1 to %d", len(c.Sizes), MaxSweepPoints)
	case c.Duration < MinStepDuration:
		return fieldErr("duration_ns", "%v: want at least %v per size", c.Duration, MinStepDuration)
	case c.Interval < MinSweepInterval || c.Interval > c.Duration/2:
		return fieldErr("interval_ns", "%v: want %v to half of the duration", c.Interval, MinSweepInterval)
	}
	for _, size := range c.Sizes {
		if size < 1 || size > MaxWriteSize {
			return fieldErr("sizes_bytes", "%d bytes: want 1 B to 16 MiB per write", size)
		}
		tcp := TCPConfig{Streams: 1, Duration: c.Duration, Interval: c.Interval, WriteSize: size}
		udp := UDPConfig{RateBps: c.UDPRateBps, Size: min(max(size, 40), wire.MaxUDPPayload), Duration: c.Duration, Interval: c.Interval, Drain: MsgLenUDPDrain}
		if err := tcp.Validate(); err != nil {
			return within("sizes_bytes", fmt.Errorf("%d B: tcp: %w", size, err))
		}
		if err := udp.Validate(); err != nil {
			return within("sizes_bytes", fmt.Errorf("%d B: udp: %w", size, err))
		}
	}
	return nil
}

// WithDefaults fills the zero fields: both directions, a 1500-byte MTU,
// Ethernet framing, the CIR at RateBps. RateBps and RTT have no default:
// they are what is known of the path.
func (c TrainsConfig) WithDefaults() TrainsConfig {
	if len(c.Directions) == 0 {
		c.Directions = bothWays()
	}
	if c.MTU == 0 {
		c.MTU = DefaultTrainsMTU
	}
	if c.Link == "" {
		c.Link = DefaultLink
	}
	if c.CIRBps == 0 {
		c.CIRBps = c.RateBps
	}
	return c
}

// Validate reports what is wrong with c, or nil.
func (c TrainsConfig) Validate() error {
	switch {
	case c.RateBps <= 0:
		return fieldErr("rate_bps", "%.0f bit/s: the path's rate is required", c.RateBps)
	case c.RTT <= 0 || c.RTT > 10*time.Second:
		return fieldErr("rtt_ns", "%v: the path's RTT is required, up to 10s", c.RTT)
	case c.CIRBps < 0:
		return fieldErr("cir_bps", "%.0f bit/s must not be negative", c.CIRBps)
	case c.MTU < 576 || c.MTU > 9216:
		return fieldErr("mtu_bytes", "%d: want 576 to 9216 bytes", c.MTU)
	}
	if err := checkDirections(c.Directions); err != nil {
		return err
	}
	_, err := rfc6349.LinkByName(c.Link)
	return within("link", err)
}
