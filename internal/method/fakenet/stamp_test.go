package fakenet

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
)

// TestSTAMPPhysics: the fake reflector's figures follow the path. The
// round trip without residence is the base RTT plus the test packet's
// serialisation each way ((44 + 28 + 38) B × 8 / 10 Mbit/s = 88 µs);
// one-way delays are half of it, and reported only when this host says
// its clock is synchronized; a stateful reflector places every loss by
// direction, and with 10 % loss each way about 10 % of the packets die
// on the way out and 9 % on the way back.
func TestSTAMPPhysics(t *testing.T) {
	p := &Path{BaseRTT: 20 * time.Millisecond, RateBps: 10e6, LossPct: 10}
	res, err := p.STAMP(context.Background(), result.STAMPConfig{Count: 2000, Stateful: true, ClockSynced: true})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	wantRTT := 20_000 + 2*88.0
	if math.Abs(s.RTT.MinUs-wantRTT) > 0.01 || s.RTT.MaxUs != s.RTT.MinUs || s.RTT.Side != result.STAMPSideTester {
		t.Errorf("rtt %+v; want %.0f µs flat, side tester", s.RTT, wantRTT)
	}
	if s.Forward == nil || math.Abs(s.Forward.MeanUs-wantRTT/2) > 0.01 || s.Backward == nil || s.OneWay != "reported" {
		t.Errorf("one way %q: forward %+v backward %+v; want %.0f µs each", s.OneWay, s.Forward, s.Backward, wantRTT/2)
	}
	if s.Residence.MeanUs != 20 {
		t.Errorf("residence %v µs, want 20", s.Residence.MeanUs)
	}
	// Binomial: 2000 × 0.1 = 200 ± 3σ (σ = 13.4); back: 1800 × 0.1 = 180 ± 3σ (12.7).
	if s.LostForward < 160 || s.LostForward > 240 || s.LostBackward < 142 || s.LostBackward > 218 {
		t.Errorf("lost forward %d, backward %d; want about 200 and 180", s.LostForward, s.LostBackward)
	}
	if s.LostForward+s.LostBackward+s.LostUnknown != s.Lost || s.Sent != 2000 || !s.LossByDirection {
		t.Errorf("losses do not add up: %+v", s)
	}
	res, _ = p.STAMP(context.Background(), result.STAMPConfig{Count: 100})
	if s := res.Summary; s.Forward != nil || s.LostForward+s.LostBackward != 0 || s.LostUnknown != s.Lost {
		t.Errorf("stateless, clock not stated synced: %+v; want no one-way figures, every loss unknown", s)
	}
	if _, err := p.STAMP(context.Background(), result.STAMPConfig{Count: -1}); err == nil {
		t.Error("a negative count ran")
	}
}
