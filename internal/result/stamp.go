package result

import (
	"errors"
	"regexp"
	"time"

	"github.com/fullpipe/fullpipe/internal/stamp"
	"github.com/fullpipe/fullpipe/internal/stats"
)

// The STAMP test's document (fullpipe stamp): a STAMP Session-Sender
// (RFC 8762) against any STAMP or TWAMP-Light reflector (a router's, or
// fullpipe serve --stamp), no fullpipe responder needed. docs/stamp.md.

// STAMP test bounds and defaults.
const (
	DefaultSTAMPPort     = 862 // RFC 8762 §4.1: the well-known port
	DefaultSTAMPCount    = 100
	DefaultSTAMPInterval = 100 * time.Millisecond
	DefaultSTAMPWait     = time.Second
	MaxSTAMPCount        = stamp.MaxCount
	MinSTAMPInterval     = 100 * time.Microsecond
	MaxSTAMPWait         = time.Minute
	// STAMPSenderSize and STAMPAuthSize are the smallest test packets,
	// unauthenticated and authenticated (RFC 8762 §4.2.1, §4.2.2): UDP
	// payload octets.
	STAMPSenderSize = stamp.SenderSize
	STAMPAuthSize   = stamp.AuthSize
	maxUDPPayload   = 65507
)

// STAMPConfig is a STAMP session's config.
type STAMPConfig struct {
	Port     int           `json:"port"`        // the reflector's UDP port on the target host; default 862
	Count    int           `json:"count"`       // test packets; default 100
	Interval time.Duration `json:"interval_ns"` // between sends; default 100 ms
	Size     int           `json:"size_bytes"`  // UDP payload of each test packet; default 44 (112 authenticated)
	Wait     time.Duration `json:"wait_ns"`     // how long replies are awaited after the last send; default 1 s
	// Stateful says the reflector counts our packets (RFC 8762 §4.3.1
	// stateful mode), which tells forward from backward loss; with a
	// stateless reflector every loss is of unknown direction.
	Stateful bool `json:"stateful"`
	// Timestamps is the format of our timestamps: "ntp" (RFC 5905, the
	// default) or "ptp" (IEEE 1588v2 truncated, TAI).
	Timestamps string `json:"timestamps"`
	// KeyFile, when set, is a file on the sending host whose bytes are
	// the HMAC key (authenticated mode, RFC 8762 §4.4). The key itself is
	// never in the document.
	KeyFile string `json:"key_file,omitempty"`
	// Key, in a scheduled test, names the HMAC key instead: a file in
	// the sending agent's key directory (agent --stamp-key-dir), which
	// the agent resolves into KeyFile. A scheduled config may not name a
	// path.
	Key string `json:"key,omitempty"`
	// ClockSynced states that the sending host's clock is synchronized
	// (it sets the S bit of our timestamps' Error Estimate). One-way
	// delays are reported only when both ends say so.
	ClockSynced bool `json:"clock_synced"`
}

// WithDefaults fills the zero fields.
func (c STAMPConfig) WithDefaults() STAMPConfig {
	if c.Port == 0 {
		c.Port = DefaultSTAMPPort
	}
	if c.Count == 0 {
		c.Count = DefaultSTAMPCount
	}
	if c.Interval == 0 {
		c.Interval = DefaultSTAMPInterval
	}
	if c.Size == 0 {
		c.Size = c.minSize()
	}
	if c.Wait == 0 {
		c.Wait = DefaultSTAMPWait
	}
	if c.Timestamps == "" {
		c.Timestamps = "ntp"
	}
	return c
}

// ErrSTAMPKeyName is a STAMP key name that is not a plain file name.
var ErrSTAMPKeyName = errors.New("want a name of letters, digits, '.', '_' or '-' (not starting with '.'), up to 64: a file in the agent's --stamp-key-dir, never a path")

