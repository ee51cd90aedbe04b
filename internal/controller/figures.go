package controller

import (
	"fmt"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/ping"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/rfc2544"
	"github.com/fullpipe/fullpipe/internal/vocab"
	"github.com/fullpipe/fullpipe/internal/y1564"
)

// Verdicts, as Figures and the metrics' label name them: a bounded set.
const (
	VerdictPass    = "pass"
	VerdictFail    = "fail"
	VerdictPartial = "partial"
)

// Figures are a document's headline numbers: throughput (up, or the
// only direction), minimum RTT, loss, RFC 6349's buffer delay and
// verdict, and whether it is partial.
func Figures(d result.Doc) fleet.Figures {
	var f fleet.Figures
	switch d := d.(type) {
	case *result.TCP:
		f = tcpFigures(d)
	case *result.UDP:
		s := d.Summary
		f = fleet.Figures{ThroughputBps: s.ReceiverRateBps, LossPct: s.LossPct, Partial: s.Partial}
	case *result.RTT:
		s := d.Summary
		f = fleet.Figures{RTTMs: s.MinUs / 1e3, LossPct: s.LossPct, Partial: s.Partial}
	case *result.STAMP: // the round trip without the reflector's residence; loss both ways together
		s := d.Summary
		f = fleet.Figures{RTTMs: s.RTT.MinUs / 1e3, LossPct: s.LossPct, Partial: s.Partial}
	case *result.RFC6349:
		f = rfc6349Figures(d)
	case *result.Trains:
		for _, dir := range vocab.Both {
			if td := d.Directions[dir]; td != nil && td.Verdict != nil {
				f.Verdict = string(td.Verdict.Kind)
				break
			}
		}
	case *result.WindowSweep:
		f.Partial = d.Partial
	case *result.MsgLenSweep:
		f.Partial = d.Partial
	case *result.Ping:
		f = pingFigures(d)
	case *result.RFC2544:
		f = rfc2544Figures(d)
	case *result.Y1564:
		f.Verdict, f.Partial = VerdictFail, d.Partial // FAIL and HOST-LIMITED
		if d.Verdict == y1564.Pass {
			f.Verdict = VerdictPass
		}
	}
	if f.Partial && f.Verdict == "" {
		f.Verdict = VerdictPartial
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
	f := fleet.Figures{RTTMs: d.RTT.BaselineMs, Partial: d.Partial, Verdict: VerdictFail}
	if d.Verdict.Pass {
		f.Verdict = VerdictPass
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
		f.Verdict = VerdictPartial
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

// MaxRTT is the longest round trip a path between two agents can have:
// a geostationary satellite hop is about 0.55 s, two in a row 1.1 s, and
// 2 s leaves room for a slow tail. A minimum RTT above it is no path's
// figure, and the scheduler never sizes a slot by it.
const MaxRTT = 2 * time.Second

// implausible says why a document's figures cannot be a path's, or "":
// a minimum RTT outside 0 to MaxRTT, a negative rate, delay or loss, a
// loss above 100 %, or a STAMP reflector that held packets for a
// negative time.
func implausible(f fleet.Figures, d result.Doc) string {
	if f.RTTMs < 0 || f.RTTMs > float64(MaxRTT.Milliseconds()) {
		return fmt.Sprintf("minimum RTT %g ms: no path's is outside 0 to %v", f.RTTMs, MaxRTT)
	}
	for _, v := range []struct {
		name string
		v    float64
	}{{"throughput", f.ThroughputBps}, {"ideal rate", f.IdealBps}, {"loaded RTT", f.RTTLoadedMs}, {"buffer delay", f.BufferDelayPct},
		{"down throughput", f.DownThroughputBps}, {"down ideal rate", f.DownIdealBps}, {"down loaded RTT", f.DownRTTLoadedMs},
		{"down buffer delay", f.DownBufferDelayPct}} {
		if v.v < 0 {
			return fmt.Sprintf("%s %g is negative", v.name, v.v)
		}
	}
	for _, l := range []float64{f.LossPct, f.DownLossPct} {
		if l < 0 || l > 100 {
			return fmt.Sprintf("loss %g %% is outside 0 to 100 %%", l)
		}
	}
	if s, ok := d.(*result.STAMP); ok && (s.Summary.Residence.MinUs < 0 || s.Summary.RTT.MinUs < 0) {
		return fmt.Sprintf("STAMP residence %g µs or RTT %g µs is negative", s.Summary.Residence.MinUs, s.Summary.RTT.MinUs)
	}
	return ""
}
