package flow

import (
	"net"
	"testing"
	"testing/synctest"
	"time"
)

// TestRTTSeriesEvery: on fake time, the RTT series takes a sample every
// RTTEvery exactly, stamped on the test's clock, from a real loopback
// connection's TCP_INFO (made outside the bubble: reading TCP_INFO does
// not block), and none after done closes.
func TestRTTSeriesEvery(t *testing.T) {
	c, _ := tcpPair(t)
	synctest.Test(t, func(t *testing.T) {
		var r RTTSeries
		done := make(chan struct{})
		ended := make(chan struct{})
		go func() { r.Run(done, NewClock(), []*net.TCPConn{c}); close(ended) }()
		time.Sleep(3*RTTEvery + RTTEvery/2) // fake time (synctest)
		close(done)
		<-ended
		pts, next := r.Since(0)
		if len(pts) != 3 || next != 3 {
			t.Fatalf("%d points (next %d) in 3.5 × RTTEvery, want 3", len(pts), next)
		}
		for i, p := range pts {
			if want := time.Duration(i+1) * RTTEvery; time.Duration(p.Ns) != want || p.Us <= 0 {
				t.Errorf("point %d: %v, %d µs; want at exactly %v, an RTT above 0", i, time.Duration(p.Ns), p.Us, want)
			}
		}
	})
}
