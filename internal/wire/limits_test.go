package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/jsondoc"
)

// responderLimits are the default limits of a responder with reno and bbr
// loaded and --max-rate 10M.
var responderLimits = Limits{MaxStreams: 32, MaxDuration: 10 * time.Minute, MaxRateBps: 10e6, MaxWindow: 4 << 20,
	MaxWriteSize: 16 << 20, MaxProbeRate: 1000, MaxTrainBytes: 32 << 20, AllowCC: []string{"reno", "bbr"}, AllowDSCP: []int{0, 10, 46}}

func tcpReq(f func(*Request)) Request {
	r := Request{Kind: KindTCP, Streams: 1, Duration: time.Second, Interval: time.Second}
	if f != nil {
		f(&r)
	}
	return r
}

func udpReq(f func(*Request)) Request {
	r := Request{Kind: KindUDP, RateBps: 1e6, Size: 1000, Duration: time.Second, Interval: time.Second}
	if f != nil {
		f(&r)
	}
	return r
}

func trainReq(f func(*Request)) Request {
	r := Request{Kind: KindTrain, TrainPackets: 16, Size: 1472, Duration: time.Second, Interval: time.Second}
	if f != nil {
		f(&r)
	}
	return r
}

// TestValidate: every rule at its edge, one side passing and the other
// refused with its code and a message naming the rule (and, for a limit,
// the responder flag that raises it).
// TestStreamProbes: a udp test of rate × duration / (8 × size)
// datagrams with one in EchoEvery a probe announces that many, plus one;
// none without EchoEvery or for another kind.
func TestStreamProbes(t *testing.T) {
	r := Request{Kind: KindUDP, RateBps: 18 * 8 * 1000, Size: 18, Duration: 2 * time.Second, EchoEvery: 10}
	if got := r.StreamProbes(); got != 201 {
		t.Errorf("2000 datagrams, 1 in 10: %d probes, want 201", got)
	}
	r.EchoEvery = 0
	if got := r.StreamProbes(); got != 0 {
		t.Errorf("no echo_every: %d probes", got)
	}
	r.Kind, r.EchoEvery = KindTCP, 10
	if got := r.StreamProbes(); got != 0 {
		t.Errorf("tcp: %d probes", got)
	}
}