// stampKeyName is what a scheduled STAMP key may be called.
var stampKeyName = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$`)

// CheckSTAMPKeyName reports whether name may name a key in an agent's
// key directory: a file name, no path (ErrSTAMPKeyName).
func CheckSTAMPKeyName(name string) error {
	if !stampKeyName.MatchString(name) {
		return ErrSTAMPKeyName
	}
	return nil
}

// authenticated says the session is in authenticated mode: a key file
// or a key name.
func (c STAMPConfig) authenticated() bool { return c.KeyFile != "" || c.Key != "" }

func (c STAMPConfig) minSize() int {
	if c.authenticated() {
		return STAMPAuthSize
	}
	return STAMPSenderSize
}

// Validate reports what is wrong with c, or nil.
func (c STAMPConfig) Validate() error {
	switch {
	case c.Port < 1 || c.Port > 65535:
		return fieldErr("port", "%d: want 1 to 65535", c.Port)
	case c.Count < 1 || c.Count > MaxSTAMPCount:
		return fieldErr("count", "%d: want 1 to %d test packets", c.Count, MaxSTAMPCount)
	case c.Interval < MinSTAMPInterval:
		return fieldErr("interval_ns", "%v is below the %v minimum between test packets", c.Interval, MinSTAMPInterval)
	case c.Size < c.minSize() || c.Size > maxUDPPayload:
		return fieldErr("size_bytes", "%d: want %d to %d bytes per test packet (%d is the smallest %s packet)", c.Size, c.minSize(), maxUDPPayload, c.minSize(), c.mode())
	case c.Wait < 0 || c.Wait > MaxSTAMPWait:
		return fieldErr("wait_ns", "%v: want 0 to %v for the last replies", c.Wait, MaxSTAMPWait)
	case c.Timestamps != "ntp" && c.Timestamps != "ptp":
		return fieldErr("timestamps", "%q: want ntp or ptp", c.Timestamps)
	}
	return nil
}

func (c STAMPConfig) mode() string {
	if c.authenticated() {
		return "authenticated"
	}
	return "unauthenticated"
}

// Span is the session's length: the sends, then the wait for the last
// replies.
func (c STAMPConfig) Span() time.Duration {
	return time.Duration(c.Count-1)*c.Interval + c.Wait
}

// STAMP is a STAMP session, as its Session-Sender (the tester) saw it.
type STAMP struct {
	Meta
	Config  STAMPConfig  `json:"config"`
	Summary STAMPSummary `json:"summary"`
}

// STAMPSummary is the session's figures. Every delay names the clocks it
// mixes (Side): "tester" is a difference of the tester's own two clock
// readings, "reflector" of the reflector's, "tester→reflector" and
// "reflector→tester" subtract one host's reading from the other's.
type STAMPSummary struct {
	Sent     int     `json:"sent"`
	Received int     `json:"received"` // test packets with at least one reply
	Lost     int     `json:"lost"`
	LossPct  float64 `json:"loss_pct"`
	// LossByDirection says the losses are placed by direction: the
	// reflector is stateful (its sequence numbers count what it got from
	// us). Otherwise LostForward and LostBackward are 0 and every loss
	// is in LostUnknown.
	LossByDirection bool `json:"loss_by_direction"`
	LostForward     int  `json:"lost_forward"`  // tester → reflector
	LostBackward    int  `json:"lost_backward"` // reflector → tester
	LostUnknown     int  `json:"lost_unknown"`  // after the last reply, or any with a stateless reflector
	Duplicates      int  `json:"duplicates"`    // replies past the first for a packet
	Reordered       int  `json:"reordered"`     // first replies that came after a reply to a later packet
	Unknown         int  `json:"unknown_replies"`
	BadAuth         int  `json:"bad_auth_replies"` // authenticated mode: HMAC mismatch

	// RTT is (T4−T1) − (T3−T2): the round trip without the reflector's
	// residence time (RFC 8762 §4).
	RTT STAMPDelays `json:"rtt"`
	// Residence is T3−T2, how long the reflector held each packet.
	Residence STAMPDelays `json:"residence"`
	// ReflectorSynced: every reply's Error Estimate had the S bit.
	ReflectorSynced bool `json:"reflector_clock_synced"`
	// OneWay says whether Forward and Backward are reported: "reported"
	// when both clocks say they are synchronized, else why not.
	OneWay   string       `json:"one_way"`
	Forward  *STAMPDelays `json:"forward,omitempty"`  // T2−T1
	Backward *STAMPDelays `json:"backward,omitempty"` // T4−T3

	KernelTimestamps bool   `json:"kernel_timestamps"` // T4 from the kernel (SO_TIMESTAMPNS)
	Partial          bool   `json:"partial"`
	PartialReason    string `json:"partial_reason,omitempty"`
}

// STAMPDelays is one delay's distribution over the replied packets (µs,
// the one shape of a delay distribution) and the clocks it subtracts.
type STAMPDelays struct {
	Side string `json:"side"` // whose clock readings it subtracts (see STAMPSummary)
	stats.Delays
}

// The sides of STAMP's delays.
const (
	STAMPSideTester    = "tester"
	STAMPSideReflector = "reflector"
	STAMPSideForward   = "tester→reflector"
	STAMPSideBackward  = "reflector→tester"
)

// NewSTAMPSummary turns a sender's session into the document's figures.
func NewSTAMPSummary(r stamp.Result, cfg STAMPConfig) STAMPSummary {
	s := STAMPSummary{Sent: r.Sent, Received: r.Received, Lost: r.Lost, LossByDirection: cfg.Stateful,
		LostForward: r.LostForward, LostBackward: r.LostBackward, LostUnknown: r.LostUnknown,
		Duplicates: r.Duplicates, Reordered: r.OutOfOrder, Unknown: r.Unknown, BadAuth: r.BadAuth,
		RTT: delays(r.RTT, STAMPSideTester), Residence: delays(r.Residence, STAMPSideReflector),
		KernelTimestamps: r.KernelStamps}
	if r.Sent > 0 {
		s.LossPct = float64(r.Lost) / float64(r.Sent) * 100
	}
	s.ReflectorSynced = r.Received > 0
	for _, rec := range r.Records {
		if rec.Replied() && !rec.Synced {
			s.ReflectorSynced = false
		}
	}
	switch {
	case r.Received == 0:
		s.OneWay = "no reply"
	case !cfg.ClockSynced:
		s.OneWay = "not reported: this host's clock is not stated synchronized (--clock-synced)"
	case !s.ReflectorSynced:
		s.OneWay = "not reported: the reflector does not state its clock synchronized (S bit)"
	default:
		s.OneWay = "reported"
		f, b := delays(r.Forward, STAMPSideForward), delays(r.Backward, STAMPSideBackward)
		s.Forward, s.Backward = &f, &b
	}
	return s
}

func delays(d stats.Delays, side string) STAMPDelays {
	return STAMPDelays{Side: side, Delays: d}
}
