// Package sweep is the arithmetic of the window and message-length sweeps
// (design scenarios 7 and 5): regions, boundaries and what they imply,
// from measured points. No sockets, no clock: internal/method runs the
// sweeps and hands their points here.
package sweep

import (
	"fmt"
	"math"
	"sort"

	"github.com/fullpipe/fullpipe/internal/stats"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// Window sweep (design scenario 7): goodput, rate spread, loss and one-way
// delay increment against an exact window, and the four regions they fall
// in. Everything here is arithmetic on measured points; no sockets, no
// clock. docs/sweep.md explains the regions and the formulas.

// A point's region is one of vocab's: linear (window < BDP: goodput ∝
// window, no queue), transition (between the line and the plateau:
// jitter), saturation (goodput flat at the bottleneck, queue ∝ window −
// BDP), overflow (window > BDP + queue: loss).

// Thresholds of the classification, as fractions.
const (
	// saturationShare: a lossless point within 10 % of the plateau is on
	// it. Goodput at a fixed window varies by a few percent between runs
	// (slow start in a short point, probe traffic on a slow line).
	saturationShare = 0.90
	// lineShare: a point within 15 % of the line through the smallest
	// window's point (goodput = W × 8 / RTT) is on the line.
	lineShare = 0.85
)

// WindowPoint is one window of a sweep: what was measured at it and, after
// Classify, its region.
type WindowPoint struct {
	WindowBytes      int     `json:"window_bytes"`
	WindowMSS        float64 `json:"window_mss"`
	GoodputBps       float64 `json:"goodput_bps"`
	RateMeanBps      float64 `json:"rate_mean_bps"`
	RateP10Bps       float64 `json:"rate_p10_bps"`
	RateP90Bps       float64 `json:"rate_p90_bps"`
	RateStdDevBps    float64 `json:"rate_stddev_bps"`
	RateSamples      int     `json:"rate_samples"`
	BytesSent        uint64  `json:"bytes_sent"`
	BytesRetrans     uint64  `json:"bytes_retrans"`
	RetransSegs      uint32  `json:"retrans_segs"`
	LossPct          float64 `json:"loss_pct"`
	InflightMaxBytes int64   `json:"inflight_max_bytes"`
	// DelayIncrementMs is the median one-way delay increment in the data
	// direction (first DSCP class) during the load, from the probes sent
	// after the settle time; HasDelay says whether there was one.
	DelayIncrementMs    float64      `json:"delay_increment_ms"`
	DelayIncrementMaxMs float64      `json:"delay_increment_max_ms"`
	HasDelay            bool         `json:"has_delay"`
	Classes             []ClassDelay `json:"classes"`
	Region              vocab.Region `json:"region"`
	ModelIncrementMs    float64      `json:"model_increment_ms,omitempty"`
	Partial             bool         `json:"partial"`
}

// ClassDelay is one probe class's one-way delay increments at a point.
type ClassDelay struct {
	DSCP         int     `json:"dscp"`
	BaselineSent int     `json:"baseline_sent"`
	BaselineRecv int     `json:"baseline_received"`
	Sent         int     `json:"sent"`
	Received     int     `json:"received"`
	FwdMedianMs  float64 `json:"forward_median_ms"`
	FwdMaxMs     float64 `json:"forward_max_ms"`
	RevMedianMs  float64 `json:"reverse_median_ms"`
	RevMaxMs     float64 `json:"reverse_max_ms"`
}

// Probe is one stamped echo: the tester's send and receive times and the
// responder's receive time, each on its own monotonic clock.
type Probe struct {
	Class  int   // index into the DSCP classes
	SentNs int64 // tester clock
	RespNs int64 // responder clock
	RecvNs int64 // tester clock
}

// Forward is the probe's forward one-way delay plus an unknown constant
// clock offset; Reverse the same for the way back.
func (p Probe) Forward() int64 { return p.RespNs - p.SentNs }

// Reverse is the reply's one-way delay plus the opposite offset.
func (p Probe) Reverse() int64 { return p.RecvNs - p.RespNs }

// Increments returns, for probes of class c, the forward and reverse
// one-way delay increments in ms over the baseline: each probe's
// (t_resp − t_send) minus the least of the baseline's, and (t_recv −
// t_resp) minus the least of the baseline's. The clock offsets cancel, so
// the clocks need no synchronisation (only a drift small over the test).
// ok is false when the baseline has no probe of the class.
func Increments(baseline, loaded []Probe, c int) (fwd, rev []float64, ok bool) {
	minF, minR := int64(math.MaxInt64), int64(math.MaxInt64)
	for _, p := range baseline {
		if p.Class == c {
			minF, minR = min(minF, p.Forward()), min(minR, p.Reverse())
			ok = true
		}
	}
	if !ok {
		return nil, nil, false
	}
	for _, p := range loaded {
		if p.Class == c {
			fwd = append(fwd, float64(p.Forward()-minF)/1e6)
			rev = append(rev, float64(p.Reverse()-minR)/1e6)
		}
	}
	return fwd, rev, true
}

// RateSpread sets the point's instantaneous-rate figures from the rates
// of short intervals of the receiver's progress (bit/s).
func (p *WindowPoint) RateSpread(rates []float64) {
	if len(rates) == 0 {
		return
	}
	s := stats.Summarize(rates)
	sorted := append([]float64{}, rates...)
	sort.Float64s(sorted)
	p.RateMeanBps, p.RateStdDevBps, p.RateSamples = s.Mean, s.StdDev, len(rates)
	p.RateP10Bps, p.RateP90Bps = stats.Percentile(sorted, 10), stats.Percentile(sorted, 90)
}

// SweepAnalysis is what the regions imply about the path.
type SweepAnalysis struct {
	// PlateauBps is the mean goodput of the saturation points (the
	// bottleneck's TCP rate); 0 when no point saturated.
	PlateauBps float64 `json:"plateau_bps"`
	// LineRTTMs is the RTT of the linear law goodput = W × 8 / RTT fitted
	// through the origin over the linear points (it includes a full
	// segment's serialisation at the bottleneck, unlike a small probe's).
	LineRTTMs float64 `json:"line_rtt_ms"`
	// BDPBytes = PlateauBps × LineRTT / 8: where the line meets the
	// plateau, the window at the linear region's end.
	BDPBytes float64 `json:"bdp_bytes"`
	// LinearEndBytes is the largest linear window, SaturationStartBytes
	// the smallest saturated one, OverflowEdgeBytes the smallest window
	// from which every larger one lost data, LastLosslessBytes the
	// largest window below that edge (0 when absent).
	LinearEndBytes       int `json:"linear_end_bytes"`
	SaturationStartBytes int `json:"saturation_start_bytes"`
	OverflowEdgeBytes    int `json:"overflow_edge_bytes"`
	LastLosslessBytes    int `json:"last_lossless_bytes"`
	// QueueBytes = OverflowEdge − BDP (payload bytes the bottleneck queue
	// held before it overflowed); QueueMinBytes = LastLossless − BDP, the
	// same estimate from the other side of the edge.
	QueueBytes    float64 `json:"queue_bytes"`
	QueueMinBytes float64 `json:"queue_min_bytes"`
	// RateFromDelayBps is the bottleneck rate from the saturation points'
	// delay increments: 8 / slope of increment (s) against window (bytes),
	// least squares; 0 with fewer than two saturation points with delay.
	RateFromDelayBps float64  `json:"rate_from_delay_bps"`
	Notes            []string `json:"notes"`
}

// Classify sorts points by window, sets each point's Region (and for
// saturation points its ModelIncrementMs, (W − BDP + mss/2) × 8 /
// plateau) and returns the boundaries and
// what they imply. mss is the segment size the windows are counted in.
//
// Rules, in order: a point with retransmissions is overflow. The plateau
// P is the largest lossless goodput. A lossless point is on the line when
// its goodput is at least lineShare of W × 8 / RTT₀ (RTT₀ from the
// smallest window), at the plateau when at least saturationShare of P.
// On the line and (below the plateau or without a delay increment of a
// segment's time at P, mss × 8 / P): linear. Else at the plateau:
// saturation. Else: transition.
func Classify(points []WindowPoint, mss int) SweepAnalysis {
	var a SweepAnalysis
	sort.Slice(points, func(i, j int) bool { return points[i].WindowBytes < points[j].WindowBytes })
	if len(points) == 0 {
		return a
	}
	edge := len(points)
	for i := len(points) - 1; i >= 0 && points[i].RetransSegs > 0; i-- {
		edge = i
	}
	a.Notes = label(points, edge, mss)
	a.boundaries(points, edge)
	a.delayModel(points, mss)
	a.Notes = append(a.Notes, notes(a, points)...)
	return a
}

// label sets each point's region (the rules are Classify's); points from
// edge on are overflow. It returns notes on retransmissions below the
// edge.
func label(points []WindowPoint, edge, mss int) (notes []string) {
	plateau := 0.0
	for _, p := range points[:edge] {
		plateau = max(plateau, p.GoodputBps)
	}
	first := points[0]
	rtt0 := 0.0 // s
	if first.GoodputBps > 0 {
		rtt0 = float64(first.WindowBytes) * 8 / first.GoodputBps
	}
	pktS := 0.0
	if plateau > 0 {
		pktS = float64(mss) * 8 / plateau
	}
	for i := range points {
		p := &points[i]
		if i >= edge {
			p.Region = vocab.Overflow
			continue
		}
		if p.RetransSegs > 0 {
			// Below the edge a larger window lost nothing, so the queue did
			// not overflow here: an isolated retransmission is TCP's own,
			// typically a tail-loss probe fired at 2 × a smoothed RTT that
			// still holds the SYN's short sample when the first flight
			// waits behind a slow line.
			notes = append(notes, fmt.Sprintf("%d B: %d retransmitted segment(s) below the overflow edge, not counted as overflow (larger windows lost nothing; likely a spurious retransmission such as a tail-loss probe)", p.WindowBytes, p.RetransSegs))
		}
		line := rtt0 > 0 && p.GoodputBps >= lineShare*float64(p.WindowBytes)*8/rtt0
		sat := plateau > 0 && p.GoodputBps >= saturationShare*plateau
		queued := p.HasDelay && p.DelayIncrementMs/1e3 >= pktS
		switch {
		case line && (!sat || !queued):
			p.Region = vocab.Linear
		case sat:
			p.Region = vocab.Saturation
		default:
			p.Region = vocab.Transition
		}
	}
	return notes
}

// boundaries fits the line through the origin over the linear points
// (least squares: its slope is 8 / RTT), averages the plateau over the
// saturation points, and reads the BDP, the overflow edge and the queue
// from them.
func (a *SweepAnalysis) boundaries(points []WindowPoint, edge int) {
	var sgw, sww float64
	var satSum float64
	var satN int
	for _, p := range points {
		switch p.Region {
		case vocab.Linear:
			w := float64(p.WindowBytes)
			sgw += p.GoodputBps * w
			sww += w * w
			a.LinearEndBytes = p.WindowBytes
		case vocab.Saturation:
			satSum += p.GoodputBps
			satN++
			if a.SaturationStartBytes == 0 {
				a.SaturationStartBytes = p.WindowBytes
			}
		}
	}
	if satN > 0 {
		a.PlateauBps = satSum / float64(satN)
	}
	if sgw > 0 {
		a.LineRTTMs = 8 * sww / sgw * 1e3
	}
	if a.PlateauBps > 0 && a.LineRTTMs > 0 {
		a.BDPBytes = a.PlateauBps * a.LineRTTMs / 1e3 / 8
	}
	if edge < len(points) {
		a.OverflowEdgeBytes = points[edge].WindowBytes
		if edge > 0 {
			a.LastLosslessBytes = points[edge-1].WindowBytes
		}
		if a.BDPBytes > 0 {
			a.QueueBytes = float64(a.OverflowEdgeBytes) - a.BDPBytes
			if a.LastLosslessBytes > 0 {
				a.QueueMinBytes = max(0, float64(a.LastLosslessBytes)-a.BDPBytes)
			}
		}
	}
}

// delayModel sets each saturation point's model increment and fits the
// rate from the measured ones. In saturation, data segments wait (W −
// BDP) × 8 / P on average (Little's law over the loop: W = P/8 ×
// cycle). A probe at a random time waits for the time-average unfinished
// work, which is that plus the mean residual of the segment in service,
// half a segment's time. The fitted slope gives the rate back.
func (a *SweepAnalysis) delayModel(points []WindowPoint, mss int) {
	var xs, ys []float64
	for i := range points {
		p := &points[i]
		if p.Region != vocab.Saturation || a.BDPBytes == 0 {
			continue
		}
		p.ModelIncrementMs = (max(0, float64(p.WindowBytes)-a.BDPBytes) + float64(mss)/2) * 8 / a.PlateauBps * 1e3
		if p.HasDelay {
			xs = append(xs, float64(p.WindowBytes))
			ys = append(ys, p.DelayIncrementMs/1e3)
		}
	}
	if slope, ok := fitSlope(xs, ys); ok && slope > 0 {
		a.RateFromDelayBps = 8 / slope
	}
}

// fitSlope is the least-squares slope of y on x.
func fitSlope(xs, ys []float64) (float64, bool) {
	n := float64(len(xs))
	if len(xs) < 2 {
		return 0, false
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0, false
	}
	return (n*sxy - sx*sy) / d, true
}

func notes(a SweepAnalysis, points []WindowPoint) []string {
	var n []string
	if a.LinearEndBytes == 0 {
		n = append(n, "no linear point: the smallest window already fills the bottleneck; start the sweep lower (--from)")
	}
	if a.SaturationStartBytes == 0 {
		n = append(n, "no saturation point: the largest window does not fill the bottleneck; sweep higher (--to)")
	}
	if a.OverflowEdgeBytes == 0 {
		n = append(n, "no overflow: the queue holds more than the largest window beyond the BDP; sweep higher (--to) to size it")
	}
	for _, p := range points {
		if p.Region == vocab.Transition {
			n = append(n, "transition points: goodput below both the line and the plateau, as delay jitter makes the window refill late")
			break
		}
	}
	return n
}

// ClassDelays summarises each probe class's increments at a point and
// returns the data direction's median and maximum for the first class
// (forward for data up, reverse for data down).
// baseSent and sent count the probes sent per class.
func ClassDelays(dscps []int, baseline, loaded []Probe, baseSent, sent []int, data vocab.Direction) (classes []ClassDelay, medianMs, maxMs float64, ok bool) {
	for c, d := range dscps {
		cd := ClassDelay{DSCP: d, BaselineSent: baseSent[c], Sent: sent[c]}
		for _, p := range baseline {
			if p.Class == c {
				cd.BaselineRecv++
			}
		}
		fwd, rev, have := Increments(baseline, loaded, c)
		if have && len(fwd) > 0 {
			cd.Received = len(fwd)
			f, r := stats.Summarize(fwd), stats.Summarize(rev)
			cd.FwdMedianMs, cd.FwdMaxMs, cd.RevMedianMs, cd.RevMaxMs = f.Median, f.Max, r.Median, r.Max
			if c == 0 {
				ok = true
				medianMs, maxMs = cd.FwdMedianMs, cd.FwdMaxMs
				if data == vocab.Down {
					medianMs, maxMs = cd.RevMedianMs, cd.RevMaxMs
				}
			}
		}
		classes = append(classes, cd)
	}
	return classes, medianMs, maxMs, ok
}
