package method

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/rfc2544"
	"github.com/fullpipe/fullpipe/internal/schedule"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// The methods' plans, worked by hand. That each plan covers what its
// runner does on the fake network, every kind, is package kinds'
// TestLengthCoversRun.

const ms = time.Millisecond

// planOf is the plan of a method with its config as JSON, read as a
// schedule reads it (defaults, Validate), at rtt.
func planOf[C result.Config[C]](t *testing.T, f func(C, time.Duration) (schedule.Cost, error), cfg string, rtt time.Duration) schedule.Cost {
	t.Helper()
	c, err := schedule.Costed(true, result.ConfigOf[C], f).CostAt(json.RawMessage(cfg), rtt)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestTrainSeries: one series worked by hand. 100 Mbit/s, 10 ms, 1472-B
// payloads in 1538-B Ethernet frames, paced at 400 Mbit/s. Longest:
// max(4 × BDP 125 kB, 250 ms of the rate, 3.125 MB) / (1 − 100/400) +
// a tail of 2 × 8 × 1538 × 4 = 4,265,099 B, 2773 packets. Trains of 16,
// 32, … 2048, then 2773: 9 trains, 6853 packets, 10,539,914 B, 0.8432 s
// at 100 Mbit/s. Each takes its bytes' time twice (arriving, then in
// its drain) and 2 × 10 ms + 250 ms: 1.6864 + 9 × 0.27 = 4.1164 s.
func TestTrainSeries(t *testing.T) {
	shape := func(bb float64) trainShape {
		return trainShape{bb: bb, cir: bb, baseline: 10 * ms, size: 1472, overhead: 28 + 38}
	}
	c, longest := seriesPlan(shape(100e6), vocab.Up, 0)
	if want := 4116*ms + 400*time.Microsecond; c.Sessions != 9 || c.TCP != 0 || c.Run < want-time.Millisecond || c.Run > want+time.Millisecond {
		t.Errorf("series: %+v, want 9 sessions of %v", c, want)
	}
	// At a 300 ms RTT each train waits a round trip more for its end.
	if far, _ := seriesPlan(shape(100e6), vocab.Up, 300*ms); far.Run != c.Run+9*300*ms {
		t.Errorf("series at 300 ms: %v, want %v", far.Run, c.Run+9*300*ms)
	}
	// A faster path takes longer trains (250 ms of its rate): more of
	// them.
	if fast, _ := seriesPlan(shape(1e9), vocab.Up, 0); fast.Sessions <= c.Sessions {
		t.Errorf("series at 1 Gbit/s: %d trains, want more than at 100 Mbit/s (%d)", fast.Sessions, c.Sessions)
	}
	// The longest train is the series' last, of 1024 packets (the
	// longest at 100 Mbit/s, 10 ms): its own cost alone.
	if longest.Sessions != 1 || longest.Run <= 0 || longest.Run >= c.Run {
		t.Errorf("the longest train: %+v, want one session, part of the series' %v", longest, c.Run)
	}
	// A direction's trains: the full-size series and the longest of the
	// smaller ones, each train sent once, and 10 sends again of the
	// longest train of any of them (the full-size one: its bytes take
	// the longest).
	var second schedule.Cost
	for head := 1; head < trainSmallHead; head++ {
		series, _ := seriesPlan(shape(100e6).smaller(head), vocab.Up, 0)
		second = schedule.Longer(second, series, 0)
	}
	if got, want := trainsPlan(shape(100e6), vocab.Up, 0), c.Plus(second).Plus(longest.Times(10)); got != want {
		t.Errorf("a direction's trains: %+v, want %+v and %+v, and 10 of %+v", got, c, second, longest)
	}
}

// rfc6349Trains is one direction's trains of an RFC 6349 run at a CIR
// of 100 Mbit/s on Ethernet: at each path MTU the run may find, the
// longest.
func rfc6349Trains() schedule.Cost {
	var trains schedule.Cost
	for _, mtu := range []int{1200, 1500, 9000} {
		trains = schedule.Longer(trains, trainsPlan(fullSize(100e6, 100e6, 0, mtu, 38), vocab.Up, 0), 0)
	}
	return trains
}

// TestRFC6349Length: the steps add up as the runner takes them.
func TestRFC6349Length(t *testing.T) {
	cfg := func(extra string) string { return `{"cir_bps": 100000000` + extra + `}` }
	base := planOf(t, RFC6349Cost, cfg(""), 0)
	// Per direction: 8 bottleneck streams, 4 walk tests, the throughput
	// test, the trains, the shaping test and its retry's handshake. Once:
	// the path MTU search and 2 baseline series.
	trains := rfc6349Trains()
	if want := 3 + 2*(8+4+1+trains.Sessions+1+1); base.Sessions != want || base.TCP != 2*6 {
		t.Errorf("sessions %d (tcp %d), want %d (12)", base.Sessions, base.TCP, want)
	}
	own := 80*ms + time.Second + 2*18*3*100*ms + 2*(19*20*ms+time.Second) + // step 1, then step 2's baseline
		2*(8*2300*ms+4*5*time.Second+30*time.Second+5*time.Second) + 2*trains.Run // per direction
	if base.Run != own {
		t.Errorf("length %v, want %v", base.Run, own)
	}
	one := planOf(t, RFC6349Cost, cfg(`, "directions": ["up"]`), 0)
	if d := base.Run - one.Run; d != 8*2300*ms+4*5*time.Second+30*time.Second+5*time.Second+trains.Run {
		t.Errorf("a direction adds %v", d)
	}
	// A sweep of 8 points per direction: 10 baseline probes, one in each
	// 20 ms slot, 2 s for their replies, the 5 s step, 2 s for the loaded
	// replies.
	swept := planOf(t, RFC6349Cost, cfg(`, "sweep_points": 8`), 0)
	if d := swept.Run - base.Run; d != 2*8*(10*20*ms+9*time.Second) || swept.Sessions-base.Sessions != 2*8*2 {
		t.Errorf("a sweep of 8 points adds %v and %d sessions", d, swept.Sessions-base.Sessions)
	}
	longer := planOf(t, RFC6349Cost, cfg(`, "throughput_duration_ns": 60000000000, "step_duration_ns": 10000000000`), 0)
	if d := longer.Run - base.Run; d != 2*(30*time.Second+5*5*time.Second) {
		t.Errorf("a 60 s throughput test and 10 s steps add %v", d)
	}
}

// TestY1564Length: two services in both directions, data with an EIR (6
// steps of 10 s) and voice without (5: no CIR+EIR step), each a UDP test
// with its 1 s drain and the 1 s allowed for its probes' replies: 12
// sessions of 12 s; the performance test (15 min) runs its streams side
// by side: one session of 15 min + 2 s.
func TestY1564Length(t *testing.T) {
	svc := `{"services": [{"name": "data", "cir_bps": 20000000, "eir_bps": 10000000}, {"name": "voice", "cir_bps": 5000000, "dscp": 46}]}`
	c := planOf(t, Y1564Cost, svc, 0)
	if want := 2*(6+5)*12*time.Second + 15*time.Minute + 2*time.Second; c.Sessions != 2*(6+5)+1 || c.Run != want || c.TCP != 0 {
		t.Errorf("y1564: %+v, want %d sessions of %v", c, 2*(6+5)+1, want)
	}
	if _, err := schedule.Costed(true, result.ConfigOf[result.Y1564Config], Y1564Cost).SlotFor(json.RawMessage(`{}`), ms); err == nil {
		t.Error("y1564 without services: no error")
	}
}

// TestRFC2544Length: one frame size one way, each benchmark alone. A
// stream trial (2 s and its 300 ms drain) is planned twice (maxTries: one
// its host held back runs again); the throughput search's most trials;
// 10 loss steps; the latency trials with their allowance and the idle
// RTT test first (20 probes 100 ms apart and 1 s for replies); bursts
// of the whole BurstTime, the drain and a round trip.
func TestRFC2544Length(t *testing.T) {
	cfg := func(tests string) string {
		return `{"line_rate_bps": 100000000, "frame_sizes": [1518], "directions": ["up"], "tests": [` + tests + `]}`
	}
	c := result.RFC2544Config{LineRateBps: 100e6, FrameSizes: []int{1518}}.WithDefaults()
	trial := c.Trial + c.Drain
	search := throughputSearch(c, rfc2544.LineFPS(100e6, 1518)).MaxTrials()
	for _, k := range []struct {
		tests    string
		sessions int
		run      time.Duration
	}{
		{`"throughput"`, 2 * search, time.Duration(2*search) * trial},
		{`"loss"`, 2 * 10, 20 * trial},
		{`"throughput", "latency"`, 1 + 2*search + 2*c.LatencyTrials,
			19*100*ms + time.Second + time.Duration(2*search)*trial + time.Duration(c.LatencyTrials)*(2*trial+500*ms)},
	} {
		got := planOf(t, RFC2544Cost, cfg(k.tests), 0)
		if got.Sessions != k.sessions || got.Run != k.run || got.TCP != 0 {
			t.Errorf("%s: %+v, want %d sessions of %v", k.tests, got, k.sessions, k.run)
		}
	}
	most := longestBurst(c, rfc2544.LineFPS(100e6, 1518))
	bursts := rfc2544.NewBurstSearch(most).MaxTrials() * c.BurstTrials
	if got, want := planOf(t, RFC2544Cost, cfg(`"back-to-back"`), 50*ms), time.Duration(bursts)*(c.BurstTime+c.Drain+50*ms); got.Run != want || got.Sessions != bursts {
		t.Errorf("back-to-back at 50 ms: %+v, want %d bursts, %v", got, bursts, want)
	}
}
