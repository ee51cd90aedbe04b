package tester

import (
	"math"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
)

// TestTrainSpan: a train arrives at the slower of its pace and the
// bottleneck; one sent back to back (no pace) at the bottleneck's rate,
// and with none known it has no bound.
func TestTrainSpan(t *testing.T) {
	// 100 packets of 1472 B payload in 1538 B on the wire: 1,230,400 bits.
	paced := result.TrainConfig{Packets: 100, Size: 1472, Overhead: 66, RateBps: 400_000_000 * 1472 / 1538}
	for _, c := range []struct {
		name       string
		cfg        result.TrainConfig
		bottleneck float64
		want       time.Duration
	}{
		{"bottleneck slower than the pace", paced, 100e6, 12304 * time.Microsecond},
		{"pace slower than the bottleneck", paced, 1e9, 3076 * time.Microsecond},
		{"no bottleneck known: the pace", paced, 0, 3076 * time.Microsecond},
		{"back to back", result.TrainConfig{Packets: 100, Size: 1472, Overhead: 66}, 100e6, 12304 * time.Microsecond},
		{"back to back, no bottleneck", result.TrainConfig{Packets: 100, Size: 1472, Overhead: 66}, 0, math.MaxInt64},
	} {
		if got := TrainSpan(c.cfg, c.bottleneck); (got - c.want).Abs() > time.Microsecond {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// One train: a round trip, its span, its drain; one session.
	cfg := result.TrainConfig{Packets: 100, Size: 1472, Overhead: 66, Drain: 300 * time.Millisecond}
	if got := TrainCost(cfg, 12*time.Millisecond, 20*time.Millisecond); got.Run != 332*time.Millisecond || got.Sessions != 1 || got.TCP != 0 {
		t.Errorf("a train: %+v, want one session of 332 ms", got)
	}
}

// TestProbeCosts: the probing tests' own time from their waits: a series
// of n probes gap apart ends n − 1 gaps after its first, a window
// point's baseline n gaps (each probe at a random time in its slot); the
// path MTU search's probes wait 4 RTTs, at least 100 ms.
func TestProbeCosts(t *testing.T) {
	const ms = time.Millisecond
	if got := RTTCost(result.RTTConfig{Count: 10, Interval: 100 * ms}); got.Run != 900*ms+replyWait || got.Sessions != 1 {
		t.Errorf("rtt: %+v", got)
	}
	point := result.WindowPointConfig{TCP: result.TCPConfig{Duration: 5 * time.Second}, Baseline: 10, BaselineGap: 20 * ms}
	if got, want := WindowPointCost(point), 200*ms+2*probeReplyWait+5*time.Second; got.Run != want || got.Sessions != 2 || got.TCP != 1 {
		t.Errorf("window point: %+v, want 2 sessions (one TCP) of %v", got, want)
	}
	for _, c := range []struct{ rtt, want time.Duration }{{0, 100 * ms}, {10 * ms, 100 * ms}, {300 * ms, 1200 * ms}} {
		if got := pmtuTimeout(c.rtt); got != c.want {
			t.Errorf("pmtuTimeout(%v) = %v, want %v", c.rtt, got, c.want)
		}
	}
	if got := seriesTime(0, time.Second); got != 0 {
		t.Errorf("no probes take %v", got)
	}
}
