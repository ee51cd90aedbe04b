package kinds

import (
	"encoding/json"
	"flag"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/schedule"
)

// The lengths and slots of the kinds, asked by name as the fleet's
// checks and the controller's scheduler ask them. Each kind's cost is
// its own (package method's plans, package tester's tests; their tests
// are beside them); these check that the table books them as expected.

var seed = flag.Uint64("seed", 1, "seed of the property tests' random cases")

const ms = time.Millisecond

func TestLength(t *testing.T) {
	for _, c := range []struct {
		kind, cfg string
		want      time.Duration
		why       string
	}{
		{"tcp", ``, 10 * time.Second, "no config: the defaults"},
		{"tcp", `{}`, 10 * time.Second, "10 s"},
		{"tcp", `null`, 10 * time.Second, ""},
		{"tcp", `{"duration_ns": 30000000000, "streams": 4, "reverse": true}`, 30 * time.Second, ""},
		{"tcp", `{"bytes": 1000000}`, 10 * time.Minute, "a byte count: the engine's bound"},
		{"tcp", `{"latency": true}`, 10*time.Second + 9*20*ms + time.Second + 500*ms, "10 idle probes 20 ms apart, 1 s for their replies, 0.5 s for the loaded ones"},
		{"udp", `{}`, 10*time.Second + 500*ms, "10 s and the drain"},
		{"udp", `{"duration_ns": 5000000000, "drain_ns": 2000000000}`, 7 * time.Second, ""},
		{"rtt", `{}`, 9*100*ms + time.Second, "10 probes 100 ms apart, the last at 0.9 s, then 1 s for replies"},
		{"rtt", `{"count": 1, "interval_ns": 1000000000}`, time.Second, ""},
		{"ping", `{}`, 19*100*ms + time.Second, "20 probes 100 ms apart, then 1 s for replies; no session"},
		{"ping", `{"rate_search": true}`, 32 * (2*time.Second + time.Second), "at most 32 trials of 2 s, each with 1 s for replies"},
		{"stamp", `{}`, 99*100*ms + time.Second, "100 STAMP packets 100 ms apart, then 1 s for replies"},
		{"stamp", `{"count": 600, "interval_ns": 1000000000, "wait_ns": 2000000000}`, 601 * time.Second, ""},
		// 5 idle probes 20 ms apart and 1 s for their replies; then in
		// each direction 2 + ⌈log2(65536 − 1200)⌉ = 18 sizes, each 3
		// probes of 100 ms.
		{"mtu", `{}`, 80*ms + time.Second + 2*18*3*100*ms, "the widest search: from 1200 B to the loopback's 65536"},
		{"mtu", `{"min_bytes": 1200, "max_bytes": 1500, "tries": 1}`, 80*ms + time.Second + 2*(2+9)*100*ms, "300 B: 9 halvings"},
		{"mtu", `{"min_bytes": 1500, "max_bytes": 1500}`, 80*ms + time.Second + 2*1*3*100*ms, "one size"},
		// 11 sizes (64 B to 64 KiB), each a 5 s TCP upload and a 5 s UDP one with its 300 ms drain.
		{"sweep-msglen", `{}`, 11 * (5*time.Second + 5*time.Second + 300*ms), ""},
		{"sweep-msglen", `{"sizes_bytes": [1000, 2000], "duration_ns": 2000000000}`, 2 * (2*time.Second + 2*time.Second + 300*ms), ""},
		// 64 windows, each 10 baseline probes, one in each 20 ms slot
		// (the last up to 200 ms after the first slot's start), 2 s for
		// their replies, the 5 s test, 2 s for the loaded replies.
		{"sweep-window", `{}`, 64 * (10*20*ms + 2*time.Second + 5*time.Second + 2*time.Second), ""},
		{"sweep-window", `{"windows_bytes": [10000, 20000, 40000], "duration_ns": 3000000000, "baseline_probes": 5}`, 3 * (5*20*ms + 2*time.Second + 3*time.Second + 2*time.Second), ""},
	} {
		got, err := Length(c.kind, json.RawMessage(c.cfg))
		if err != nil || got != c.want {
			t.Errorf("Length(%s, %s) = %v, %v; want %v (%s)", c.kind, c.cfg, got, err, c.want, c.why)
		}
	}
}

