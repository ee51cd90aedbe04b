package kinds

import (
	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/ping"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/rfc2544"
	"github.com/fullpipe/fullpipe/internal/vocab"
	"github.com/fullpipe/fullpipe/internal/y1564"
)

// The figures column: a document's headline numbers for the store, the
// mesh and the metrics (throughput, up or the only direction; minimum
// RTT; loss; RFC 6349's buffer delay; a verdict; whether it is partial).

// Figures are d's headline figures, by its kind's row; none for a
// document no row has, or a kind without figures (mtu). A partial
// document with no verdict of its own is "partial".
func Figures(d result.Doc) fleet.Figures {
	var f fleet.Figures
	if k, ok := Of(d); ok && k.figures != nil {
		f = k.figures(d)
	}
	if f.Partial && f.Verdict == "" {
		f.Verdict = fleet.VerdictPartial
	}
	return f
}

// figuresOf is a kind's figures function as the table holds it.
func figuresOf[D result.Doc](f func(D) fleet.Figures) func(result.Doc) fleet.Figures {
	return func(d result.Doc) fleet.Figures { return f(d.(D)) }
}

func udpFigures(d *result.UDP) fleet.Figures {
	s := d.Summary
	return fleet.Figures{ThroughputBps: s.ReceiverRateBps, LossPct: s.LossPct, Partial: s.Partial}
}

func rttFigures(d *result.RTT) fleet.Figures {
	s := d.Summary
	return fleet.Figures{RTTMs: s.MinUs / 1e3, LossPct: s.LossPct, Partial: s.Partial}
}

// stampFigures: the round trip without the reflector's residence; loss
// both ways together.
func stampFigures(d *result.STAMP) fleet.Figures {
	s := d.Summary
	return fleet.Figures{RTTMs: s.RTT.MinUs / 1e3, LossPct: s.LossPct, Partial: s.Partial}
}

// trainsFigures: the first direction's verdict (clean, queue, policer, ...).
func trainsFigures(d *result.Trains) fleet.Figures {
	var f fleet.Figures
	for _, dir := range vocab.Both {
		if td := d.Directions[dir]; td != nil && td.Verdict != nil {
			f.Verdict = string(td.Verdict.Kind)
			break
		}
	}
	return f
}

func windowSweepFigures(d *result.WindowSweep) fleet.Figures {
	return fleet.Figures{Partial: d.Partial}
}

func msgLenSweepFigures(d *result.MsgLenSweep) fleet.Figures {
	return fleet.Figures{Partial: d.Partial}
}

// y1564Figures: FAIL and HOST-LIMITED are both fail.
func y1564Figures(d *result.Y1564) fleet.Figures {
	f := fleet.Figures{Verdict: fleet.VerdictFail, Partial: d.Partial}
	if d.Verdict == y1564.Pass {
		f.Verdict = fleet.VerdictPass
	}
	return f
}

// tcpFigures: the up direction, or the only one (a reverse test's is
// down), in the plain fields; the down direction's too when the test
// was bidirectional. The loaded RTT is the mean smoothed RTT of the
// direction's streams, else the latency probes' mean under load.
func tcpFigures(d *result.TCP) fleet.Figures {
	s := d.Summary
	dir := s.TCPDirection
	up, down := s.Directions[vocab.Up], s.Directions[vocab.Down]
	switch {
	case up != nil:
		dir = *up
	case down != nil && len(s.Directions) == 1:
		dir, down = *down, nil
	}
	f := fleet.Figures{ThroughputBps: dir.ThroughputBps, LossPct: retransPct(dir), Partial: s.Partial}
	if dir.RTTMinUs > 0 {
		f.RTTMs = float64(dir.RTTMinUs) / 1e3
	} else if s.RTTMinUs > 0 {
		f.RTTMs = float64(s.RTTMinUs) / 1e3
	}
	f.RTTLoadedMs = float64(dir.RTTMeanUs) / 1e3
	if f.RTTLoadedMs == 0 && s.LatencyLoaded != nil && s.LatencyLoaded.Received > 0 {
		f.RTTLoadedMs = s.LatencyLoaded.MeanUs / 1e3
	}
	if up != nil && down != nil {
		f.DownThroughputBps, f.DownLossPct = down.ThroughputBps, retransPct(*down)
		f.DownRTTLoadedMs = float64(down.RTTMeanUs) / 1e3
	}
	return f
}

