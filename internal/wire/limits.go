package wire

// Limits and the request's own validation: the rules a request must keep,
// checked by the same code on both ends (the responder before it accepts,
// the client before it sends), against the limits the responder announced.

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/fullpipe/fullpipe/internal/frame"
)

// The protocol's fixed bounds on a request: every responder keeps them,
// whatever its flags, so a client checks them even when it knows no limits.
const (
	// MaxAnyRateBps bounds every rate a request names, with or without
	// --max-rate: no interface sends 1 Tbit/s.
	MaxAnyRateBps = 1e12
	// MaxUDPPorts bounds the UDP source ports one session may use (a
	// sweep probes from one socket per DSCP class).
	MaxUDPPorts = 4
	// MaxWriteBuffers bounds what a test's send buffers take in the
	// responder's memory: write_size (or DefaultWriteSize) × the streams
	// it sends on.
	MaxWriteBuffers = 64 << 20
	// MaxTrainPackets bounds a train's datagrams (the receiver keeps 17
	// bytes for each).
	MaxTrainPackets = 1 << 18
	// MaxUDPPayload is the largest UDP payload over IPv4, in bytes.
	MaxUDPPayload = 65507
	// MaxOverheadBytes bounds a train's overhead_bytes.
	MaxOverheadBytes = 256
	// MinInterval is the shortest interval_ns.
	MinInterval = 10 * time.Millisecond
	// DefaultWriteSize is the bytes per write call of write_size 0.
	DefaultWriteSize = 1 << 20
	// BytesTestEchoSpan is the duration a byte-count test (duration 0)
	// counts for its echo budget.
	BytesTestEchoSpan = 10 * time.Minute
	// maxCCName is the longest congestion-control name Linux knows
	// (TCP_CA_NAME_MAX less its NUL).
	maxCCName = 15
)

// A TCP test's end, which both ends keep and the fleet's scheduler books.
const (
	// DrainMax bounds how long a TCP sender waits after its last write
	// for its last bytes to be acknowledged (package flow), so that its
	// figures count every byte sent and retransmitted: a full send
	// buffer into a slow bottleneck takes seconds.
	DrainMax = 5 * time.Second
	// EndGrace is how long past its duration a responder lets a session
	// run (package serve): a sender's drain and a second for the result.
	// The scheduler books all of it after every TCP test (package
	// schedule), so that a slot's end never cuts a healthy one.
	EndGrace = DrainMax + time.Second
)

// Limits are a responder's bounds on a request: what Request.Validate
// checks beyond the request's form and the fixed bounds above. A
// responder fills every field from its configuration (serve.Config) and
// announces them in hello, so a client can check its request before it
// sends it.
//
// A zero field is a limit not known, which Validate does not check. So
// the zero Limits (FormOnly) checks the request's form and the fixed
// bounds only: what a client can check of a responder that announced
// nothing. AllowCC and AllowDSCP are not known when nil; an empty,
// non-nil list allows none but the defaults (cc "" and dscp 0, which are
// always allowed). A responder announces an empty list as [] and an
// unknown one not at all, so the two stay apart on the wire.
type Limits struct {
	MaxStreams  int           `json:"max_streams,omitempty"`     // TCP streams per direction (--max-streams)
	MaxDuration time.Duration `json:"max_duration_ns,omitempty"` // test duration (--max-duration)
	// MaxRateBps bounds what the responder sends (a reverse UDP rate,
	// pacing × streams of a test it sends): --max-rate, 0 none.
	MaxRateBps    int64    `json:"max_rate_bps,omitempty"`
	MaxWindow     int      `json:"max_window_bytes,omitempty"`     // window of a test the responder sends (--max-window)
	MaxWriteSize  int      `json:"max_write_size_bytes,omitempty"` // write_size (--max-write-size)
	MaxProbeRate  int      `json:"max_probe_rate,omitempty"`       // echo probes per second of duration (--max-probe-rate)
	MaxTrainBytes int      `json:"max_train_bytes,omitempty"`      // bytes of one train (--max-train-bytes)
	AllowCC       []string `json:"allow_cc"`                       // congestion controls a request may name (--allow-cc)
	AllowDSCP     []int    `json:"allow_dscp"`                     // DSCP values a request may name (--allow-dscp)
}