func TestLengthErrors(t *testing.T) {
	for _, c := range []struct{ kind, cfg, want string }{
		{"tcp", `{"duraton_ns": 5}`, `unknown field "duraton_ns"`},
		{"tcp", `{"duration_ns": -1}`, "duration_ns: -1ns must not be negative"},
		{"tcp", `{"duration_ns": 5}{}`, "more than one JSON value"},
		{"tcp", `[1]`, "cannot unmarshal array"},
		{"tcp", `{"duration_ns": 691200000000000}`, "runs for more than 168h0m0s"},
		{"rtt", `{"count": 1000000, "interval_ns": 3600000000000}`, "runs for more than"},
		{"udp", `{"rate_bps": -1}`, "udp: "},
		{"rfc6349", `{}`, "cir_bps: required"},
		{"rfc6349", `{"cir_bps": 100000000, "link": "token-ring"}`, "--link"},
		{"trains", `{"rtt_ns": 10000000}`, "rate_bps: 0 bit/s: the path's rate is required"},
		{"sweep-window", `{"windows_bytes": [2000000000]}`, "window 2000000000 B: tcp.window_bytes: 2000000000 bytes is above"},
		{"sweep-window", `{"settle_ns": 6000000000}`, "settle"},
		{"sweep-msglen", `{"sizes_bytes": [0]}`, "sizes_bytes: 0 bytes"},
	} {
		_, err := Length(c.kind, json.RawMessage(c.cfg))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Length(%q, %s): %v, want an error with %q", c.kind, c.cfg, err, c.want)
		}
		if _, err := SlotFor(c.kind, json.RawMessage(c.cfg), ms); err == nil {
			t.Errorf("SlotFor(%q, %s): no error", c.kind, c.cfg)
		}
	}
}

// TestExclusiveFor: a shared kind is booked exclusive when its config
// sends faster than SharedRateMax (a STAMP session of 10,000 packets/s
// of 65 kB: 5 Gbit/s); at its defaults it shares; the throughput kinds
// are exclusive whatever their config.
func TestExclusiveFor(t *testing.T) {
	for _, c := range []struct {
		kind, cfg string
		want      bool
		rate      float64
	}{
		{"stamp", `{}`, false, (44 + 28) * 8 / 0.1},
		{"stamp", `{"interval_ns":1000000,"size_bytes":97}`, false, 1e6},
		{"stamp", `{"interval_ns":999000,"size_bytes":97}`, true, 1e6 / 0.999},
		{"stamp", `{"interval_ns":100000,"size_bytes":65000}`, true, 65028 * 8 / 1e-4},
		{"rtt", `{}`, false, -1},
		{"tcp", `{}`, true, 0},
	} {
		if got := ExclusiveFor(c.kind, json.RawMessage(c.cfg)); got != c.want {
			t.Errorf("%s %s: exclusive %v, want %v", c.kind, c.cfg, got, c.want)
		}
		r, err := SharedRate(c.kind, json.RawMessage(c.cfg))
		if err != nil || c.rate >= 0 && math.Abs(r-c.rate) > 1e-6*c.rate {
			t.Errorf("%s %s: rate %v (%v), want %v", c.kind, c.cfg, r, err, c.rate)
		}
	}
}

// samples are configs of every kind, the defaults and a few others.
var samples = []struct{ kind, cfg string }{
	{"tcp", `{}`}, {"tcp", `{"duration_ns": 60000000000, "latency": true}`}, {"tcp", `{"bytes": 1000}`},
	{"udp", `{}`}, {"udp", `{"duration_ns": 1000000000, "drain_ns": 1}`},
	{"rtt", `{}`}, {"rtt", `{"count": 1000, "interval_ns": 10000000}`},
	{"mtu", `{}`}, {"mtu", `{"min_bytes": 1280, "max_bytes": 9000, "tries": 5}`},
	{"trains", `{"rate_bps": 100e6, "rtt_ns": 10000000}`}, {"trains", `{"rate_bps": 1e6, "cir_bps": 2e6, "rtt_ns": 600000000, "mtu_bytes": 9000, "link": "none", "directions": ["down"]}`},
	{"rfc6349", `{"cir_bps": 100000000}`}, {"rfc6349", `{"cir_bps": 1000000, "sweep_points": 16, "directions": ["down"], "link": "vlan"}`},
	{"rfc6349", `{"cir_bps": 10000000000}`},
	{"sweep-window", `{}`}, {"sweep-msglen", `{}`},
}

