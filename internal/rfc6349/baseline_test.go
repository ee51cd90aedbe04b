package rfc6349

import (
	"strings"
	"testing"
	"time"
)

// TestBaselineAgrees: the UDP baseline against TCP's minimum RTT, with
// the tolerance 2 ms + 10 % of TCP's minimum.
func TestBaselineAgrees(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * 1e6) }
	for _, c := range []struct {
		name     string
		udp, tcp time.Duration
		ok       bool
		says     string
	}{
		{"issue 9's outlier: half the path", ms(15.7), ms(30.6), false, "below"},
		{"the lab's 30 ms path, UDP 14 µs under", ms(30.130), ms(30.144), true, ""},
		{"a busy host's control connection, 1.3 ms over", ms(30.121), ms(31.430), true, ""},
		{"just inside: 30.6 - 5.06 ms", ms(25.55), ms(30.6), true, ""},
		{"just outside below", ms(25.5), ms(30.6), false, "below"},
		{"probes behind a queue TCP missed", ms(45), ms(30.6), false, "above"},
		{"LAN: 0.1 ms against 0.05 ms", ms(0.1), ms(0.05), true, ""},
		{"TCP unknown", ms(15.7), 0, true, ""},
		{"UDP unknown", 0, ms(30.6), true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ok, why := BaselineAgrees(c.udp, c.tcp)
			if ok != c.ok || !strings.Contains(why, c.says) {
				t.Errorf("BaselineAgrees(%v, %v) = %v, %q; want %v and a sentence with %q", c.udp, c.tcp, ok, why, c.ok, c.says)
			}
		})
	}
	if got := BaselineTolerance(ms(30.6)); got != ms(5.06) {
		t.Errorf("tolerance at 30.6 ms: %v, want 5.06 ms", got)
	}
}