// FormOnly is the Limits of a responder that announced none: an older
// one, or one that requires a secret (it says nothing about itself before
// the client has proven it). Validate against it checks the request's
// form and the protocol's fixed bounds, no limit of the responder's; the
// responder still checks its own and refuses with the same messages.
func FormOnly() Limits { return Limits{} }

// IsFormOnly reports whether l knows no limit of a responder.
func (l Limits) IsFormOnly() bool {
	return l.MaxStreams == 0 && l.MaxDuration == 0 && l.MaxRateBps == 0 && l.MaxWindow == 0 && l.MaxWriteSize == 0 &&
		l.MaxProbeRate == 0 && l.MaxTrainBytes == 0 && l.AllowCC == nil && l.AllowDSCP == nil
}

// RequestError is a request that breaks a rule: Code is CodeBadRequest
// for its form (and the stream and duration limits, as responders always
// said), CodeLimit for a limit of the responder's. Its message names the
// limit and the responder flag that raises it. The responder sends it as
// an Error; a client that finds it before sending returns it as is.
type RequestError struct {
	Code    ErrorCode
	Message string
}

func (e *RequestError) Error() string { return e.Message }

// AsWire is the error frame's body the responder sends for e.
func (e *RequestError) AsWire() *Error { return &Error{Code: e.Code, Message: e.Message} }

// Validate checks r against the rules of its kind and against l, in the
// order a responder always has: form first (bad_request), then limits
// (limit). It returns nil or a *RequestError. Both ends run it: the
// responder with its configured limits, the client with those the
// responder announced (FormOnly when none).
func (r Request) Validate(l Limits) error {
	if err := r.checkForm(l); err != nil {
		return &RequestError{Code: CodeBadRequest, Message: err.Error()}
	}
	if err := r.checkLimits(l); err != nil {
		return &RequestError{Code: CodeLimit, Message: err.Error()}
	}
	return nil
}

// checkForm is what responders answer with bad_request: the rules of
// each kind, then those common to all.
func (r Request) checkForm(l Limits) error {
	if err := r.checkKind(l); err != nil {
		return err
	}
	if l.MaxDuration > 0 && r.Duration > l.MaxDuration {
		return fmt.Errorf("duration %v exceeds the responder's limit of %v (--max-duration)", r.Duration, l.MaxDuration)
	}
	if r.Interval < MinInterval {
		return fmt.Errorf("interval %v is below the minimum of %v", r.Interval, MinInterval)
	}
	if r.DSCP < 0 || r.DSCP > frame.MaxDSCP {
		return fmt.Errorf("dscp must be 0 to 63, got %d", r.DSCP)
	}
	if r.Probes < 0 || r.ProbeSize < 0 || r.UDPPorts < 0 || r.RateBps < 0 {
		return errors.New("probes, probe_size, udp_ports and rate_bps must not be negative")
	}
	if r.EchoEvery < 0 {
		return errors.New("echo_every must not be negative")
	}
	if r.EchoEvery > 0 && r.Kind != KindUDP {
		return errors.New("echo_every is for udp tests only")
	}
	return checkCCName(r.CC)
}

// checkKind holds the rules of each kind of test.
func (r Request) checkKind(l Limits) error {
	switch r.Kind {
	case KindTCP:
		return r.checkTCP(l.MaxStreams)
	case KindUDP:
		if r.RateBps <= 0 || r.Size < MinUDPSize || r.Size > MaxUDPPayload {
			return fmt.Errorf("UDP needs a rate > 0 and a size of %d to %d bytes", MinUDPSize, MaxUDPPayload)
		}
		if r.Duration <= 0 {
			return errors.New("a UDP test needs a duration")
		}
	case KindRTT:
		if r.Duration <= 0 {
			return errors.New("an RTT test needs a duration")
		}
	case KindTrain:
		return r.checkTrain()
	default:
		return fmt.Errorf("unknown test kind %q", r.Kind)
	}
	return nil
}

