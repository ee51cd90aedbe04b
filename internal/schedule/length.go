package schedule

// How long each kind of test runs, from its config. The table of kinds
// (package kinds) holds a Costing per kind, made by Costed from the
// kind's own cost: an engine test's is package tester's, a method's is
// its plan in package method, each beside the code it bounds.

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/fullpipe/fullpipe/internal/frame"
)

// MaxLength is the longest test the package schedules.
const MaxLength = 7 * 24 * time.Hour

// Costing is what one kind of test costs a schedule: whether it needs
// its agents to itself, and its cost at an RTT from its raw config. The
// table of kinds (package kinds) holds one per kind and asks it by the
// kind's name.
type Costing struct {
	exclusive bool
	cost      func(cfg json.RawMessage, rtt time.Duration) (Cost, error)
}

// Costed is the Costing of a kind whose configs are Cs and whose cost at
// an RTT is f's. read decodes a raw config, fills its defaults and
// validates it, as the engine does before it runs one (result.ConfigOf
// of C: the table of kinds passes it, so that the fleet's timetable,
// which the store books by, compiles no kind's config), then f costs
// it. Exclusive: the kind needs its agents to itself (a throughput
// test: two on one agent at once would measure each other).
func Costed[C any](exclusive bool, read func(json.RawMessage) (any, error), f func(C, time.Duration) (Cost, error)) Costing {
	return Costing{exclusive, func(raw json.RawMessage, rtt time.Duration) (Cost, error) {
		c, err := read(raw)
		if err != nil {
			return Cost{}, err
		}
		return f(c.(C), rtt)
	}}
}

// CostAt is k's cost with cfg at rtt, or why it has none: an invalid
// config, or one that runs longer than MaxLength.
func (k Costing) CostAt(cfg json.RawMessage, rtt time.Duration) (Cost, error) {
	if k.cost == nil {
		return Cost{}, fmt.Errorf("no cost for this kind")
	}
	c, err := k.cost(cfg, max(rtt, 0))
	if err != nil {
		return Cost{}, err
	}
	if c.Run > MaxLength {
		return Cost{}, fmt.Errorf("runs for more than %v: shorten it or split it", MaxLength)
	}
	return c, nil
}

// Length is the test's own running time, an upper bound from its config
// (cfg as JSON, the document's "config", defaults filled and validated
// as the engine does). A method's steps are summed, each at its longest:
// the time its tests run, drain and wait for replies. It leaves out what
// the path's round trips add around each test (handshakes, results,
// probe timeouts): Slot and SlotFor add those. An unknown key or an
// invalid config is an error.
func (k Costing) Length(cfg json.RawMessage) (time.Duration, error) {
	c, err := k.CostAt(cfg, 0)
	return c.Run, err
}

// Exclusive reports whether a test of this kind needs its agents to
// itself: the throughput tests (tcp, udp, trains, rfc6349, the sweeps,
// ping, rfc2544, y1564) would measure each other. rtt, mtu and stamp
// are not.
func (k Costing) Exclusive() bool { return k.exclusive }

// ProbeRate is the bit/s of UDP probes of size bytes of payload (and 28
// of IPv4 and UDP headers) every interval: a shared kind's Cost.RateBps.
func ProbeRate(size int, interval time.Duration) float64 {
	if interval <= 0 {
		return math.Inf(1)
	}
	return float64(size+frame.IPv4UDP) * 8 / interval.Seconds()
}

// SharedRateMax is the fastest a run of a shared kind (stamp, rtt, mtu)
// may send and still share its agents with other runs: 1 Mbit/s, a
// STAMP session of 1,000 packets/s of 97 bytes. A faster one is
// booked exclusive, as a throughput test is: a STAMP config may ask for
// 10,000 packets/s of 65 kB, 5 Gbit/s, which no destination should get
// from many sources at once.
const SharedRateMax = 1e6

// ExclusiveFor is Exclusive for one config: an exclusive kind, or a
// shared one whose config sends faster than SharedRateMax.
func (k Costing) ExclusiveFor(cfg json.RawMessage) bool {
	if k.Exclusive() {
		return true
	}
	r, err := k.SharedRate(cfg)
	return err != nil || r > SharedRateMax
}

// SharedRate is what a run of a shared kind sends, bit/s (0 for mtu's
// few probes).
func (k Costing) SharedRate(cfg json.RawMessage) (float64, error) {
	c, err := k.CostAt(cfg, 0)
	return c.RateBps, err
}