func TestValidate(t *testing.T) {
	l := responderLimits
	for _, tc := range []struct {
		name string
		req  Request
		code ErrorCode // "" = valid
		msg  string
	}{
		{"tcp ok", tcpReq(nil), "", ""},
		{"streams 0", tcpReq(func(r *Request) { r.Streams = 0 }), CodeBadRequest, "streams must be 1 to 32 (responder limit --max-streams), got 0"},
		{"streams at max", tcpReq(func(r *Request) { r.Streams = 32 }), "", ""},
		{"streams past max", tcpReq(func(r *Request) { r.Streams = 33 }), CodeBadRequest, "streams must be 1 to 32 (responder limit --max-streams), got 33"},
		{"tcp no duration", tcpReq(func(r *Request) { r.Duration = 0 }), CodeBadRequest, "a TCP test needs a duration or a byte count"},
		{"tcp bytes only", tcpReq(func(r *Request) { r.Duration, r.Bytes = 0, 1 }), "", ""},
		{"negative window", tcpReq(func(r *Request) { r.Window = -1 }), CodeBadRequest, "window, bytes, mss and pacing must not be negative"},
		{"negative mss", tcpReq(func(r *Request) { r.MSS = -1 }), CodeBadRequest, "must not be negative"},
		{"negative pacing", tcpReq(func(r *Request) { r.PacingBps = -1 }), CodeBadRequest, "must not be negative"},
		{"negative write size", tcpReq(func(r *Request) { r.WriteSize = -1 }), CodeBadRequest, "write_size must not be negative, got -1"},
		{"udp ok", udpReq(nil), "", ""},
		{"udp rate 0", udpReq(func(r *Request) { r.RateBps = 0 }), CodeBadRequest, "UDP needs a rate > 0 and a size of 18 to 65507 bytes"},
		{"udp size 17", udpReq(func(r *Request) { r.Size = 17 }), CodeBadRequest, "size of 18 to 65507"},
		{"udp size 40", udpReq(func(r *Request) { r.Size = 40 }), "", ""},
		{"udp size 18", udpReq(func(r *Request) { r.Size = 18 }), "", ""},
		{"udp echo every 1", udpReq(func(r *Request) { r.EchoEvery = 1 }), "", ""},
		{"udp echo every -1", udpReq(func(r *Request) { r.EchoEvery = -1 }), CodeBadRequest, "echo_every must not be negative"},
		{"tcp echo every", tcpReq(func(r *Request) { r.EchoEvery = 10 }), CodeBadRequest, "echo_every is for udp tests only"},
		{"udp size 65507", udpReq(func(r *Request) { r.Size = 65507 }), "", ""},
		{"udp size 65508", udpReq(func(r *Request) { r.Size = 65508 }), CodeBadRequest, "size of 18 to 65507"},
		{"udp no duration", udpReq(func(r *Request) { r.Duration = 0 }), CodeBadRequest, "a UDP test needs a duration"},
		{"rtt no duration", Request{Kind: KindRTT, Interval: time.Second}, CodeBadRequest, "an RTT test needs a duration"},
		{"unknown kind", Request{Kind: "x", Duration: time.Second, Interval: time.Second}, CodeBadRequest, `unknown test kind "x"`},
		{"train ok", trainReq(nil), "", ""},
		{"train 1 packet", trainReq(func(r *Request) { r.TrainPackets = 1 }), CodeBadRequest, "a train has 2 to 262144 packets, got 1"},
		{"train 2 packets", trainReq(func(r *Request) { r.TrainPackets = 2 }), "", ""},
		{"train past max packets", trainReq(func(r *Request) { r.TrainPackets = MaxTrainPackets + 1 }), CodeBadRequest, "2 to 262144 packets"},
		{"train size 17", trainReq(func(r *Request) { r.Size = 17 }), CodeBadRequest, "train packets carry 18 to 65507 bytes of UDP payload, got 17"},
		{"train overhead 256", trainReq(func(r *Request) { r.OverheadBytes = 256 }), "", ""},
		{"train overhead 257", trainReq(func(r *Request) { r.OverheadBytes = 257 }), CodeBadRequest, "overhead_bytes must be 0 to 256, got 257"},
		{"train overhead -1", trainReq(func(r *Request) { r.OverheadBytes = -1 }), CodeBadRequest, "overhead_bytes must be 0 to 256"},
		{"train no duration", trainReq(func(r *Request) { r.Duration = 0 }), CodeBadRequest, "a train needs a duration"},
		{"duration at max", tcpReq(func(r *Request) { r.Duration = 10 * time.Minute }), "", ""},
		{"duration past max", tcpReq(func(r *Request) { r.Duration = 10*time.Minute + 1 }), CodeBadRequest, "exceeds the responder's limit of 10m0s (--max-duration)"},
		{"interval 10ms", tcpReq(func(r *Request) { r.Interval = 10 * time.Millisecond }), "", ""},
		{"interval below 10ms", tcpReq(func(r *Request) { r.Interval = 10*time.Millisecond - 1 }), CodeBadRequest, "is below the minimum of 10ms"},
		{"dscp -1", tcpReq(func(r *Request) { r.DSCP = -1 }), CodeBadRequest, "dscp must be 0 to 63, got -1"},
		{"dscp 64", tcpReq(func(r *Request) { r.DSCP = 64 }), CodeBadRequest, "dscp must be 0 to 63, got 64"},
		{"negative probes", tcpReq(func(r *Request) { r.Probes = -1 }), CodeBadRequest, "probes, probe_size, udp_ports and rate_bps must not be negative"},
		{"negative udp ports", tcpReq(func(r *Request) { r.UDPPorts = -1 }), CodeBadRequest, "must not be negative"},
		{"cc name 15", tcpReq(func(r *Request) { r.CC = "reno_-012345678" }), CodeLimit, "--allow-cc"},
		{"cc name 16", tcpReq(func(r *Request) { r.CC = "reno_-0123456789" }), CodeBadRequest, "is not a congestion-control name"},
		{"cc name upper", tcpReq(func(r *Request) { r.CC = "BBR" }), CodeBadRequest, "is not a congestion-control name"},
		{"cc name path", tcpReq(func(r *Request) { r.CC = "../x" }), CodeBadRequest, "is not a congestion-control name"},
		{"cc allowed", tcpReq(func(r *Request) { r.CC = "bbr" }), "", ""},
		{"cc not allowed", tcpReq(func(r *Request) { r.CC = "cubic" }), CodeLimit, `congestion control "cubic" is not allowed on this responder; it allows reno, bbr (--allow-cc)`},
		{"dscp allowed", tcpReq(func(r *Request) { r.DSCP = 46 }), "", ""},
		{"dscp not allowed", tcpReq(func(r *Request) { r.DSCP = 48 }), CodeLimit, "dscp 48 is not allowed on this responder (--allow-dscp;"},
		{"upload rate past max-rate", udpReq(func(r *Request) { r.RateBps = 50e6 }), "", ""},
		{"download at max-rate", udpReq(func(r *Request) { r.RateBps, r.Reverse = 10e6, true }), "", ""},
		{"download past max-rate", udpReq(func(r *Request) { r.RateBps, r.Reverse = 10e6+1, true }), CodeLimit, "rate 10000001 bit/s exceeds the responder's limit of 10000000 bit/s (--max-rate)"},
		{"upload at 1 Tbit/s", udpReq(func(r *Request) { r.RateBps = MaxAnyRateBps }), "", ""},
		{"upload past 1 Tbit/s", udpReq(func(r *Request) { r.RateBps = MaxAnyRateBps + 1 }), CodeLimit, "(no interface sends faster)"},
		{"pacing sum overflow", tcpReq(func(r *Request) { r.Streams, r.PacingBps, r.Reverse = 2, 1<<62, true }), CodeLimit, "rate 9223372036854775807 bit/s"},
		{"pacing × streams past max-rate", tcpReq(func(r *Request) { r.Streams, r.PacingBps, r.Bidir = 2, 5e6+1, true }), CodeLimit, "(--max-rate)"},
		{"window at max", tcpReq(func(r *Request) { r.Window, r.Reverse = 4<<20, true }), "", ""},
		{"window past max", tcpReq(func(r *Request) { r.Window, r.Reverse = 4<<20+1, true }), CodeLimit, "window 4194305 bytes exceeds the responder's limit of 4194304 bytes (--max-window;"},
		{"window past max upload", tcpReq(func(r *Request) { r.Window = 1 << 30 }), "", ""},
		{"write size at max", tcpReq(func(r *Request) { r.WriteSize = 16 << 20 }), "", ""},
		{"write size past max", tcpReq(func(r *Request) { r.WriteSize = 16<<20 + 1 }), CodeLimit, "write_size must be 0 (1048576 bytes) to 16777216 bytes, got 16777217 (responder limit --max-write-size)"},
		{"write buffers at max", tcpReq(func(r *Request) { r.WriteSize, r.Streams, r.Reverse = 2<<20, 32, true }), "", ""},
		{"write buffers past max", tcpReq(func(r *Request) { r.WriteSize, r.Streams, r.Reverse = 2<<20+1, 32, true }), CodeLimit, "write buffers per test"},
		{"train bytes at max", trainReq(func(r *Request) { r.TrainPackets, r.Size = 1<<15, 1024 }), "", ""},
		{"train bytes past max", trainReq(func(r *Request) { r.TrainPackets, r.Size = 1<<15, 1025 }), CodeLimit, "exceeds the responder's limit of 33554432 bytes per train (--max-train-bytes)"},
		{"udp ports 4", tcpReq(func(r *Request) { r.UDPPorts = 4 }), "", ""},
		{"udp ports 5", tcpReq(func(r *Request) { r.UDPPorts = 5 }), CodeLimit, "udp_ports 5 exceeds the responder's limit of 4"},
		{"probes at max", tcpReq(func(r *Request) { r.Probes = 1020 }), "", ""},
		{"probes past max", tcpReq(func(r *Request) { r.Probes = 1021 }), CodeLimit, "1021 probes exceed the responder's limit of 1020 for a 1s test (1000 per second, --max-probe-rate)"},
		{"probes of a bytes test", tcpReq(func(r *Request) { r.Duration, r.Bytes, r.Probes = 0, 1, 600020 }), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkRequestError(t, tc.req.Validate(l), tc.code, tc.msg)
		})
	}
}