func (r Request) checkTCP(maxStreams int) error {
	switch {
	case maxStreams > 0 && (r.Streams < 1 || r.Streams > maxStreams):
		return fmt.Errorf("streams must be 1 to %d (responder limit --max-streams), got %d", maxStreams, r.Streams)
	case r.Streams < 1:
		return fmt.Errorf("streams must be at least 1, got %d", r.Streams)
	case r.Duration <= 0 && r.Bytes <= 0:
		return errors.New("a TCP test needs a duration or a byte count")
	case r.Window < 0 || r.Bytes < 0 || r.MSS < 0 || r.PacingBps < 0:
		return errors.New("window, bytes, mss and pacing must not be negative")
	case r.WriteSize < 0:
		return fmt.Errorf("write_size must not be negative, got %d", r.WriteSize)
	}
	return nil
}

func (r Request) checkTrain() error {
	switch {
	case r.TrainPackets < 2 || r.TrainPackets > MaxTrainPackets:
		return fmt.Errorf("a train has 2 to %d packets, got %d", MaxTrainPackets, r.TrainPackets)
	case r.Size < MinUDPSize || r.Size > MaxUDPPayload:
		return fmt.Errorf("train packets carry %d to %d bytes of UDP payload, got %d", MinUDPSize, MaxUDPPayload, r.Size)
	case r.OverheadBytes < 0 || r.OverheadBytes > MaxOverheadBytes:
		return fmt.Errorf("overhead_bytes must be 0 to %d, got %d", MaxOverheadBytes, r.OverheadBytes)
	case r.Duration <= 0:
		return fmt.Errorf("a train needs a duration (how long the session may last)")
	}
	return nil
}

