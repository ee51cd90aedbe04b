package link

import "time"

// Chain runs stages in series: what leaves stage i enters stage i+1 at
// the same virtual time; what leaves the last stage is delivered.
type Chain struct {
	stages []Stage
	drop   DropFunc
}

// NewChain builds a chain. drop is told of every packet dropped anywhere.
func NewChain(drop DropFunc, stages ...Stage) *Chain {
	if drop == nil {
		drop = func(*Packet, Cause) {}
	}
	return &Chain{stages: stages, drop: drop}
}

// Push enters p at virtual time now. The caller must have advanced the
// chain to now first (Advance), so events happen in time order.
func (c *Chain) Push(now time.Duration, p *Packet) {
	p.Time, p.Born = now, now
	if len(c.stages) == 0 {
		panic("link: Push on a chain without stages; add a Delay(0)")
	}
	c.stages[0].Push(p, c.drop)
}

// Next is the earliest virtual time of any pending event.
func (c *Chain) Next() (time.Duration, bool) {
	var best time.Duration
	found := false
	for _, s := range c.stages {
		if t, ok := s.Next(); ok && (!found || t < best) {
			best, found = t, true
		}
	}
	return best, found
}

// Advance processes, in time order, every event up to and including now,
// and passes each packet that leaves the last stage to deliver, with
// p.Time its exact virtual departure.
func (c *Chain) Advance(now time.Duration, deliver func(*Packet)) {
	for {
		idx, best := -1, time.Duration(0)
		for i, s := range c.stages {
			// Ties go to the later stage, so a packet moves as far as it
			// can before new work enters behind it.
			if t, ok := s.Next(); ok && t <= now && (idx < 0 || t <= best) {
				idx, best = i, t
			}
		}
		if idx < 0 {
			return
		}
		p := c.stages[idx].Pull()
		if idx == len(c.stages)-1 {
			deliver(p)
			continue
		}
		c.stages[idx+1].Push(p, c.drop)
	}
}

// QueuedBytes sums the bytes waiting in the chain's queues.
func (c *Chain) QueuedBytes() int {
	n := 0
	for _, s := range c.stages {
		if q, ok := s.(Queued); ok {
			n += q.QueuedBytes()
		}
	}
	return n
}
