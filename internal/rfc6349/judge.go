package rfc6349

import (
	"fmt"
	"math"
	"time"

	"github.com/fullpipe/fullpipe/internal/train"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// Thresholds decide pass or fail. Defaults: actual ≥ 95 % of ideal and
// TCP Efficiency ≥ 99 %. Why: a clean path gives a single Linux flow 97-99
// % of the ideal in our lab (slow start and delayed ACKs cost the rest),
// so 95 % leaves room for measurement noise but not for a real problem;
// 1 % of bytes retransmitted already costs a loss-based sender a large
// share of its rate on a long path (Mathis: rate ∝ 1/√loss).
type Thresholds struct {
	MinActualPct     float64 `json:"min_actual_pct"`
	MinEfficiencyPct float64 `json:"min_efficiency_pct"`
}

// DefaultThresholds are RFC 6349 pass/fail defaults fullpipe uses.
var DefaultThresholds = Thresholds{MinActualPct: 95, MinEfficiencyPct: 99}

// Model predicts throughput, RTT and Buffer Delay % of a window of w bytes
// on a path of bb bit/s, base RTT rtt and a bottleneck queue of q bytes.
// It is the reference the lab checks the method against.
func Model(bbBps float64, rtt time.Duration, w, q float64) (tputBps float64, loadedRTT time.Duration, bufferDelayPct float64, region vocab.Region) {
	bdp := BDPBytes(bbBps, rtt)
	switch {
	case w < bdp:
		return WindowThroughput(w, rtt), rtt, 0, vocab.Linear
	case w <= bdp+q:
		r := time.Duration(w * 8 / bbBps * 1e9)
		return bbBps, r, BufferDelayPct(r, rtt), vocab.Saturation
	}
	r := time.Duration((bdp + q) * 8 / bbBps * 1e9)
	return bbBps, r, BufferDelayPct(r, rtt), vocab.Overflow
}

// ShapingEvidence is what the step measured with several connections at
// and above the CIR.
type ShapingEvidence struct {
	LossPct        float64   // retransmitted / sent over all connections
	BufferDelayPct float64   // loaded vs baseline RTT
	PerConnBps     []float64 // each connection's goodput
	TotalBps       float64
	CIRBps         float64
	// RateSpreadPct is how much the connections' total rate swings over
	// time (RateSpreadPct of the receiver's 100 ms rates); a policer's
	// drops make TCP's sawtooth, a shaper's queue smooths it. Evidence
	// only, not judged: in short steps it varies too much to tell the two
	// apart (lab: policed 7-25 %, shaped 2.6-10.7 %). The verdict rests
	// on loss and delay. Negative: not measured.
	RateSpreadPct float64
	// Trains is what back-to-back packet trains showed (nil: not run).
	// When they name a policer, a queue or a clean path, that decides;
	// the TCP figures above are supporting evidence.
	Trains *train.Verdict
	// BDPBytes is the path's BDP, to tell a small queue from one that
	// holds TCP's bursts.
	BDPBytes float64
}

// RateSpreadPct is the coefficient of variation of rates in percent:
// population standard deviation / mean × 100; 0 for fewer than 2 rates
// or a zero mean.
func RateSpreadPct(rates []float64) float64 {
	if len(rates) < 2 {
		return 0
	}
	var s float64
	for _, r := range rates {
		s += r
	}
	mean := s / float64(len(rates))
	if mean == 0 {
		return 0
	}
	var v float64
	for _, r := range rates {
		v += (r - mean) * (r - mean)
	}
	return math.Sqrt(v/float64(len(rates))) / mean * 100
}

// Fairness is Jain's index of the per-connection rates: 1 when equal,
// 1/n when one connection takes everything.
func Fairness(rates []float64) float64 {
	var s, s2 float64
	for _, r := range rates {
		s += r
		s2 += r * r
	}
	if s2 == 0 {
		return 1
	}
	return s * s / (float64(len(rates)) * s2)
}

// ClassifyShaping tells a policer from a shaper from a path that does
// neither. Packet trains decide when they were run and tell (see package
// train: a policer passes its bucket unspaced then only its rate, a queue
// spaces and delays); TCP's loss, delay and fairness at and above the CIR
// are then supporting evidence, and they decide alone only without a
// train verdict (a policer drops rather than queues, a shaper queues). It
// returns the verdict and the evidence in words.
func ClassifyShaping(e ShapingEvidence) (vocab.Shaping, string) {
	fair := Fairness(e.PerConnBps)
	ev := fmt.Sprintf("loss %.2f %%, buffer delay %.0f %%, fairness %.2f (Jain; 1 = equal shares), total %.1f Mbit/s against a CIR of %.1f Mbit/s",
		e.LossPct, e.BufferDelayPct, fair, e.TotalBps/1e6, e.CIRBps/1e6)
	if e.RateSpreadPct >= 0 {
		ev += fmt.Sprintf(", rate spread %.1f %% over 100 ms windows", e.RateSpreadPct)
	}
	if v, why, ok := trainShaping(e); ok {
		return v, why + "; TCP with several connections: " + ev
	}
	switch {
	case e.CIRBps > 0 && e.TotalBps > 1.05*e.CIRBps:
		return vocab.None, "nothing holds the traffic to the CIR: the connections together carried more than it (" + ev + ")"
	case e.LossPct >= 0.5 && e.BufferDelayPct < 25 && e.CIRBps > 0 && e.TotalBps < 0.5*e.CIRBps:
		return vocab.None, "loss without queueing, but the connections carried less than half the CIR: not a policer holding the rate, a queue too small for TCP's bursts (" + ev + ")"
	case e.LossPct >= 0.5 && e.BufferDelayPct < 25:
		return vocab.Policed, "policed: packets above the rate are dropped rather than queued (" + ev + ")"
	case e.BufferDelayPct >= 25 && e.LossPct < 0.5:
		return vocab.Shaped, "shaped: packets above the rate wait in a queue (" + ev + ")"
	case e.BufferDelayPct >= 25:
		return vocab.Shaped, "shaped with a queue that also overflows (" + ev + ")"
	}
	return vocab.None, "neither policing nor shaping seen at this load (" + ev + ")"
}

// trainShaping is the verdict of the packet trains, with the fix that
// fits; ok is false when they were not run or did not tell.
func trainShaping(e ShapingEvidence) (vocab.Shaping, string, bool) {
	t := e.Trains
	if t == nil {
		return vocab.None, "", false
	}
	switch t.Kind {
	case train.Policer:
		fix := fmt.Sprintf("shape to %.1f Mbit/s at your CPE (a shaper with a queue of at least the BDP), or ask the provider for a committed burst of at least the BDP", t.RateBps.Value/1e6)
		if e.BDPBytes > 0 {
			fix = fmt.Sprintf("shape to %.1f Mbit/s at your CPE (a shaper with a queue of at least the BDP, %.0f B), or ask the provider for a committed burst of at least %.0f B", t.RateBps.Value/1e6, e.BDPBytes, e.BDPBytes)
		}
		return vocab.Policed, fmt.Sprintf("policed at %.1f ± %.1f Mbit/s with a bucket of %.0f ± %.0f B (%.1f ms of that rate): %s. Fix: %s",
			t.RateBps.Value/1e6, t.RateBps.Err/1e6, t.BucketBytes.Value, t.BucketBytes.Err, t.BucketBytes.Value*8/t.RateBps.Value*1e3, t.Why, fix), true
	case train.Queue:
		q := fmt.Sprintf("a queue of %.0f ± %.0f B (%.1f ms at %.1f Mbit/s)", t.QueueBytes.Value, t.QueueBytes.Err, t.QueueBytes.Value*8/t.RateBps.Value*1e3, t.RateBps.Value/1e6)
		if t.QueueAtLeast {
			q = fmt.Sprintf("a queue of at least %.0f B (%.1f ms at %.1f Mbit/s)", t.QueueBytes.Value, t.QueueBytes.Value*8/t.RateBps.Value*1e3, t.RateBps.Value/1e6)
		}
		if !t.QueueAtLeast && e.BDPBytes > 0 && train.SmallBuffer(t.QueueBytes.Value, e.BDPBytes) {
			return vocab.Shaped, fmt.Sprintf("shaped, but by %s, %.0f %% of the BDP (%.0f B): too small for TCP's bursts, since a CUBIC sender needs %.0f %% of the BDP to keep the link busy after a loss: %s. Fix: ask the provider for a buffer of at least the BDP",
				q, t.QueueBytes.Value/e.BDPBytes*100, e.BDPBytes, train.SmallBufferShare*100, t.Why), true
		}
		return vocab.Shaped, fmt.Sprintf("shaped: %s holds the rate: %s", q, t.Why), true
	case train.Clean:
		return vocab.None, "no limit below the sender's rate: " + t.Why, true
	case train.Lossy:
		return vocab.None, "no rate limit, but loss on the line: " + t.Why, true
	case train.Undecided:
		// TCP's loss without queueing reads the same for both (and for a
		// buffer too small), so it decides nothing here either.
		return vocab.Undecided, "cannot tell: the bucket, if there is one, holds too few packets to tell a policer from loss on the line, so no cause is named for the loss (the trains: " + t.Why + ")", true
	}
	return vocab.None, "", false
}

// SmallQueue reports whether the trains found a queue too small for the
// BDP, with the sentence that says so.
func (e ShapingEvidence) SmallQueue() bool {
	t := e.Trains
	return t != nil && t.Kind == train.Queue && !t.QueueAtLeast && e.BDPBytes > 0 && train.SmallBuffer(t.QueueBytes.Value, e.BDPBytes)
}

// Finding is one diagnosed cause, in plain words with the numbers.
type Finding struct {
	Cause  vocab.Cause `json:"cause"`
	Detail string      `json:"detail"` // the sentence a user reads
}

// Evidence is what the method measured, for the diagnosis.
type Evidence struct {
	BBBps          float64       // bottleneck bandwidth
	RTT            time.Duration // baseline
	MaxWindowBytes float64       // the user's hosts' largest window (0 = none)
	IdealBps       float64
	ActualBps      float64
	EfficiencyPct  float64
	BufferDelayPct float64
	// LineLossPct is the loss of the paced UDP stream at the CIR (step 2):
	// no bursts, no queue overflow, so what is lost is lost on the line.
	LineLossPct float64
	// LineBER is that loss read as bit errors on the streams' packets
	// (0: not read).
	LineBER       float64
	Shaping       vocab.Shaping
	ShapingDetail string
	// Trains is the packet trains' verdict (nil: not run): a policer, or
	// a queue too small for the BDP, named from the physics rather than
	// guessed from TCP's loss and delay.
	Trains           *train.Verdict
	MTUUp, MTUDown   int  // path MTU found (0 = not measured)
	LocalMTU         int  // the interface MTU
	ICMPSeen         bool // an ICMP frag-needed came back
	SndbufLimitedPct float64
	// BBHost and ThroughputHost say how the sending host held step 2's
	// paced streams or the throughput test back (SenderHost.Limited;
	// empty: it did not).
	BBHost, ThroughputHost string
}

// Diagnose names the likely causes of a shortfall, most specific first.
func Diagnose(e Evidence, th Thresholds) []Finding {
	var f []Finding
	bdp := BDPBytes(e.BBBps, e.RTT)
	if e.MaxWindowBytes > 0 && e.MaxWindowBytes < bdp {
		f = append(f, Finding{vocab.CauseWindow, fmt.Sprintf(
			"window too small: the hosts' largest window of %.0f B allows %.1f Mbit/s at %.1f ms RTT, but the path needs %.0f B (the BDP) for %.1f Mbit/s: enable window scaling / raise the buffers, or use %d connections",
			e.MaxWindowBytes, WindowThroughput(e.MaxWindowBytes, e.RTT)/1e6, float64(e.RTT)/1e6, bdp, e.BBBps/1e6, Connections(bdp, e.MaxWindowBytes))})
	}
	if e.SndbufLimitedPct >= 20 {
		f = append(f, Finding{vocab.CauseHost, fmt.Sprintf(
			"host limit: the sender was held back by its send buffer %.0f %% of the time; raise net.core.wmem_max / tcp_wmem (the network is not to blame)", e.SndbufLimitedPct)})
	}
	f = append(f, hostFindings(e, th)...)
	switch {
	case e.Shaping == vocab.Policed && (e.BBHost != "" || e.ThroughputHost != ""):
		// Trains read a policer from a tail sent at the head's pace that
		// arrived slower; a sender starved of CPU in the steps before
		// and after the trains sends in gaps and catch-up bursts that
		// overflow the queue, which reads the same. Its reading is no
		// evidence against the network here.
		why := e.ThroughputHost
		if why == "" {
			why = e.BBHost
		}
		f = append(f, Finding{vocab.CauseHost, "the packet trains' tails read like a policer's, but the tester was starved of CPU in the steps around them (" + why + "): a starved sender's gaps and catch-up bursts read the same, so that reading is set aside; repeat with the host idle (trains said: " + e.ShapingDetail + ")"})
	case e.Shaping == vocab.Policed:
		f = append(f, Finding{vocab.CausePolicer, e.ShapingDetail})
	}
	// A policer named by the trains drops a paced stream's bursts too
	// (a sender's timer overshoot sends a few packets at once), so the
	// quarter-CIR stream's loss is then no evidence of a lossy line; nor
	// when the trains could not tell a policer of a few packets from one.
	lossy := e.LineLossPct >= 0.05 && (e.Trains == nil || (e.Trains.Kind != train.Policer && e.Trains.Kind != train.Undecided))
	if lossy {
		ber := ""
		if e.LineBER > 0 {
			ber = fmt.Sprintf(" (if all bit errors: BER %.2g)", e.LineBER)
		}
		f = append(f, Finding{vocab.CauseLoss, fmt.Sprintf(
			"lossy line: paced UDP streams lost %.3f %% of their packets at a quarter of the CIR as at the full CIR: loss that does not grow with the load is random loss or bit errors on the path%s", e.LineLossPct, ber)})
	}
	short := e.ActualBps < e.IdealBps*th.MinActualPct/100
	// The trains, when they named a policer or a queue, decide whether
	// the buffer is the cause; TCP's retransmissions without queueing are
	// the guess only without them. When they could not tell a policer of
	// a few packets from line loss, that guess would name a cause they
	// could not: none is named.
	named := e.Trains != nil && (e.Trains.Kind == train.Policer || e.Trains.Kind == train.Queue || e.Trains.Kind == train.Undecided)
	switch sq := (ShapingEvidence{Trains: e.Trains, BDPBytes: bdp}); {
	case sq.SmallQueue():
		t := e.Trains
		f = append(f, Finding{vocab.CauseBuffer, fmt.Sprintf(
			"buffer too small for the BDP: packet trains found a queue of %.0f ± %.0f B (%.1f ms) in front of %.1f Mbit/s, %.0f %% of the BDP (%.0f B); TCP got %.1f of %.1f Mbit/s with %.2f %% of bytes retransmitted. Ask the provider for a buffer of at least the BDP",
			t.QueueBytes.Value, t.QueueBytes.Err, t.QueueBytes.Value*8/t.RateBps.Value*1e3, t.RateBps.Value/1e6, t.QueueBytes.Value/bdp*100, bdp, e.ActualBps/1e6, e.IdealBps/1e6, 100-e.EfficiencyPct)})
	case named: // a policer (found above) or a queue that holds the BDP: not the buffer
	case (short || e.EfficiencyPct < th.MinEfficiencyPct) && e.EfficiencyPct < 99.95 && e.Shaping != vocab.Policed && e.BufferDelayPct < 25 && !lossy:
		f = append(f, Finding{vocab.CauseBuffer, fmt.Sprintf(
			"buffer too small for the BDP: at the full window %.2f %% of bytes were retransmitted while the RTT rose only %.0f %%, and TCP got %.1f of %.1f Mbit/s; a bottleneck queue that holds a BDP (%.0f B) would absorb the bursts", 100-e.EfficiencyPct, e.BufferDelayPct, e.ActualBps/1e6, e.IdealBps/1e6, bdp)})
	}
	for _, d := range []struct {
		dir vocab.Direction
		mtu int
	}{{vocab.Up, e.MTUUp}, {vocab.Down, e.MTUDown}} {
		if d.mtu > 0 && e.LocalMTU > 0 && d.mtu < e.LocalMTU {
			how := "and ICMP fragmentation-needed came back, so TCP adapts"
			if !e.ICMPSeen {
				how = "and no ICMP came back: a PMTUD black hole; large segments vanish until TCP probes down (set the MSS or fix ICMP filtering)"
			}
			f = append(f, Finding{vocab.CauseMTU, fmt.Sprintf("path MTU %s is %d B, below the interface's %d B, %s", d.dir, d.mtu, e.LocalMTU, how)})
		}
	}
	return f
}

// hostFindings names the sending host as the limit, with its evidence.
func hostFindings(e Evidence, th Thresholds) []Finding {
	var f []Finding
	if e.BBHost != "" {
		f = append(f, Finding{vocab.CauseHost, fmt.Sprintf(
			"host limit in step 2: %s. The bottleneck bandwidth it read (%.1f Mbit/s), and the BDP, windows and ideal built on it, are the host's limit, not the path's: repeat with the host idle, or from a faster one", e.BBHost, e.BBBps/1e6)})
	}
	if e.ThroughputHost != "" && e.ActualBps < e.IdealBps*th.MinActualPct/100 {
		// With no loss and no queueing on the path, the host is the only
		// cause; with them, it is one that accounts for the shortfall.
		whose := "accounted for by the host, whatever else the path did: repeat with the host idle before blaming the network"
		if e.EfficiencyPct >= th.MinEfficiencyPct && e.BufferDelayPct < 10 {
			whose = "the host's, not the network's (the path showed no loss and no queueing): repeat with the host idle"
		}
		f = append(f, Finding{vocab.CauseHost, fmt.Sprintf(
			"host limit: during the throughput test %s. The shortfall (%.1f of %.1f Mbit/s) is %s",
			e.ThroughputHost, e.ActualBps/1e6, e.IdealBps/1e6, whose)})
	}
	return f
}

// Pass applies the thresholds to one direction.
func Pass(idealBps, actualBps, efficiencyPct float64, th Thresholds) (bool, string) {
	pct := actualBps / idealBps * 100
	switch {
	case math.IsNaN(pct) || idealBps <= 0:
		return false, "no ideal throughput to compare with"
	case pct < th.MinActualPct:
		return false, fmt.Sprintf("actual %.1f Mbit/s is %.1f %% of the ideal %.1f Mbit/s (threshold %.0f %%)", actualBps/1e6, pct, idealBps/1e6, th.MinActualPct)
	case efficiencyPct < th.MinEfficiencyPct:
		return false, fmt.Sprintf("TCP Efficiency %.2f %% is below %.0f %%", efficiencyPct, th.MinEfficiencyPct)
	}
	return true, fmt.Sprintf("actual %.1f Mbit/s is %.1f %% of the ideal %.1f Mbit/s, TCP Efficiency %.2f %%", actualBps/1e6, pct, idealBps/1e6, efficiencyPct)
}
