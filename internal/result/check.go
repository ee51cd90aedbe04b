package result

// Defaults and validation of the engine's configs. Each Run function
// applies WithDefaults and then Validate before it opens any connection,
// so the zero value of every config runs a test and a bad one fails
// with a clear error first. Validate checks a config as it stands (call
// it on WithDefaults' result); where a config maps onto a request, it
// runs the request's own rules (wire.Request.Validate against
// wire.FormOnly: the responder's limits are checked once it has announced
// them, in the handshake).

import (
	"time"

	"github.com/fullpipe/fullpipe/internal/frame"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// Bounds of the client's own, beyond the request's rules.
const (
	// MinMSS and MaxMSS are what Linux accepts for TCP_MAXSEG.
	MinMSS = 88
	MaxMSS = 65495
	// MaxWindow is the largest window TCP can announce (window scale 14).
	MaxWindow = 1 << 30
	// MaxRTTCount bounds the probes of one rtt test.
	MaxRTTCount = 1_000_000
	// MinRTTInterval is the shortest gap between rtt probes.
	MinRTTInterval = time.Millisecond
	// MaxPMTUTries bounds the probes per size of a path MTU search.
	MaxPMTUTries = 1000
	// minIPPacket is the smallest IPv4 MTU (RFC 791), maxIPPacket the
	// largest IP packet.
	minIPPacket, maxIPPacket = 68, 65535
)

// Defaults of zero config fields.
const (
	DefaultTCPDuration = 10 * time.Second
	DefaultInterval    = time.Second
	DefaultUDPRateBps  = 10_000_000
	DefaultUDPSize     = 1400
	DefaultUDPDrain    = 500 * time.Millisecond
	DefaultRTTCount    = 10
	DefaultRTTInterval = 100 * time.Millisecond
	DefaultRTTSize     = 64
	DefaultPMTUTries   = 3 // RFC 8899 MAX_PROBES
	DefaultTrainLength = 16
	DefaultTrainSize   = frame.EthernetMTU - frame.IPv4UDP // a 1500-byte IPv4 packet
	DefaultTrainDrain  = 500 * time.Millisecond
	DefaultBaseline    = 10
	DefaultBaselineGap = 20 * time.Millisecond
	DefaultProbeGap    = 100 * time.Millisecond
)

// formOnly checks a request's own rules: what any responder refuses.
func formOnly(r wire.Request) error { return r.Validate(wire.FormOnly()) }

// WithDefaults fills the zero fields: 1 stream, 10 s (unless Bytes is
// set), 1 s intervals.
func (c TCPConfig) WithDefaults() TCPConfig {
	if c.Streams == 0 {
		c.Streams = 1
	}
	if c.Duration == 0 && c.Bytes == 0 {
		c.Duration = DefaultTCPDuration
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	return c
}

// Validate reports what is wrong with c, or nil. The streams are the
// request's rule too (the responder's check); here it names the field,
// so that a form and the command line say where.
func (c TCPConfig) Validate() error {
	switch {
	case c.Streams < 1:
		return fieldErr("streams", "%d: want at least 1 (the responder announces its own limit)", c.Streams)
	case c.Duration < 0:
		return fieldErr("duration_ns", "%v must not be negative", c.Duration)
	case c.Duration > 0 && c.Bytes > 0:
		return fieldErr("bytes", "give a duration or a byte count, not both")
	case c.Bytes > 0 && c.Bytes < int64(c.Streams):
		return fieldErr("bytes", "%d is fewer than one byte per stream (%d streams)", c.Bytes, c.Streams)
	case c.Reverse && c.Bidir:
		return fieldErr("bidir", "reverse and bidir exclude each other: bidir already has the responder send")
	case c.Window > MaxWindow:
		return fieldErr("window_bytes", "%d bytes is above the 1 GiB TCP maximum", c.Window)
	case c.MSS != 0 && (c.MSS < MinMSS || c.MSS > MaxMSS):
		return fieldErr("mss_bytes", "%d: Linux accepts %d to %d bytes", c.MSS, MinMSS, MaxMSS)
	case c.DSCP < 0 || c.DSCP > frame.MaxDSCP:
		return fieldErr("dscp", "%d: want a code point from 0 to 63", c.DSCP)
	}
	return formOnly(c.Request())
}

// WithDefaults fills the zero fields: 10 Mbit/s of 1400-byte datagrams
// for 10 s, 1 s intervals, a 500 ms drain.
func (c UDPConfig) WithDefaults() UDPConfig {
	if c.RateBps == 0 {
		c.RateBps = DefaultUDPRateBps
	}
	if c.Size == 0 {
		c.Size = DefaultUDPSize
	}
	if c.Duration == 0 {
		c.Duration = DefaultTCPDuration
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Drain == 0 {
		c.Drain = DefaultUDPDrain
	}
	return c
}

// Validate reports what is wrong with c, or nil. The size is the
// request's rule too (the responder's check); here it names the field,
// so that a form and the command line say where.
func (c UDPConfig) Validate() error {
	switch {
	case c.Size < wire.MinUDPSize || c.Size > wire.MaxUDPPayload:
		return fieldErr("size_bytes", "%d: want a size of %d to %d bytes (the first %d carry fullpipe's header, %d below %d bytes)",
			c.Size, wire.MinUDPSize, wire.MaxUDPPayload, wire.UDPHeaderLen, wire.CompactLen, wire.UDPHeaderLen)
	case c.Drain < 0:
		return fieldErr("drain_ns", "%v must not be negative", c.Drain)
	case c.DSCP < 0 || c.DSCP > frame.MaxDSCP:
		return fieldErr("dscp", "%d: want a code point from 0 to 63", c.DSCP)
	case c.EchoEvery < 0:
		return fieldErr("echo_every", "%d: want 0 (no latency probes) or more", c.EchoEvery)
	}
	return formOnly(c.Request())
}

// WithDefaults fills the zero fields: 10 probes of 64 bytes, 100 ms apart.
func (c RTTConfig) WithDefaults() RTTConfig {
	if c.Count == 0 {
		c.Count = DefaultRTTCount
	}
	if c.Interval == 0 {
		c.Interval = DefaultRTTInterval
	}
	if c.Size == 0 {
		c.Size = DefaultRTTSize
	}
	return c
}

// Validate reports what is wrong with c, or nil.
func (c RTTConfig) Validate() error {
	switch {
	case c.Count < 1 || c.Count > MaxRTTCount:
		return fieldErr("count", "%d: want 1 to %d probes", c.Count, MaxRTTCount)
	case c.Interval < MinRTTInterval:
		return fieldErr("interval_ns", "%v is below the %v minimum between probes", c.Interval, MinRTTInterval)
	case c.Size < wire.UDPHeaderLen || c.Size > wire.MaxUDPPayload:
		return fieldErr("size_bytes", "%d: want %d to %d bytes per probe (the first %d carry fullpipe's header)", c.Size, wire.UDPHeaderLen, wire.MaxUDPPayload, wire.UDPHeaderLen)
	}
	return formOnly(c.Request())
}

// WithDefaults fills Tries (3); MinBytes and MaxBytes stay 0, decided
// when the search runs (1200 or 1280 on IPv6; the local MTU).
func (c PMTUConfig) WithDefaults() PMTUConfig {
	if c.Tries == 0 {
		c.Tries = DefaultPMTUTries
	}
	return c
}

// Validate reports what is wrong with c, or nil.
func (c PMTUConfig) Validate() error {
	packet := func(n int) bool { return n == 0 || n >= minIPPacket && n <= maxIPPacket }
	switch {
	case !packet(c.MinBytes):
		return fieldErr("min_bytes", "%d: want an IP packet size of %d to %d (0: the default)", c.MinBytes, minIPPacket, maxIPPacket)
	case !packet(c.MaxBytes):
		return fieldErr("max_bytes", "%d: want an IP packet size of %d to %d (0: the default)", c.MaxBytes, minIPPacket, maxIPPacket)
	case c.MinBytes != 0 && c.MaxBytes != 0 && c.MaxBytes < c.MinBytes:
		return fieldErr("max_bytes", "%d is below min %d", c.MaxBytes, c.MinBytes)
	case c.Tries < 1 || c.Tries > MaxPMTUTries:
		return fieldErr("tries", "%d: want 1 to %d probes per size", c.Tries, MaxPMTUTries)
	}
	return formOnly(c.Request())
}

// WithDefaults fills the zero fields: 16 datagrams of 1472 bytes, back
// to back, a 500 ms drain. Overhead 0 counts the UDP payload only.
func (c TrainConfig) WithDefaults() TrainConfig {
	if c.Packets == 0 {
		c.Packets = DefaultTrainLength
	}
	if c.Size == 0 {
		c.Size = DefaultTrainSize
	}
	if c.Drain == 0 {
		c.Drain = DefaultTrainDrain
	}
	return c
}

// Validate reports what is wrong with c, or nil.
func (c TrainConfig) Validate() error {
	if c.Drain < 0 {
		return fieldErr("drain_ns", "%v must not be negative", c.Drain)
	}
	return formOnly(c.Request())
}