func checkRequestError(t *testing.T, err error, code ErrorCode, msg string) {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return
	}
	var re *RequestError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want a %s refusal %q", err, code, msg)
	}
	if re.Code != code || !strings.Contains(re.Message, msg) {
		t.Fatalf("refused (%s) %q, want (%s) %q", re.Code, re.Message, code, msg)
	}
	if w := re.AsWire(); w.Code != code || w.Message != re.Message {
		t.Fatalf("as an error frame: %+v", w)
	}
}

// TestValidateFormOnly: against FormOnly (a responder that announced no
// limits) the form and the protocol's fixed bounds still hold, and no
// responder limit is applied; an empty allowlist is not an unknown one.
func TestValidateFormOnly(t *testing.T) {
	l := FormOnly()
	if !l.IsFormOnly() || responderLimits.IsFormOnly() {
		t.Fatal("IsFormOnly does not tell FormOnly from a responder's limits")
	}
	if (Limits{AllowCC: []string{}}).IsFormOnly() {
		t.Error("an empty allowlist counts as no limit")
	}
	for _, tc := range []struct {
		name string
		req  Request
		code ErrorCode
		msg  string
	}{
		{"streams 0", tcpReq(func(r *Request) { r.Streams = 0 }), CodeBadRequest, "streams must be at least 1, got 0"},
		{"streams 1000", tcpReq(func(r *Request) { r.Streams = 1000 }), "", ""},
		{"duration 1h", tcpReq(func(r *Request) { r.Duration = time.Hour }), "", ""},
		{"any cc", tcpReq(func(r *Request) { r.CC = "cubic" }), "", ""},
		{"bad cc name", tcpReq(func(r *Request) { r.CC = "Cubic" }), CodeBadRequest, "not a congestion-control name"},
		{"any dscp", tcpReq(func(r *Request) { r.DSCP = 56 }), "", ""},
		{"dscp 64", tcpReq(func(r *Request) { r.DSCP = 64 }), CodeBadRequest, "dscp must be 0 to 63"},
		{"window 1 GiB down", tcpReq(func(r *Request) { r.Window, r.Reverse = 1<<30, true }), "", ""},
		{"rate past 1 Tbit/s", udpReq(func(r *Request) { r.RateBps, r.Reverse = MaxAnyRateBps+1, true }), CodeLimit, "no interface sends faster"},
		{"write buffers", tcpReq(func(r *Request) { r.WriteSize, r.Streams, r.Reverse = 64<<20, 2, true }), CodeLimit, "write buffers per test"},
		{"udp ports 5", tcpReq(func(r *Request) { r.UDPPorts = 5 }), CodeLimit, "udp_ports 5"},
		{"probes 1e9", tcpReq(func(r *Request) { r.Probes = 1e9 }), "", ""},
		{"train of 256 MiB", trainReq(func(r *Request) { r.TrainPackets, r.Size = 1<<18, 1024 }), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkRequestError(t, tc.req.Validate(l), tc.code, tc.msg)
		})
	}
	none := Limits{AllowCC: []string{}, AllowDSCP: []int{}}
	checkRequestError(t, tcpReq(func(r *Request) { r.CC = "reno" }).Validate(none), CodeLimit, "--allow-cc")
	checkRequestError(t, tcpReq(func(r *Request) { r.DSCP = 10 }).Validate(none), CodeLimit, "--allow-dscp")
	checkRequestError(t, tcpReq(nil).Validate(none), "", "")
}