// retransPct is a direction's retransmitted share of the bytes sent.
func retransPct(d result.TCPDirection) float64 {
	if d.BytesSent == 0 {
		return 0
	}
	return float64(d.BytesRetrans) / float64(d.BytesSent) * 100
}

// rfc6349Figures: step 4's throughput test of the up direction, or the
// only one, in the plain fields, the down direction's when it ran both
// ways. Loss is 100 − TCP efficiency; the loaded RTT is the average RTT
// of the transfer, which the buffer delay is measured from (RFC 6349
// §4.3: baseline × (1 + buffer delay / 100)).
func rfc6349Figures(d *result.RFC6349) fleet.Figures {
	f := fleet.Figures{RTTMs: d.RTT.BaselineMs, Partial: d.Partial, Verdict: fleet.VerdictFail}
	if d.Verdict.Pass {
		f.Verdict = fleet.VerdictPass
	}
	var rows []*result.ThroughputRow
	for _, dir := range vocab.Both {
		if t := d.Throughput[dir]; t != nil {
			rows = append(rows, t)
		}
	}
	loaded := func(t *result.ThroughputRow) float64 {
		if d.RTT.BaselineMs <= 0 || t.ActualBps <= 0 {
			return 0
		}
		return d.RTT.BaselineMs * (1 + t.BufferDelayPct/100)
	}
	if len(rows) > 0 {
		t := rows[0]
		f.ThroughputBps, f.IdealBps, f.BufferDelayPct = t.ActualBps, t.IdealBps, t.BufferDelayPct
		f.LossPct, f.RTTLoadedMs = max(0, 100-t.EfficiencyPct), loaded(t)
	}
	if len(rows) == 2 {
		t := rows[1]
		f.DownThroughputBps, f.DownBufferDelayPct = t.ActualBps, t.BufferDelayPct
		f.DownLossPct, f.DownRTTLoadedMs = max(0, 100-t.EfficiencyPct), loaded(t)
		if t.IdealBps != f.IdealBps {
			f.DownIdealBps = t.IdealBps
		}
	}
	if d.Partial {
		f.Verdict = fleet.VerdictPartial
	}
	return f
}

// pingFigures: the single-ended run's minimum RTT and loss (none when
// the losses were an ICMP rate limiter's refusals, not the path's), the
// rate search's zero-loss rate in frame bit/s, and the verdict's kind.
func pingFigures(d *result.Ping) fleet.Figures {
	f := fleet.Figures{Verdict: string(d.Verdict.Kind), Partial: d.Partial}
	if s := d.Summary; s != nil {
		f.RTTMs = s.MinUs / 1e3
		if d.Verdict.Kind != ping.RateLimited {
			f.LossPct = s.LossPct
		}
	}
	if d.Search != nil {
		f.ThroughputBps = d.Search.ZeroLossBps
	}
	return f
}

// rfc2544Figures: per direction, the zero-loss throughput of the largest
// frame size measured (sizes are in ascending order), at the line's layer (frames with preamble and gap,
// rfc2544.WireBps), against the line rate as the ideal, so % of ideal is
// % of the line; on a lossy line (zero-loss throughput not meaningful)
// the loss its fit read instead.
func rfc2544Figures(d *result.RFC2544) fleet.Figures {
	var f fleet.Figures
	for _, dir := range vocab.Both {
		rd := d.Directions[dir]
		if rd == nil {
			continue
		}
		var tp, loss float64
		for _, s := range rd.Sizes {
			if s.Throughput != nil && s.Throughput.ZeroLossFPS > 0 {
				tp = rfc2544.WireBps(s.Throughput.ZeroLossFPS, s.FrameBytes)
			}
		}
		if rd.Lossy != nil && rd.Lossy.Sent > 0 {
			tp, loss = 0, float64(rd.Lossy.Lost)/float64(rd.Lossy.Sent)*100
		}
		if dir == vocab.Down { // the same line both ways: IdealBps serves
			f.DownThroughputBps, f.DownLossPct = tp, loss
		} else {
			f.ThroughputBps, f.LossPct = tp, loss
		}
		f.IdealBps = float64(d.Config.LineRateBps)
	}
	return f
}
