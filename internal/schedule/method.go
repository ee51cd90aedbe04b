package schedule

// The methods' lengths: each step's tests as package method runs them
// (rfc6349.go, trains.go, sweep.go, msglen.go), every retry taken and
// every train series run to its longest train.

import (
	"fmt"
	"math"
	"time"

	"github.com/fullpipe/fullpipe/internal/frame"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/rfc6349"
	"github.com/fullpipe/fullpipe/internal/train"
	"github.com/fullpipe/fullpipe/internal/vocab"
	"github.com/fullpipe/fullpipe/internal/y1564"
)

// The RFC 6349 runner's own tests (method/rfc6349.go, method/trains.go).
const (
	// Step 2's baseline: up to 2 series of 20 probes 20 ms apart.
	baselineSeries   = 2
	baselineProbes   = 20
	baselineProbeGap = 20 * time.Millisecond
	// Step 2's bottleneck search: a stream at a quarter of the CIR, then
	// up to rfc6349.BBMaxStreams more, 2 s each with a 300 ms drain, each
	// sent again once when its host held it back.
	bbStream = 2 * time.Second
	bbDrain  = 300 * time.Millisecond
	bbTries  = 2
	// Step 5's TCP test is sent again with reno when cubic is refused
	// (before it starts: a handshake, no test).
	shapingTries = 2
	// Step 5's trains: from 16 packets, doubling, paced at 4 × the larger
	// of BB and the CIR, each followed by a drain of twice the RTT, the
	// train's bytes at BB and 250 ms for a bucket to refill; a second
	// series of smaller packets when the first loss came within 8.
	trainFirst      = 16
	trainPace       = 4
	trainRefill     = 250 * time.Millisecond
	trainSmallHead  = 8
	trainIPHeaders  = frame.IPv4UDP
	sweepPointProbe = 10 // RFC 6349's window sweep: baseline probes per point
)

// rfcMTUs are the path MTUs an RFC 6349 run's trains are costed at (the
// run measures its own in step 1).
var rfcMTUs = []int{minPMTU, 1500, 9000}

// rfc6349Cost is RFC 6349's steps in order, each direction at its
// longest. Steps 3 to 5 depend on the bottleneck bandwidth found in step
// 2: they are costed for a path that carries its CIR (a path far below
// it sends longer trains in step 5 than the slot allows). The trains are
// costed at each of rfcMTUs, the longest counting.
func rfc6349Cost(c result.RFC6349Config, rtt time.Duration) (cost, error) {
	l, err := rfc6349.LinkByName(c.Link)
	if err != nil {
		return cost{}, err
	}
	probe := result.RTTConfig{Count: baselineProbes, Interval: baselineProbeGap}
	bb := udpCost(result.UDPConfig{Duration: bbStream, Drain: bbDrain})
	step := tcpCost(result.TCPConfig{Duration: c.StepDuration})
	walk := len(rfc6349.Walk(1, time.Millisecond, 0, 1)) // 25, 50, 75 and 100 % of the BDP
	cir := float64(c.CIRBps)
	var shaping cost
	for _, mtu := range rfcMTUs {
		shaping = longer(shaping, trainsDirection(cir, cir, rtt, mtu, l.Overhead, rtt), rtt)
	}
	dir := bb.times(bbTries * (1 + rfc6349.BBMaxStreams)).
		plus(step.times(walk)).
		plus(windowPointCost(c.StepDuration, sweepPointProbe).times(c.SweepPoints)).
		plus(tcpCost(result.TCPConfig{Duration: c.Duration})).
		plus(shaping).
		plus(step).plus(cost{sessions: shapingTries - 1})
	all := pmtuCost(result.PMTUConfig{}.WithDefaults(), rtt).
		plus(rttCost(probe).times(baselineSeries)).
		plus(dir.times(len(c.Directions)))
	return all, nil
}

// trainsCost is the trains method: each direction's series.
func trainsCost(c result.TrainsConfig, rtt time.Duration) (cost, error) {
	l, err := rfc6349.LinkByName(c.Link)
	if err != nil {
		return cost{}, err
	}
	return trainsDirection(c.RateBps, c.CIRBps, c.RTT, c.MTU, l.Overhead, rtt).times(len(c.Directions)), nil
}

// trainsDirection is one direction's trains (method.trains): a series of
// full-size packets, then at most one of smaller packets, costed at the
// size whose series takes longest. bb is the bottleneck's rate, baseline
// the RTT the method sizes its drains by, rtt the path's.
func trainsDirection(bb, cir float64, baseline time.Duration, mtu, linkOverhead int, rtt time.Duration) cost {
	overhead := trainIPHeaders + linkOverhead
	size := mtu - trainIPHeaders
	first := trainSeries(bb, cir, baseline, size, overhead, rtt)
	if size <= train.MinPacket {
		return first
	}
	var second cost
	for small := 1; small < trainSmallHead; small++ {
		s := max(train.MinPacket, train.PacketSize(float64(small*(size+overhead)))-overhead)
		second = longer(second, trainSeries(bb, cir, baseline, s, overhead, rtt), rtt)
	}
	return first.plus(second)
}