// TestHelloLimits: limits travel in hello and come back equal, empty
// allowlists as empty (none allowed), and a hello without them (an older
// responder, or one with a secret) is FormOnly.
func TestHelloLimits(t *testing.T) {
	for _, l := range []Limits{responderLimits, {MaxStreams: 8, AllowCC: []string{}, AllowDSCP: []int{}}} {
		b, err := json.Marshal(Hello{Version: Version, Limits: &l})
		if err != nil {
			t.Fatal(err)
		}
		var h Hello
		if err := json.Unmarshal(b, &h); err != nil {
			t.Fatal(err)
		}
		if got := h.Announced(); !reflect.DeepEqual(got, l) {
			t.Errorf("limits %+v came back as %+v (%s)", l, got, b)
		}
	}
	var old Hello
	if err := json.Unmarshal([]byte(`{"version":3}`), &old); err != nil {
		t.Fatal(err)
	}
	if !old.Announced().IsFormOnly() {
		t.Errorf("a hello without limits announces %+v", old.Announced())
	}
}

// TestEchoProbes: a request that announces no probes gets 10 per second
// of its duration plus 20, a byte-count test counts 10 minutes, and huge
// durations do not wrap.
func TestEchoProbes(t *testing.T) {
	for _, tc := range []struct {
		req  Request
		want int64
	}{
		{Request{Duration: 500 * time.Millisecond}, 30},
		{Request{Duration: 10 * time.Second}, 120},
		{Request{}, 6020},
		{Request{Duration: 10 * time.Second, Probes: 7}, 7},
		{Request{Duration: math.MaxInt64}, 92233720380},
	} {
		if got := tc.req.EchoProbes(); got != tc.want {
			t.Errorf("%+v: %d probes, want %d", tc.req, got, tc.want)
		}
	}
}

