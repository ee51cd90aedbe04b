package schedule

import (
	"testing"
	"time"
)

// TestSlot: the margin's terms, one session of 10 s: the guard (1 s),
// the session's setup (100 ms), its 8 round trips, a TCP sender's end
// grace (6 s).
func TestSlot(t *testing.T) {
	for _, c := range []struct{ length, rtt, want time.Duration }{
		{10 * time.Second, 0, 17100 * ms},
		{10 * time.Second, -ms, 17100 * ms},
		{10 * time.Second, ms, 17108 * ms},
		{10 * time.Second, 300 * ms, 19500 * ms},
		{0, 0, 7100 * ms},
	} {
		if got := Slot(c.length, c.rtt); got != c.want {
			t.Errorf("Slot(%v, %v) = %v, want %v", c.length, c.rtt, got, c.want)
		}
	}
}