// longer is whichever of a and b takes the longer slot at rtt (its
// sessions' margins counted: a few more trains may outweigh longer ones).
func longer(a, b cost, rtt time.Duration) cost {
	if b.slot(rtt) > a.slot(rtt) {
		return b
	}
	return a
}

// trainSeries is one series (method.trainSeries): trains of doubling
// length up to the longest the path calls for, each its own session.
// A train lasts until its last packet has arrived (its bytes at bb, a
// round trip after the start) and the drain after it.
func trainSeries(bb, cir float64, baseline time.Duration, size, overhead int, rtt time.Duration) cost {
	per := size + overhead
	sender := trainPace * max(bb, cir)
	longest := max(2, train.Longest(bb, rfc6349.BDPBytes(bb, baseline), sender, per)/per)
	var out cost
	for n := trainFirst; ; n *= 2 {
		n = min(n, longest)
		span := bitsTime(float64(n*per)*8, bb)
		drain := satAdd(satAdd(satMul(2, baseline), span), trainRefill)
		out = out.plus(cost{run: satAdd(satAdd(rtt, span), drain), sessions: 1})
		if n >= longest {
			return out
		}
	}
}

// windowPointCost is one point of a window sweep (tester.RunWindowPoint):
// a probe session with its baseline and the wait for its replies, the
// TCP test in a session of its own, the wait for the loaded replies.
func windowPointCost(d time.Duration, baseline int) cost {
	probes := cost{run: satAdd(satMul(baseline-1, baselineGap), 2*probeReplyWait), sessions: 1}
	return probes.plus(tcpCost(result.TCPConfig{Duration: d}))
}

// windowSweepCost is every window's point, each checked first as the
// engine will run it (method.checkPoints).
func windowSweepCost(c result.WindowSweepConfig, _ time.Duration) (cost, error) {
	for i, w := range c.Windows {
		if err := sweepPoint(c, i, w).WithDefaults().Validate(); err != nil {
			return cost{}, fmt.Errorf("window %d B: %w", w, err)
		}
	}
	return windowPointCost(c.Duration, c.BaselineProbes).times(len(c.Windows)), nil
}

// sweepPoint is the engine's config of a window sweep's point i, window
// w, as method.point makes it.
func sweepPoint(c result.WindowSweepConfig, i, w int) result.WindowPointConfig {
	return result.WindowPointConfig{
		TCP: result.TCPConfig{Streams: 1, Duration: c.Duration, Window: w, Reverse: c.Reverse, CC: c.CC,
			Interval: c.Interval},
		DSCPs: c.ProbeDSCPs, Baseline: c.BaselineProbes, BaselineGap: baselineGap,
		ProbeGap: c.ProbeGap, Settle: c.Settle, Seed: c.Seed + uint64(i),
	}
}

// msgLenCost is, for each size, a TCP upload and a UDP upload.
func msgLenCost(c result.MsgLenSweepConfig) cost {
	size := tcpCost(result.TCPConfig{Duration: c.Duration}).plus(udpCost(result.UDPConfig{Duration: c.Duration, Drain: result.MsgLenUDPDrain}))
	return size.times(len(c.Sizes))
}

// bitsTime is how long bits take at bps, saturating (a float beyond
// int64 would convert to an undefined duration).
func bitsTime(bits, bps float64) time.Duration {
	ns := bits / bps * 1e9
	if !(ns < math.MaxInt64) {
		return math.MaxInt64
	}
	return time.Duration(ns)
}

// y1564Cost: each service's configuration steps one after another in
// each direction, then the performance test's streams all at once (one
// session's time: they run side by side). Each stream is a UDP test of
// its step's time and drain, plus the wait for its latency probes'
// last replies.
func y1564Cost(c result.Y1564Config, _ time.Duration) (cost, error) {
	var total cost
	trial := func(s y1564.Service, st y1564.Step) cost {
		u := udpCost(c.Trial(s, st, vocab.Up))
		u.run = satAdd(u.run, result.ReplyWait)
		return u
	}
	if !c.SkipConfig {
		for _, s := range c.Services {
			for _, st := range y1564.Steps(s, c.StepsPct) {
				total = total.plus(trial(s, st).times(len(c.Directions)))
			}
		}
	}
	if !c.SkipPerf && len(c.Services) > 0 {
		total = total.plus(trial(c.Services[0], y1564.PerformanceStep(c.Services[0])))
	}
	return total, nil
}
