package fakenet

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/fullpipe/fullpipe/internal/frame"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/rfc6349"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// unlimited is the goodput of a path with neither bottleneck nor
// policer: what a loopback carries.
const unlimited = 10e9

// beta is how far a loss-based sender's window falls after a loss
// (CUBIC's multiplicative decrease; reno's is 0.5).
const beta = 0.7

// flow is one direction's steady state.
type flow struct {
	seg     int           // payload bytes a segment
	goodput float64       // bit/s, all streams
	rttMean time.Duration // the senders' mean smoothed RTT
	lossPct float64       // bytes retransmitted / bytes sent × 100
}

// TCP runs a TCP test: each direction's streams settle to the path's
// steady state (flow) for the whole duration, reported each interval.
func (p *Path) TCP(ctx context.Context, cfg result.TCPConfig, progress func(result.TCPInterval)) (*result.TCP, error) {
	cfg, err := checked(cfg)
	if err != nil {
		return nil, err
	}
	if err := p.call(ctx, cfg, "%s", tcpCall(cfg)); err != nil {
		return nil, err
	}
	return p.tcp(cfg, progress), nil
}

// directions are the directions a TCP test sends in.
func directions(cfg result.TCPConfig) []vocab.Direction {
	if cfg.Bidir {
		return vocab.Both
	}
	return []vocab.Direction{vocab.Of(cfg.Reverse)}
}

// tcpCall is how Calls lists a TCP test.
func tcpCall(cfg result.TCPConfig) string {
	return fmt.Sprintf("tcp %v %d×%d B %s", directions(cfg), cfg.Streams, cfg.Window, cfg.CC)
}

// tcp is a TCP test of cfg (its defaults filled) on the path.
func (p *Path) tcp(cfg result.TCPConfig, progress func(result.TCPInterval)) *result.TCP {
	dirs := directions(cfg)
	f := p.flow(cfg)
	secs := cfg.Duration.Seconds()
	if cfg.Bytes > 0 && f.goodput > 0 {
		secs = float64(cfg.Bytes) * 8 / f.goodput
	}
	res := &result.TCP{Meta: meta("tcp"), Config: cfg}
	res.Summary = summary(cfg, f, dirs, secs, p.BaseRTT)
	for t := 0.0; t < secs-1e-9; t += cfg.Interval.Seconds() {
		end := math.Min(secs, t+cfg.Interval.Seconds())
		b := int64(f.goodput * (end - t) / 8)
		iv := result.TCPInterval{StartS: t, EndS: end, Bytes: b * int64(len(dirs)), ThroughputBps: f.goodput * float64(len(dirs))}
		res.Intervals = append(res.Intervals, iv)
		if progress != nil {
			progress(iv)
		}
	}
	return res
}

// summary is the test's summary: each direction's streams share the
// flow's goodput evenly; TCP's minimum RTT is the base.
func summary(cfg result.TCPConfig, f flow, dirs []vocab.Direction, secs float64, base time.Duration) result.TCPSummary {
	s := result.TCPSummary{MeasuredAt: "receiver", WindowRequested: cfg.Window, Directions: map[vocab.Direction]*result.TCPDirection{}}
	bytes := int64(f.goodput * secs / 8)
	sent := uint64(bytes) + 10*uint64(f.seg) // a stalled flow: ten full segments sent, none through
	if f.lossPct < 100 {
		sent = uint64(float64(bytes) / (1 - f.lossPct/100))
	}
	for _, dir := range dirs {
		d := &result.TCPDirection{Bytes: bytes, ThroughputBps: f.goodput, IntervalS: secs, BytesSent: sent, BytesRetrans: sent - uint64(bytes),
			RetransSegs: uint32((sent - uint64(bytes)) / uint64(f.seg)), EfficiencyPct: result.Efficiency(sent, sent-uint64(bytes)),
			RTTMinUs: base.Microseconds(), RTTMeanUs: f.rttMean.Microseconds()}
		s.Directions[dir] = d
		s.Bytes += d.Bytes
		s.ThroughputBps += d.ThroughputBps
		s.IntervalS = secs
		n := uint64(cfg.Streams)
		for i := range cfg.Streams {
			s.Streams = append(s.Streams, result.TCPStream{Stream: i, Direction: dir, Sender: map[vocab.Direction]string{vocab.Up: "client", vocab.Down: "server"}[dir],
				Bytes: bytes / int64(n), ThroughputBps: f.goodput / float64(n), RTTUs: f.rttMean.Microseconds(), MSSBytes: uint32(f.seg),
				BytesSent: sent / n, BytesRetrans: (sent - uint64(bytes)) / n, HasTCPInfo: true})
		}
	}
	s.EfficiencyPct = s.Directions[dirs[0]].EfficiencyPct
	return s
}