// TestLimitsDocumented: every key of hello's limits is in docs/protocol.md.
func TestLimitsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range jsondoc.Missing(string(doc), false, Hello{}) {
		t.Errorf("%s is not documented in docs/protocol.md", m)
	}
}

// TestRefusedCode: a refusal's code reads the same whichever end found it.
func TestRefusedCode(t *testing.T) {
	for _, c := range []struct {
		err  error
		code ErrorCode
		ok   bool
	}{
		{fmt.Errorf("x: %w", &Error{Code: CodeLimit}), CodeLimit, true},
		{fmt.Errorf("x: %w", &RequestError{Code: CodeBadRequest}), CodeBadRequest, true},
		{errors.New("plain"), "", false},
		{nil, "", false},
	} {
		if code, ok := RefusedCode(c.err); code != c.code || ok != c.ok {
			t.Errorf("%v: %q %v, want %q %v", c.err, code, ok, c.code, c.ok)
		}
	}
}

// TestSaturating: the rate sums of the overflow (2 × 2^62) and
// beyond stay at MaxInt64 instead of wrapping negative.
func TestSaturating(t *testing.T) {
	for _, tc := range []struct {
		got, want int64
	}{
		{SatMul(1<<62, 2), math.MaxInt64},
		{SatMul(math.MaxInt64, math.MaxInt64), math.MaxInt64},
		{SatMul(3, 4), 12},
		{SatMul(0, math.MaxInt64), 0},
		{SatAdd(math.MaxInt64, 1), math.MaxInt64},
		{SatAdd(1<<62, 1<<62), math.MaxInt64},
		{SatAdd(2, 3), 5},
	} {
		if tc.got != tc.want {
			t.Errorf("got %d, want %d", tc.got, tc.want)
		}
	}
}
