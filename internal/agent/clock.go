package agent

import (
	"sync"
	"time"
)

// maxSkew is the clock difference with the controller past which the
// agent warns: runs are still started on the controller's clock.
const maxSkew = time.Second

// skewWarnEvery bounds the skew warnings to one per this.
const skewWarnEvery = 10 * time.Minute

// controllerClock tracks how far the controller's clock is ahead of the
// local one (negative: behind), measured at each heartbeat, and turns
// the controller's times (slots, key windows) into local instants.
type controllerClock struct {
	mu     sync.Mutex // guards skew and warned
	skew   time.Duration
	warned time.Time
}

// observe records a heartbeat sent at sent and answered at recv with
// the controller's now. The controller read its clock somewhere in
// between: the midpoint's error is at most half the round trip. It
// returns the skew and whether to warn about it now.
func (c *controllerClock) observe(sent, recv, now time.Time) (time.Duration, bool) {
	mid := sent.Add(recv.Sub(sent) / 2)
	skew := now.Sub(mid)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.skew = skew
	if skew.Abs() <= maxSkew || (!c.warned.IsZero() && recv.Sub(c.warned) < skewWarnEvery) {
		return skew, false
	}
	c.warned = recv
	return skew, true
}

// local is the local instant at which the controller's clock reads t,
// from the local clock's now (with its monotonic reading, which the
// result keeps, for timers and deadlines).
func (c *controllerClock) local(t, now time.Time) time.Time {
	c.mu.Lock()
	skew := c.skew
	c.mu.Unlock()
	return now.Add(t.Sub(now.Add(skew)))
}
