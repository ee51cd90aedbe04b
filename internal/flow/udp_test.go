package flow

import (
	"context"
	"testing"
	"time"
)

// TestSendUDPStopsAtDuration: at 9.2e18 bit/s a 40-byte datagram's gap
// rounded to 0 and the sender never reached its duration (150 MB in 1 s
// of a 100 ms test). The gap is now at least 1 ns and the sender also
// stops when its clock passes the duration: a 100 ms test returns within
// 100 ms plus one nanosleep quantum and scheduling (200 ms in all).
func TestSendUDPStopsAtDuration(t *testing.T) {
	if g := packetGap(40, 9.2e18); g < time.Nanosecond {
		t.Fatalf("gap %v at 9.2e18 bit/s", g)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var s UDPSender
	start := time.Now()
	SendUDP(ctx, func([]byte) error { return nil }, NewClock(), UDPSpec{RateBps: 9.2e18, Size: 40, Duration: 100 * time.Millisecond}, &s)
	if took := time.Since(start); took > 200*time.Millisecond {
		t.Errorf("a 100 ms stream at 9.2e18 bit/s sent for %v (%d datagrams)", took, s.Packets.Load())
	}
}
