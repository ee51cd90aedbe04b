package tester

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/serve"
)

// TestUDPStream: a 20 Mbit/s stream of 1000-byte datagrams for 2 s, both
// ways, on loopback: the sender's count is exact (schedule), nothing is
// lost, and the receiver's rate is the target within 2 % (the pacing
// loop's timer granularity over a 2 s span).
func TestUDPStream(t *testing.T) {
	_, addr := startServer(t, serve.Config{})
	for _, reverse := range []bool{false, true} {
		res, err := RunUDP(context.Background(), Target{Addr: addr},
			UDPConfig{RateBps: 20e6, Size: 1000, Duration: 2 * time.Second, Reverse: reverse, Interval: 500 * time.Millisecond, Drain: 300 * time.Millisecond}, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		wantPkts := uint64(20e6 * 2 / 8 / 1000)
		if d := math.Abs(float64(s.SentPackets) - float64(wantPkts)); d > float64(wantPkts)/100 {
			t.Errorf("reverse=%v: sent %d datagrams, want %d ± 1 %%", reverse, s.SentPackets, wantPkts)
		}
		if s.RecvPackets != s.SentPackets || s.Lost != 0 || s.Duplicates != 0 {
			t.Errorf("reverse=%v: sent %d, received %d, lost %d, dup %d", reverse, s.SentPackets, s.RecvPackets, s.Lost, s.Duplicates)
		}
		if math.Abs(s.ReceiverRateBps-20e6)/20e6 > 0.02 {
			t.Errorf("reverse=%v: receiver rate %.0f bit/s, want 20 Mbit/s ± 2 %%", reverse, s.ReceiverRateBps)
		}
		if s.RecvBytes != s.RecvPackets*1000 {
			t.Errorf("bytes %d for %d datagrams of 1000 B", s.RecvBytes, s.RecvPackets)
		}
		if len(res.Intervals) < 3 {
			t.Errorf("%d intervals for 2 s at 500 ms", len(res.Intervals))
		}
	}
}

// TestRTTProbes: 20 probes 10 ms apart on loopback all come back, and the
// order statistics are consistent and small.
func TestRTTProbes(t *testing.T) {
	_, addr := startServer(t, serve.Config{})
	res, err := RunRTT(context.Background(), Target{Addr: addr}, RTTConfig{Count: 20, Interval: 10 * time.Millisecond, Size: 64}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.Sent != 20 || s.Received != 20 || s.LossPct != 0 {
		t.Fatalf("%+v", s)
	}
	if !(s.MinUs > 0 && s.MinUs <= s.MedianUs && s.MedianUs <= s.P99Us && s.P99Us <= s.MaxUs && s.MaxUs < 10_000) {
		t.Fatalf("implausible order statistics on loopback: %+v", s)
	}
}
