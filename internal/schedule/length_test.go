package schedule

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
)

// TestKinds: the kinds are the documents', and the throughput tests are
// exclusive.
func TestKinds(t *testing.T) {
	var want, got []string
	for _, k := range result.Kinds() {
		want = append(want, k.File)
	}
	for name := range byName {
		got = append(got, name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("kinds %q, want result.Kinds' files %q", got, want)
	}
	for name, want := range map[string]bool{"tcp": true, "udp": true, "trains": true, "rfc6349": true, "sweep-window": true, "sweep-msglen": true,
		"rtt": false, "mtu": false, "stamp": false, "ping": true, "rfc2544": true, "y1564": true} {
		if got := Exclusive(name); got != want {
			t.Errorf("Exclusive(%q) = %v, want %v", name, got, want)
		}
	}
}

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
		// 64 windows, each 10 baseline probes 20 ms apart, 2 s for their
		// replies, the 5 s test, 2 s for the loaded replies.
		{"sweep-window", `{}`, 64 * (9*20*ms + 2*time.Second + 5*time.Second + 2*time.Second), ""},
		{"sweep-window", `{"windows_bytes": [10000, 20000, 40000], "duration_ns": 3000000000, "baseline_probes": 5}`, 3 * (4*20*ms + 2*time.Second + 3*time.Second + 2*time.Second), ""},
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

// TestTrainSeries: one series worked by hand. 100 Mbit/s, 10 ms, 1472-B
// payloads in 1538-B Ethernet frames, paced at 400 Mbit/s. Longest:
// max(4 × BDP 125 kB, 250 ms of the rate, 3.125 MB) / (1 − 100/400) +
// a tail of 2 × 8 × 1538 × 4 = 4,265,099 B, 2773 packets. Trains of 16,
// 32, … 2048, then 2773: 9 trains, 6853 packets, 10,539,914 B, 0.8432 s
// at 100 Mbit/s. Each takes its bytes' time twice (arriving, then in
// its drain) and 2 × 10 ms + 250 ms: 1.6864 + 9 × 0.27 = 4.1164 s.
func TestTrainSeries(t *testing.T) {
	c := trainSeries(100e6, 100e6, 10*ms, 1472, 28+38, 0)
	if want := 4116*ms + 400*time.Microsecond; c.sessions != 9 || c.tcp != 0 || c.run < want-time.Millisecond || c.run > want+time.Millisecond {
		t.Errorf("series: %+v, want 9 sessions of %v", c, want)
	}
	// At a 300 ms RTT each train waits a round trip more for its end.
	if far := trainSeries(100e6, 100e6, 10*ms, 1472, 28+38, 300*ms); far.run != c.run+9*300*ms {
		t.Errorf("series at 300 ms: %v, want %v", far.run, c.run+9*300*ms)
	}
	// A faster path takes longer trains (250 ms of its rate): more of
	// them.
	if fast := trainSeries(1e9, 1e9, 10*ms, 1472, 28+38, 0); fast.sessions <= c.sessions {
		t.Errorf("series at 1 Gbit/s: %d trains, want more than at 100 Mbit/s (%d)", fast.sessions, c.sessions)
	}
}

// TestRFC6349Length: the steps add up as the runner takes them.
func TestRFC6349Length(t *testing.T) {
	cfg := func(extra string) json.RawMessage { return json.RawMessage(`{"cir_bps": 100000000` + extra + `}`) }
	base := mustCost(t, "rfc6349", cfg(""), 0)
	// Per direction: 8 bottleneck streams, 4 walk tests, the throughput
	// test, the trains, the shaping test and its retry's handshake. Once:
	// the path MTU search and 2 baseline series.
	trains := cost{}
	for _, mtu := range rfcMTUs {
		trains = longer(trains, trainsDirection(100e6, 100e6, 0, mtu, 38, 0), 0)
	}
	if want := 3 + 2*(8+4+1+trains.sessions+1+1); base.sessions != want || base.tcp != 2*6 {
		t.Errorf("sessions %d (tcp %d), want %d (12)", base.sessions, base.tcp, want)
	}
	own := 80*ms + time.Second + 2*18*3*100*ms + 2*(19*20*ms+time.Second) + // step 1, then step 2's baseline
		2*(8*2300*ms+4*5*time.Second+30*time.Second+5*time.Second) + 2*trains.run // per direction
	if base.run != own {
		t.Errorf("length %v, want %v", base.run, own)
	}
	one := mustCost(t, "rfc6349", cfg(`, "directions": ["up"]`), 0)
	if d := base.run - one.run; d != 8*2300*ms+4*5*time.Second+30*time.Second+5*time.Second+trains.run {
		t.Errorf("a direction adds %v", d)
	}
	// A sweep of 8 points per direction: 10 baseline probes 20 ms apart,
	// 2 s for their replies, the 5 s step, 2 s for the loaded replies.
	swept := mustCost(t, "rfc6349", cfg(`, "sweep_points": 8`), 0)
	if d := swept.run - base.run; d != 2*8*(9*20*ms+9*time.Second) || swept.sessions-base.sessions != 2*8*2 {
		t.Errorf("a sweep of 8 points adds %v and %d sessions", d, swept.sessions-base.sessions)
	}
	longer := mustCost(t, "rfc6349", cfg(`, "throughput_duration_ns": 60000000000, "step_duration_ns": 10000000000`), 0)
	if d := longer.run - base.run; d != 2*(30*time.Second+5*5*time.Second) {
		t.Errorf("a 60 s throughput test and 10 s steps add %v", d)
	}
}

func mustCost(t *testing.T, kind string, cfg json.RawMessage, rtt time.Duration) cost {
	t.Helper()
	c, err := costFor(kind, cfg, rtt)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestY1564Length: two services in both directions, data with an EIR (6
// steps of 10 s) and voice without (5: no CIR+EIR step), each a UDP test with its 1 s drain and the 1 s
// wait for its probes' replies: 12 sessions of 12 s; the performance test
// (15 min) runs its streams side by side: one session of 15 min + 2 s.
func TestY1564Length(t *testing.T) {
	svc := `{"services": [{"name": "data", "cir_bps": 20000000, "eir_bps": 10000000}, {"name": "voice", "cir_bps": 5000000, "dscp": 46}]}`
	c := mustCost(t, "y1564", json.RawMessage(svc), 0)
	if want := 2*(6+5)*12*time.Second + 15*time.Minute + 2*time.Second; c.sessions != 2*(6+5)+1 || c.run != want || c.tcp != 0 {
		t.Errorf("y1564: %+v, want %d sessions of %v", c, 2*(6+5)+1, want)
	}
	if _, err := SlotFor("y1564", json.RawMessage(`{}`), ms); err == nil {
		t.Error("y1564 without services: no error")
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
