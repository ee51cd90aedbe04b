package schedule

// How long each test runs, from its config, as the engine runs it: the
// sessions it opens one after another (each a control connection, a
// handshake, the test, its result) and the time of its own each one
// spends (durations, drains and waits its config or the engine sets).
// Every figure is an upper bound: the slot the controller books ends the
// run, so a bound too short would cut healthy runs.

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/fullpipe/fullpipe/internal/frame"
	"github.com/fullpipe/fullpipe/internal/ping"
	"github.com/fullpipe/fullpipe/internal/result"
)

// MaxLength is the longest test the package schedules.
const MaxLength = 7 * 24 * time.Hour

// The engine's waits, as its code has them (TestEngineMirror checks that
// it still does).
const (
	// bytesModeMaxRun (tester): the longest a tcp test of a byte count
	// runs; the responder's --max-duration has the same default.
	bytesModeMaxRun = 10 * time.Minute
	// idleProbeGap (tester): the spacing of a tcp test's --latency probes
	// before the load.
	idleProbeGap = 20 * time.Millisecond
	// loadedReplyWait (tester, prober.loop): the wait for the replies of
	// the probes sent during the load.
	loadedReplyWait = 500 * time.Millisecond
	// probeReplyWait (tester): a window sweep point's wait for the
	// replies of each series of its probes.
	probeReplyWait = 2 * time.Second
	// baselineGap (method): the spacing of a window sweep point's
	// baseline probes.
	baselineGap = 20 * time.Millisecond
	// The path MTU search (tester.RunPMTU): 5 idle probes 20 ms apart,
	// then each probe waits max(100 ms, 4 × the largest idle RTT).
	pmtuIdleProbes  = 5
	pmtuIdleGap     = 20 * time.Millisecond
	pmtuMinTimeout  = 100 * time.Millisecond
	pmtuTimeoutRTTs = 4
	// unknownMTU is the largest local MTU a search with no MaxBytes may
	// start from (the loopback's).
	unknownMTU = 65536
	// minPMTU is the smallest floor a search with no MinBytes uses
	// (pathmtu.Floor: 1200 on IPv4, 1280 on IPv6): the most sizes.
	minPMTU = 1200
)

// cost is a test's time: sessions one after another, and the time of
// their own they spend.
type cost struct {
	run      time.Duration // the sessions' own time: durations, drains, waits
	sessions int           // control sessions, one after another
	tcp      int           // of which TCP tests, which end in their senders' drain
	// rateBps is what a shared (non-exclusive) kind's run sends, bit/s
	// of IP packets (its probes; the replies come back as many).
	rateBps float64
}

// plus is c and o one after the other (saturating: a config of absurd
// durations is refused by its length, not wrapped around).
func (c cost) plus(o cost) cost {
	return cost{run: satAdd(c.run, o.run), sessions: c.sessions + o.sessions, tcp: c.tcp + o.tcp}
}

// times is n of c one after the other.
func (c cost) times(n int) cost {
	out := cost{}
	if n > 0 {
		out = cost{run: satMul(n, c.run), sessions: n * c.sessions, tcp: n * c.tcp}
	}
	return out
}

