package testkit

import (
	"sync"
	"time"
)

// Clock is a manual clock for a component that takes its clock as a
// func() time.Time (controller.Config.Now, say): it reads the time it
// was set to, and moves only when a test advances it. It is safe for
// concurrent use. Timers do not follow it: for code that waits, use a
// testing/synctest bubble instead.
type Clock struct {
	mu  sync.Mutex // guards now
	now time.Time
}

// NewClock is a Clock that reads now.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d on.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set sets the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
