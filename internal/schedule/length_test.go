package schedule

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
)

const ms = time.Millisecond

// toyTCP is a Costing whose cost is a tcp config's duration in one TCP
// session: the decoding, the defaults, the validation and the bound on
// a length are Costed's; the kinds' own costs are tested beside them
// (packages tester and method) and through the table (package kinds).
var toyTCP = Costed(true, result.ConfigOf[result.TCPConfig], func(c result.TCPConfig, _ time.Duration) (Cost, error) {
	return Cost{Run: c.Duration, Sessions: 1, TCP: 1}, nil
})

// TestCosted: a config is read as the engine reads it (no config, {} or
// null: the defaults), then costed.
func TestCosted(t *testing.T) {
	for _, c := range []struct {
		cfg  string
		want time.Duration
	}{
		{``, 10 * time.Second}, {`{}`, 10 * time.Second}, {`null`, 10 * time.Second},
		{`{"duration_ns": 30000000000, "streams": 4, "reverse": true}`, 30 * time.Second},
	} {
		got, err := toyTCP.Length(json.RawMessage(c.cfg))
		if err != nil || got != c.want {
			t.Errorf("Length(%s) = %v, %v; want %v", c.cfg, got, err, c.want)
		}
	}
	if !toyTCP.Exclusive() || !toyTCP.ExclusiveFor(nil) {
		t.Error("an exclusive kind is not exclusive")
	}
	if _, err := (Costing{}).Length(nil); err == nil {
		t.Error("the zero Costing has a length")
	}
}

func TestLengthErrors(t *testing.T) {
	for _, c := range []struct{ cfg, want string }{
		{`{"duraton_ns": 5}`, `unknown field "duraton_ns"`},
		{`{"duration_ns": -1}`, "duration_ns: -1ns must not be negative"},
		{`{"duration_ns": 5}{}`, "more than one JSON value"},
		{`[1]`, "cannot unmarshal array"},
		{`{"duration_ns": 691200000000000}`, "runs for more than 168h0m0s"},
	} {
		_, err := toyTCP.Length(json.RawMessage(c.cfg))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Length(%s): %v, want an error with %q", c.cfg, err, c.want)
		}
		if _, err := toyTCP.SlotFor(json.RawMessage(c.cfg), ms); err == nil {
			t.Errorf("SlotFor(%s): no error", c.cfg)
		}
	}
}

// TestCostArithmetic: sums and multiples add every term and saturate
// rather than wrap; Longer weighs sessions' margins too.
func TestCostArithmetic(t *testing.T) {
	a := Cost{Run: time.Second, Sessions: 2, TCP: 1, RateBps: 5}
	if got, want := a.Plus(a), (Cost{Run: 2 * time.Second, Sessions: 4, TCP: 2}); got != want {
		t.Errorf("a + a = %+v, want %+v (a sum has no rate of its own)", got, want)
	}
	if got, want := a.Times(3), (Cost{Run: 3 * time.Second, Sessions: 6, TCP: 3}); got != want {
		t.Errorf("3 × a = %+v, want %+v", got, want)
	}
	if got := a.Times(0); got != (Cost{}) {
		t.Errorf("0 × a = %+v, want nothing", got)
	}
	huge := Cost{Run: math.MaxInt64 / 2, Sessions: 1}
	if got := huge.Times(3).Run; got != math.MaxInt64 {
		t.Errorf("3 × %v = %v: want it saturated", huge.Run, got)
	}
	if got := huge.Plus(huge).Plus(huge).Run; got != math.MaxInt64 {
		t.Errorf("%v + %v + %v = %v: want it saturated", huge.Run, huge.Run, huge.Run, got)
	}
	// Ten sessions of 1 s in all against one of 2 s: on a near path the
	// one (2.1 s with its setup, 2 s for the ten's), on a 300 ms path
	// the ten, whose 80 round trips take 24 s to the one's 2.4 s.
	short, long := Cost{Run: time.Second, Sessions: 10}, Cost{Run: 2 * time.Second, Sessions: 1}
	if got := Longer(short, long, 0); got != long {
		t.Errorf("Longer at 0: %+v, want the one session", got)
	}
	if got := Longer(long, short, 300*ms); got != short {
		t.Errorf("Longer at 300 ms: %+v, want the ten sessions", got)
	}
}

// TestBitsTime: bits at a rate, and no rate takes forever.
func TestBitsTime(t *testing.T) {
	for _, c := range []struct {
		bits, bps float64
		want      time.Duration
	}{
		{1e6, 1e6, time.Second}, {8 * 1500, 100e6, 120 * time.Microsecond}, {1, 0, math.MaxInt64}, {1e30, 1, math.MaxInt64},
	} {
		if got := BitsTime(c.bits, c.bps); got != c.want {
			t.Errorf("BitsTime(%g, %g) = %v, want %v", c.bits, c.bps, got, c.want)
		}
	}
}

// TestSharedRate: a shared kind is booked exclusive when its config
// sends faster than SharedRateMax.
func TestSharedRate(t *testing.T) {
	probes := Costed(false, result.ConfigOf[result.RTTConfig], func(c result.RTTConfig, _ time.Duration) (Cost, error) {
		return Cost{Run: time.Second, Sessions: 1, RateBps: ProbeRate(c.Size, c.Interval)}, nil
	})
	for _, c := range []struct {
		cfg  string
		want bool
		rate float64
	}{
		{`{}`, false, (64 + 28) * 8 / 0.1},
		{`{"interval_ns": 10000000, "size_bytes": 97}`, false, 1e5},
		{`{"interval_ns": 10000000, "size_bytes": 10000}`, true, 10028 * 8 / 0.01},
	} {
		if got := probes.ExclusiveFor(json.RawMessage(c.cfg)); got != c.want {
			t.Errorf("%s: exclusive %v, want %v", c.cfg, got, c.want)
		}
		if r, err := probes.SharedRate(json.RawMessage(c.cfg)); err != nil || math.Abs(r-c.rate) > 1e-6*c.rate {
			t.Errorf("%s: rate %v (%v), want %v", c.cfg, r, err, c.rate)
		}
	}
	if got := ProbeRate(64, 0); !math.IsInf(got, 1) {
		t.Errorf("ProbeRate with no interval: %v, want +Inf", got)
	}
}