// TestSlotFor: examples worked by hand, and for a test of one session
// whose length does not depend on the RTT, Slot of its Length is the
// same slot (tcp) or a longer one (udp and rtt, which have no TCP drain).
func TestSlotFor(t *testing.T) {
	for _, c := range []struct {
		kind, cfg string
		rtt, want time.Duration
	}{
		{"udp", `{}`, ms, time.Second + 10500*ms + 100*ms + 8*ms},
		// The search's 108 probes wait 4 × 300 ms each.
		{"mtu", `{}`, 300 * ms, time.Second + 1080*ms + 108*1200*ms + 100*ms + 8*300*ms},
		{"tcp", `{"duration_ns": 30000000000}`, 300 * ms, time.Second + 30*time.Second + 100*ms + 8*300*ms + 6*time.Second},
	} {
		if got, err := SlotFor(c.kind, json.RawMessage(c.cfg), c.rtt); err != nil || got != c.want {
			t.Errorf("SlotFor(%s, %s, %v) = %v, %v; want %v", c.kind, c.cfg, c.rtt, got, err, c.want)
		}
	}
	for _, s := range samples {
		length, err := Length(s.kind, json.RawMessage(s.cfg))
		if err != nil {
			t.Fatalf("%s %s: %v", s.kind, s.cfg, err)
		}
		for _, rtt := range []time.Duration{0, ms, 50 * ms, 300 * ms, 2 * time.Second} {
			got, _ := SlotFor(s.kind, json.RawMessage(s.cfg), rtt)
			switch one := schedule.Slot(length, rtt); {
			case s.kind == "tcp" && got != one:
				t.Errorf("%s %s at %v: SlotFor %v, Slot of its length %v: want the same", s.kind, s.cfg, rtt, got, one)
			case (s.kind == "udp" || s.kind == "rtt") && got > one:
				t.Errorf("%s %s at %v: SlotFor %v is over Slot of its length %v", s.kind, s.cfg, rtt, got, one)
			}
		}
	}
}

// costAt is a kind's cost with cfg at rtt.
func costAt(t *testing.T, kind string, cfg json.RawMessage, rtt time.Duration) schedule.Cost {
	t.Helper()
	k, err := costNamed(kind)
	if err != nil {
		t.Fatal(err)
	}
	c, err := k.cost.CostAt(cfg, rtt)
	if err != nil {
		t.Fatalf("%s %s: %v", kind, cfg, err)
	}
	return c
}

// TestSlotRTT: on every sample, a slot grows with the RTT, at least by
// each session's 8 round trips, and never falls below the test's own
// length and the guard; a 300 ms path's slot is longer than a 1 ms one's
// by at least 8 × 299 ms a session.
func TestSlotRTT(t *testing.T) {
	rng := rand.New(rand.NewPCG(*seed, 7))
	guard := schedule.Cost{}.Slot(0) // a slot of nothing: the guard alone
	for _, s := range samples {
		cfg := json.RawMessage(s.cfg)
		length, _ := Length(s.kind, cfg)
		near, far := costAt(t, s.kind, cfg, ms), costAt(t, s.kind, cfg, 300*ms)
		if d := far.Slot(300*ms) - near.Slot(ms); d < time.Duration(near.Sessions)*8*299*ms {
			t.Errorf("%s %s: a 300 ms path's slot is only %v longer than a 1 ms path's, over %d sessions", s.kind, s.cfg, d, near.Sessions)
		}
		prev, prevRTT := time.Duration(0), time.Duration(0)
		for range 200 {
			rtt := prevRTT + time.Duration(rng.Int64N(int64(20*ms)))
			got, err := SlotFor(s.kind, cfg, rtt)
			if err != nil {
				t.Fatal(err)
			}
			sessions := time.Duration(costAt(t, s.kind, cfg, rtt).Sessions)
			if got < length+guard || got < prev+sessions*8*(rtt-prevRTT) {
				t.Fatalf("seed %d: %s %s: slot %v at %v after %v at %v (length %v)", *seed, s.kind, s.cfg, got, rtt, prev, prevRTT, length)
			}
			prev, prevRTT = got, rtt
		}
	}
}
