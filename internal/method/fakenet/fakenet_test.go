package fakenet

import (
	"context"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// TestTCPModel: the fake's TCP against the physics it scripts: a window
// below the BDP gets window × 8 / RTT; the BDP window the bottleneck's
// goodput (100 Mbit/s × 1448 / 1538); full-size segments into a PMTUD
// black hole move nothing, retransmitting what they sent.
func TestTCPModel(t *testing.T) {
	p := &Path{BaseRTT: 20 * time.Millisecond, RateBps: 100e6, QueueBytes: 375_000}
	up := func(p *Path, cfg result.TCPConfig) *result.TCPDirection {
		res, err := p.TCP(context.Background(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res.Summary.Directions[vocab.Up]
	}
	if d := up(p, result.TCPConfig{Window: 62_500}); d.ThroughputBps != 62_500*8/0.02 {
		t.Errorf("62,500 B window: %.0f bit/s, want 25e6", d.ThroughputBps)
	}
	if d, want := up(p, result.TCPConfig{Window: 250_000}), 100e6*1448/1538; d.ThroughputBps < want*0.999 || d.ThroughputBps > want*1.001 || d.EfficiencyPct != 100 {
		t.Errorf("BDP window: %.0f bit/s at %.2f %%, want %.0f at 100 %%", d.ThroughputBps, d.EfficiencyPct, want)
	}
	hole := &Path{BaseRTT: 20 * time.Millisecond, RateBps: 100e6, MTU: 1400}
	if d := up(hole, result.TCPConfig{}); d.ThroughputBps != 0 || d.BytesSent == 0 || d.EfficiencyPct != 0 {
		t.Errorf("black hole: %.0f bit/s, %d B sent, efficiency %.2f %%; want nothing through and all retransmitted", d.ThroughputBps, d.BytesSent, d.EfficiencyPct)
	}
}
