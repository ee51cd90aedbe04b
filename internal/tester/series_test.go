package tester

import (
	"math"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/serve"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// TestTCPSeries: a fixed transfer both ways, paced so it lasts about 1.6 s
// and its responder half arrives in several interval frames. The rate
// series is bytes per 10 ms bin over 100 ms windows every 50 ms, so every
// second point tiles the time from 0 without overlap: those windows hold
// every byte received except the tail after the last of them (under
// 100 ms of transfer at the paced rate: the last point may end 50 ms
// after it, and the last bin 40 ms after that), never more than that.
// The RTT series has a point every 100 ms while the sender sends.
func TestTCPSeries(t *testing.T) {
	_, addr := startServer(t, serve.Config{})
	const total, pace = 10_000_000, 50e6 // bytes per direction, bit/s
	res, err := RunTCP(testCtx(t, 20*time.Second), Target{Addr: addr},
		result.TCPConfig{Streams: 1, Bytes: total, Bidir: true, PacingBps: pace, Interval: 250 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[vocab.Direction][2]string{vocab.Up: {"responder", "client"}, vocab.Down: {"client", "responder"}}
	for dir, clocks := range want {
		s := res.Series[dir]
		if s == nil {
			t.Fatalf("no %s series", dir)
		}
		if s.RateClock != clocks[0] || s.RTTClock != clocks[1] || s.WindowS != 0.1 {
			t.Errorf("%s: rate on %q, RTT on %q, window %v s; want %q, %q, 0.1", dir, s.RateClock, s.RTTClock, s.WindowS, clocks[0], clocks[1])
		}
		var tiled float64
		for i, p := range s.Rate {
			if wantT := 0.1 + 0.05*float64(i); math.Abs(p.TS-wantT) > 1e-9 {
				t.Fatalf("%s: point %d at %v s, want %v", dir, i, p.TS, wantT)
			}
			if i%2 == 0 {
				tiled += p.Bps * 0.1 / 8
			}
		}
		tail := pace * 0.1 / 8
		t.Logf("%s: %d rate points, tiled windows hold %.0f of %d B; %d RTT points", dir, len(s.Rate), tiled, total, len(s.RTT))
		if tiled > total+0.5 || tiled < total-tail*1.2 {
			t.Errorf("%s: the tiled windows hold %.0f B, want %d B less at most the last 100 ms at %.0f Mbit/s (%.0f B)", dir, tiled, total, pace/1e6, tail)
		}
		span := res.Summary.Directions[dir].IntervalS
		if n := len(s.RTT); float64(n) < span/0.1-3 || float64(n) > span/0.1+2 {
			t.Errorf("%s: %d RTT points over a %.2f s transfer, want one per 100 ms", dir, n, span)
		}
		for i, p := range s.RTT {
			if p.Us <= 0 || (i > 0 && p.TS <= s.RTT[i-1].TS) {
				t.Fatalf("%s: RTT point %d %+v: want a positive RTT after the previous point", dir, i, p)
			}
		}
	}
}