// flow is the steady state of cfg's streams on the path. A window below
// the BDP gets window / RTT; up to the BDP plus the queue, the
// bottleneck's rate with the excess queued; beyond (or unbounded), a
// loss-based sender's sawtooth between beta × (BDP + queue) and BDP +
// queue. A policer's bucket stands in for the queue and adds no delay.
// Random loss caps each stream at Mathis et al.'s rate.
func (p *Path) flow(cfg result.TCPConfig) flow {
	seg := frame.Segment(p.mtu())
	if cfg.MSS > 0 {
		seg = min(seg, cfg.MSS-frame.TCPTimestamps) // the kernel subtracts the timestamp option
	}
	if cfg.MSS == 0 && !p.ICMP && p.mtu() < localMTU {
		// A PMTUD black hole: full-size segments vanish, TCP stalls.
		return flow{seg: frame.Segment(localMTU), rttMean: p.BaseRTT, lossPct: 100}
	}
	ip := seg + frame.IPv4TCP + frame.TCPTimestamps // a segment's packet
	c := unlimited
	if d := p.drainIP(ip); !math.IsInf(d, 1) {
		c = d * float64(seg) / float64(ip)
	}
	rtt := p.BaseRTT.Seconds()
	bdp := c * rtt / 8
	q := float64(p.QueueBytes) * float64(seg) / float64(ip)
	queues := true
	if p.PoliceBps > 0 && (p.RateBps == 0 || p.PoliceBps < p.RateBps*float64(ip)/float64(ip+framing)) {
		q, queues = float64(p.BucketBytes)*float64(seg)/float64(ip), false
	}
	w := float64(cfg.Streams * cfg.Window)
	f := flow{seg: seg, rttMean: p.BaseRTT, lossPct: p.LossPct}
	// The window law below the overflow is the lab's ground truth's
	// (rfc6349.Model): window / RTT below the BDP; the bottleneck's rate,
	// the excess queued, up to the BDP plus the queue.
	tput, loaded, _, region := rfc6349.Model(c, p.BaseRTT, w, q)
	switch {
	case cfg.Window > 0 && region != vocab.Overflow:
		f.goodput = tput
		if queues {
			f.rttMean = loaded
		}
	default:
		util, queued, loss := sawtooth(bdp, q, float64(seg)*float64(cfg.Streams))
		f.goodput, f.lossPct = c*util, math.Max(f.lossPct, loss)
		if queues {
			f.rttMean += time.Duration(queued * 8 / c * 1e9)
		}
	}
	if p.LossPct > 0 {
		mathis := float64(seg) * 8 / rtt * math.Sqrt(1.5/(p.LossPct/100))
		f.goodput = math.Min(f.goodput, mathis*float64(cfg.Streams))
	}
	return f
}

// sawtooth is a loss-based sender's steady state on a pipe of bdp bytes
// with q bytes of queue: the window climbs by step bytes a round trip
// (a segment per stream) from beta × (bdp + q) to bdp + q, where a
// segment per stream is lost. It returns the link's utilisation, the
// mean bytes queued, and the retransmitted share in percent.
func sawtooth(bdp, q, step float64) (util, queued, lossPct float64) {
	top := bdp + q
	bottom := beta * top
	if bottom >= bdp {
		util, queued = 1, (bottom+top)/2-bdp
	} else {
		under := (bdp - bottom) * (bottom + bdp) / 2 / bdp // ∫ W/bdp over [bottom, bdp]
		util = (under + (top - bdp)) / (top - bottom)
		queued = (top - bdp) * (top - bdp) / 2 / (top - bottom)
	}
	rounds := math.Max(1, (top-bottom)/step)
	lossPct = step / (util * bdp * rounds) * 100
	return util, queued, math.Min(lossPct, 50)
}
