// Package link models a network path as a chain of stages, one per effect
// (policer, random loss, bit errors, MTU, queue with a bottleneck rate,
// delay), run as a discrete-event simulation on virtual time.
//
// The package never reads a clock: every call takes now, a time.Duration
// on the caller's monotonic clock. A chain processes events in time order
// and stamps each packet with the exact virtual time it leaves a stage, so
// a caller that wakes up late still gets exact departure times; only the
// final hand-off to the real world is as late as the wake-up.
//
// Concurrency: a Chain is not safe for concurrent use; its owner (lab's
// per-direction forwarder) serialises calls with one mutex.
package link

import (
	"fmt"
	"time"
)

// Packet is one IP packet on the path.
type Packet struct {
	Data  []byte
	Time  time.Duration // when it entered the current stage (virtual)
	Class int           // priority class: 0 high, 1 normal (only with a Priority stage)
	Born  time.Duration // when it entered the chain
	Buf   []byte        // the owner's storage behind Data; stages never touch it
	Tag   int           // the owner's label (lab: trace record + 1); stages never touch it
}

// Len is the packet's size in bytes at the IP layer.
func (p *Packet) Len() int { return len(p.Data) }

// Cause names why a packet was dropped.
type Cause int

// Drop causes, counted separately.
const (
	DropQueue   Cause = iota // queue full (drop-tail)
	DropPolicer              // above the policer's rate and burst
	DropLoss                 // random loss (Bernoulli or Gilbert-Elliott)
	DropBER                  // bit errors
	DropMTU                  // larger than the path MTU
	DropCell                 // ATM cell loss
	numCauses
)

var causeNames = [...]string{"queue", "policer", "loss", "ber", "mtu", "cell"}

func (c Cause) String() string {
	if c >= 0 && int(c) < len(causeNames) {
		return causeNames[c]
	}
	return fmt.Sprintf("cause(%d)", int(c))
}

// Causes lists every drop cause, in order.
func Causes() []Cause {
	out := make([]Cause, numCauses)
	for i := range out {
		out[i] = Cause(i)
	}
	return out
}

// DropFunc is told of every drop, with its cause. Drops are counted
// outside the stages, so a queue discipline never hides one.
type DropFunc func(p *Packet, c Cause)

// Stage is one effect on the path. A stage holds packets until they may
// leave; Pull hands them over in the order they leave, stamped with the
// virtual time they left.
type Stage interface {
	// Push offers p, arriving at p.Time. The stage keeps it or drops it
	// (reporting to drop).
	Push(p *Packet, drop DropFunc)
	// Next is the earliest virtual time a packet leaves; ok is false when
	// the stage holds none.
	Next() (t time.Duration, ok bool)
	// Pull removes the packet that leaves at Next(), with p.Time set to
	// that time. Call only when Next's ok is true.
	Pull() *Packet
}

// Queued reports bytes held waiting (not in service) by a stage that
// queues; the chain sums them for statistics.
type Queued interface {
	QueuedBytes() int
}
