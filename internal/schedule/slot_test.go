package schedule

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"
)

// TestSlot: the margin's terms, one session of 10 s: the guard (1 s),
// the session's setup (100 ms), its 8 round trips, a TCP sender's end
// grace (6 s).
func TestSlot(t *testing.T) {
	for _, c := range []struct{ length, rtt, want time.Duration }{
		{10 * time.Second, 0, 17100 * ms},
		{10 * time.Second, -ms, 17100 * ms},
		{10 * time.Second, ms, 17108 * ms},
		{10 * time.Second, 300 * ms, 19500 * ms},
		{0, 0, 7100 * ms},
	} {
		if got := Slot(c.length, c.rtt); got != c.want {
			t.Errorf("Slot(%v, %v) = %v, want %v", c.length, c.rtt, got, c.want)
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
			switch one := Slot(length, rtt); {
			case s.kind == "tcp" && got != one:
				t.Errorf("%s %s at %v: SlotFor %v, Slot of its length %v: want the same", s.kind, s.cfg, rtt, got, one)
			case (s.kind == "udp" || s.kind == "rtt") && got > one:
				t.Errorf("%s %s at %v: SlotFor %v is over Slot of its length %v", s.kind, s.cfg, rtt, got, one)
			}
		}
	}
}

// TestSlotRTT: on every sample, a slot grows with the RTT, at least by
// each session's 8 round trips, and never falls below the test's own
// length and the guard; a 300 ms path's slot is longer than a 1 ms one's
// by at least 8 × 299 ms a session.
func TestSlotRTT(t *testing.T) {
	rng := rand.New(rand.NewPCG(*seed, 7))
	for _, s := range samples {
		cfg := json.RawMessage(s.cfg)
		length, _ := Length(s.kind, cfg)
		near, far := mustCost(t, s.kind, cfg, ms), mustCost(t, s.kind, cfg, 300*ms)
		if d := far.slot(300*ms) - near.slot(ms); d < time.Duration(near.sessions)*8*299*ms {
			t.Errorf("%s %s: a 300 ms path's slot is only %v longer than a 1 ms path's, over %d sessions", s.kind, s.cfg, d, near.sessions)
		}
		prev, prevRTT := time.Duration(0), time.Duration(0)
		for range 200 {
			rtt := prevRTT + time.Duration(rng.Int64N(int64(20*ms)))
			got, err := SlotFor(s.kind, cfg, rtt)
			if err != nil {
				t.Fatal(err)
			}
			sessions := time.Duration(mustCost(t, s.kind, cfg, rtt).sessions)
			if got < length+guard || got < prev+sessions*8*(rtt-prevRTT) {
				t.Fatalf("seed %d: %s %s: slot %v at %v after %v at %v (length %v)", *seed, s.kind, s.cfg, got, rtt, prev, prevRTT, length)
			}
			prev, prevRTT = got, rtt
		}
	}
}