// checkCCName refuses what cannot be a Linux congestion-control name: at
// most 15 lower-case letters, digits, '_' or '-' ("" is the default).
func checkCCName(cc string) error {
	ok := len(cc) <= maxCCName
	for _, c := range cc {
		ok = ok && (c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-')
	}
	if !ok {
		return fmt.Errorf("cc %q is not a congestion-control name: want at most %d lower-case letters, digits, '_' or '-', e.g. cubic or bbr", cc, maxCCName)
	}
	return nil
}

// checkLimits is what responders answer with limit: the rates, sizes,
// names and budgets beyond a limit of l or a fixed bound.
func (r Request) checkLimits(l Limits) error {
	sends := r.Reverse || r.Bidir // the responder sends
	rate := max(r.RateBps, SatMul(r.PacingBps, int64(max(r.Streams, 1))))
	// --max-rate bounds what the responder sends; what a client sends
	// (an upload's rate or pacing) is only kept finite.
	capBps, flag := int64(MaxAnyRateBps), "no interface sends faster"
	if sends && l.MaxRateBps > 0 {
		capBps, flag = l.MaxRateBps, "--max-rate"
	}
	writeBuf := max(r.WriteSize, DefaultWriteSize)
	switch {
	case r.RateBps > capBps || r.PacingBps > capBps || rate > capBps:
		return fmt.Errorf("rate %d bit/s exceeds the responder's limit of %d bit/s (%s)", rate, capBps, flag)
	case sends && l.MaxWindow > 0 && r.Window > l.MaxWindow: // the responder's send buffers
		return fmt.Errorf("window %d bytes exceeds the responder's limit of %d bytes (--max-window; above net.core.wmem_max it also needs --force-sndbuf)", r.Window, l.MaxWindow)
	case l.MaxWriteSize > 0 && r.WriteSize > l.MaxWriteSize:
		return fmt.Errorf("write_size must be 0 (%d bytes) to %d bytes, got %d (responder limit --max-write-size)", DefaultWriteSize, l.MaxWriteSize, r.WriteSize)
	case sends && SatMul(int64(writeBuf), int64(r.Streams)) > MaxWriteBuffers:
		return fmt.Errorf("write_size %d × %d streams the responder sends exceeds its %d MiB of write buffers per test: fewer streams or a smaller write_size", writeBuf, r.Streams, MaxWriteBuffers>>20)
	case r.CC != "" && l.AllowCC != nil && !slices.Contains(l.AllowCC, r.CC):
		return fmt.Errorf("congestion control %q is not allowed on this responder; it allows %s (--allow-cc)", r.CC, strings.Join(l.AllowCC, ", "))
	case r.DSCP != 0 && l.AllowDSCP != nil && !slices.Contains(l.AllowDSCP, r.DSCP):
		return fmt.Errorf("dscp %d is not allowed on this responder (--allow-dscp; the default 0-47 leaves out the network-control classes CS6 and CS7)", r.DSCP)
	case r.Kind == KindTrain && l.MaxTrainBytes > 0 && SatMul(int64(r.TrainPackets), int64(r.Size)) > int64(l.MaxTrainBytes):
		return fmt.Errorf("a train of %d × %d bytes exceeds the responder's limit of %d bytes per train (--max-train-bytes)", r.TrainPackets, r.Size, l.MaxTrainBytes)
	case r.UDPPorts > MaxUDPPorts:
		return fmt.Errorf("udp_ports %d exceeds the responder's limit of %d", r.UDPPorts, MaxUDPPorts)
	}
	if l.MaxProbeRate > 0 {
		if probes, most := r.EchoProbes(), SatAdd(SatMul(int64(l.MaxProbeRate), r.echoSeconds()), 20); probes > most {
			return fmt.Errorf("%d probes exceed the responder's limit of %d for a %v test (%d per second, --max-probe-rate)", probes, most, r.Duration, l.MaxProbeRate)
		}
	}
	return nil
}

// EchoProbes is how many echo probes r announces: Probes, or when it
// announces none, 10 per second of its duration plus 20.
func (r Request) EchoProbes() int64 {
	if r.Probes > 0 {
		return int64(r.Probes)
	}
	return SatAdd(SatMul(10, r.echoSeconds()), 20)
}

// StreamProbes is how many latency probes a udp test's EchoEvery asks
// the responder to reflect: one per EchoEvery datagrams of rate ×
// duration, plus one; 0 without EchoEvery. They are not counted against
// --max-probe-rate: they are bounded by the stream's own rate, their
// replies are never larger than them and go only to the session's
// registered port, and what the responder sends counts against
// --max-rate.
func (r Request) StreamProbes() int64 {
	if r.Kind != KindUDP || r.EchoEvery <= 0 || r.Size <= 0 || r.Duration <= 0 {
		return 0
	}
	n := float64(r.RateBps) * r.Duration.Seconds() / float64(8*r.Size) / float64(r.EchoEvery)
	return int64(min(n, 1<<50)) + 1
}

// echoSeconds is the duration the echo budget counts: whole seconds, at
// least 1; BytesTestEchoSpan for a byte-count test.
func (r Request) echoSeconds() int64 {
	if r.Duration <= 0 {
		return int64(BytesTestEchoSpan / time.Second)
	}
	return max(1, int64(r.Duration/time.Second))
}

// SatAdd is a + b for non-negative operands, saturating at MaxInt64:
// budgets of requests whose fields may be as large as an int64 holds.
func SatAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// SatMul is a × b for non-negative operands, saturating at MaxInt64.
func SatMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// RefusedCode is the code of a refused request, whether the responder
// refused it (an *Error frame) or the client found it would (a
// *RequestError, checked against the limits the responder announced).
func RefusedCode(err error) (ErrorCode, bool) {
	var we *Error
	if errors.As(err, &we) {
		return we.Code, true
	}
	var re *RequestError
	if errors.As(err, &re) {
		return re.Code, true
	}
	return "", false
}