func satAdd(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func satMul(n int, d time.Duration) time.Duration {
	if n > 0 && d > math.MaxInt64/time.Duration(n) {
		return math.MaxInt64
	}
	return time.Duration(n) * d
}

// Costing is what one kind of test costs a schedule: whether it needs
// its agents to itself, and its cost at an RTT from its raw config. The
// table of kinds (package kinds) holds one per kind and asks it by the
// kind's name; TCP, UDP, ... below are them.
type Costing struct {
	exclusive bool
	cost      func(cfg json.RawMessage, rtt time.Duration) (cost, error)
}

// costing decodes a kind's config, fills its defaults and validates it,
// as the engine does before it runs it (result.ConfigOf), then costs it
// with f.
func costing[C result.Config[C]](exclusive bool, f func(C, time.Duration) (cost, error)) Costing {
	return Costing{exclusive, func(raw json.RawMessage, rtt time.Duration) (cost, error) {
		c, err := result.ConfigOf[C](raw)
		if err != nil {
			return cost{}, err
		}
		return f(c.(C), rtt)
	}}
}

// The costs, one per kind. The throughput tests are exclusive: two on
// one agent at once would measure each other. rtt, mtu and stamp send a
// few small probes.
var (
	TCP         = costing(true, func(c result.TCPConfig, _ time.Duration) (cost, error) { return tcpCost(c), nil })
	UDP         = costing(true, func(c result.UDPConfig, _ time.Duration) (cost, error) { return udpCost(c), nil })
	RTT         = costing(false, func(c result.RTTConfig, _ time.Duration) (cost, error) { return rttCost(c), nil })
	MTU         = costing(false, func(c result.PMTUConfig, rtt time.Duration) (cost, error) { return pmtuCost(c, rtt), nil })
	Trains      = costing(true, trainsCost)
	RFC6349     = costing(true, rfc6349Cost)
	WindowSweep = costing(true, windowSweepCost)
	MsgLenSweep = costing(true, func(c result.MsgLenSweepConfig, _ time.Duration) (cost, error) { return msgLenCost(c), nil })
	Ping        = costing(true, func(c result.PingConfig, _ time.Duration) (cost, error) { return pingCost(c), nil })
	STAMP       = costing(false, func(c result.STAMPConfig, _ time.Duration) (cost, error) {
		return cost{run: c.Span(), sessions: 1, rateBps: probeRate(c.Size, c.Interval)}, nil
	})
	RFC2544 = costing(true, rfc2544Cost)
	Y1564   = costing(true, y1564Cost)
)

// costFor is k's cost with cfg at rtt, or why it has none.
func (k Costing) costFor(cfg json.RawMessage, rtt time.Duration) (cost, error) {
	if k.cost == nil {
		return cost{}, fmt.Errorf("no cost for this kind")
	}
	c, err := k.cost(cfg, max(rtt, 0))
	if err != nil {
		return cost{}, err
	}
	if c.run > MaxLength {
		return cost{}, fmt.Errorf("runs for more than %v: shorten it or split it", MaxLength)
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
	c, err := k.costFor(cfg, 0)
	return c.run, err
}

// Exclusive reports whether a test of this kind needs its agents to
// itself: the throughput tests (tcp, udp, trains, rfc6349, the sweeps,
// ping, rfc2544, y1564) would measure each other. rtt, mtu and stamp
// are not.
func (k Costing) Exclusive() bool { return k.exclusive }

func tcpCost(c result.TCPConfig) cost {
	run := c.Duration
	if c.Bytes > 0 {
		run = bytesModeMaxRun
	}
	if c.Latency { // idle probes before the start, the loaded replies after the end
		run = satAdd(run, (result.LatencyIdleProbes-1)*idleProbeGap+result.ReplyWait+loadedReplyWait)
	}
	return cost{run: run, sessions: 1, tcp: 1}
}

// pingCost: no session (no responder). One run: its probes, then the
// wait for late replies; a rate search: at most ping.MaxTrials trials,
// each its probes and that wait. Exclusive, as its rate search loads the
// path.
func pingCost(c result.PingConfig) cost {
	if !c.RateSearch {
		return cost{run: satAdd(satMul(c.Count-1, c.Interval), c.Wait)}
	}
	return cost{run: satMul(ping.MaxTrials, satAdd(c.TrialDuration, c.Wait))}
}

// udpCost: the stream, then the receiver's drain.
func udpCost(c result.UDPConfig) cost {
	return cost{run: satAdd(c.Duration, c.Drain), sessions: 1}
}

// rttCost: the probes, then the wait for the last replies.
func rttCost(c result.RTTConfig) cost {
	return cost{run: satAdd(satMul(c.Count-1, c.Interval), result.ReplyWait), sessions: 1, rateBps: probeRate(c.Size, c.Interval)}
}

// probeRate is the bit/s of UDP probes of size bytes of payload (and 28
// of IPv4 and UDP headers) every interval.
func probeRate(size int, interval time.Duration) float64 {
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
	c, err := k.costFor(cfg, 0)
	return c.rateBps, err
}

// pmtuCost: the idle probes and the wait for their replies, then a
// search in each direction, every probe of every size timing out.
func pmtuCost(c result.PMTUConfig, rtt time.Duration) cost {
	lo, hi := c.MinBytes, c.MaxBytes
	if lo == 0 {
		lo = minPMTU
	}
	if hi == 0 {
		hi = unknownMTU
	}
	sizes := 0 // pathmtu.Search: hi, lo, then a binary search between them
	switch {
	case hi == lo:
		sizes = 1
	case hi > lo:
		sizes = 2 + bits.Len(uint(hi-lo))
	}
	timeout := max(pmtuMinTimeout, satMul(pmtuTimeoutRTTs, rtt))
	run := (pmtuIdleProbes-1)*pmtuIdleGap + result.ReplyWait
	return cost{run: satAdd(run, satMul(2*sizes*c.Tries, timeout)), sessions: 1}
}
