// Package vocab defines fullpipe's words once: the direction of a test,
// the region a window sits in, the shaping verdict and the causes a
// diagnosis names. Every package that says one of them uses these types,
// and their string values are what the JSON documents carry.
package vocab

import (
	"fmt"
	"strings"
)

// Direction is which way the data flows: up is the tester (client) →
// responder, down responder → tester.
type Direction string

// Directions.
const (
	Up   Direction = "up"
	Down Direction = "down"
)

// Both is up then down, the order every report uses.
var Both = []Direction{Up, Down}

// Reverse says the responder sends: the engine's Reverse flag.
func (d Direction) Reverse() bool { return d == Down }

// Of is the direction of a test whose responder sends when reverse.
func Of(reverse bool) Direction {
	if reverse {
		return Down
	}
	return Up
}

// Sender names the end that sends in d, as a report says it.
func (d Direction) Sender() Side {
	if d == Down {
		return Responder
	}
	return Tester
}

// Valid is d one of the directions.
func (d Direction) Valid() bool { return d == Up || d == Down }

// ParseDirections reads "up", "down" or "both" (as a flag gives it).
func ParseDirections(s string) ([]Direction, error) {
	switch d := Direction(strings.ToLower(strings.TrimSpace(s))); d {
	case Up, Down:
		return []Direction{d}, nil
	case "both":
		return []Direction{Up, Down}, nil
	}
	return nil, fmt.Errorf("direction %q: want up, down or both", s)
}

// Side is one end of a test.
type Side string

// Sides. The tester is the host that runs the command (the client);
// the responder is the far end running fullpipe serve.
const (
	Tester    Side = "tester"
	Responder Side = "responder"
)

// Region is where a window sits against the path (RFC 6349 notes §7):
// linear (window < BDP: throughput ∝ window, no queue), saturation
// (BDP ≤ window ≤ BDP + queue: full rate, the RTT grows), overflow
// (window > BDP + queue: loss). A measured sweep adds transition, the
// points between the line and the plateau.
type Region string

// Regions.
const (
	Linear     Region = "linear"
	Transition Region = "transition"
	Saturation Region = "saturation"
	Overflow   Region = "overflow"
)

// Shaping is the verdict of RFC 6349's shaping-vs-policing step.
type Shaping string

// Shaping verdicts.
const (
	Policed Shaping = "policed" // excess dropped: loss, little queueing
	Shaped  Shaping = "shaped"  // excess queued: delay, little loss
	None    Shaping = "none"    // neither seen
	// Undecided: loss, but the packet trains could not tell a policer
	// whose bucket holds a few packets from loss on the line; no cause
	// is named.
	Undecided Shaping = "undecided"
)

// Cause is what a diagnosis names as holding a test back.
type Cause string

// Causes, most specific first in a diagnosis.
const (
	CauseWindow  Cause = "window"  // a window smaller than the BDP
	CauseHost    Cause = "host"    // the sending host (CPU, steal, pacing), not the path
	CausePolicer Cause = "policer" // a token bucket drops the excess
	CauseLoss    Cause = "loss"    // loss on the line, at any load
	CauseBuffer  Cause = "buffer"  // a bottleneck queue too small (or too large) for the BDP
	CauseMTU     Cause = "mtu"     // a path MTU below the interface's
)
