package controller

import (
	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/vocab"
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
	}
	if f.Partial && f.Verdict == "" {
		f.Verdict = VerdictPartial
	}
	return f
}

func tcpFigures(d *result.TCP) fleet.Figures {
	s := d.Summary
	dir := s.TCPDirection
	if up := s.Directions[vocab.Up]; up != nil {
		dir = *up
	} else if down := s.Directions[vocab.Down]; down != nil && len(s.Directions) == 1 {
		dir = *down
	}
	f := fleet.Figures{ThroughputBps: dir.ThroughputBps, Partial: s.Partial}
	if dir.RTTMinUs > 0 {
		f.RTTMs = float64(dir.RTTMinUs) / 1e3
	} else if s.RTTMinUs > 0 {
		f.RTTMs = float64(s.RTTMinUs) / 1e3
	}
	if dir.BytesSent > 0 {
		f.LossPct = float64(dir.BytesRetrans) / float64(dir.BytesSent) * 100
	}
	return f
}

func rfc6349Figures(d *result.RFC6349) fleet.Figures {
	f := fleet.Figures{RTTMs: d.RTT.BaselineMs, Partial: d.Partial, Verdict: VerdictFail}
	if d.Verdict.Pass {
		f.Verdict = VerdictPass
	}
	for _, dir := range vocab.Both {
		if t := d.Throughput[dir]; t != nil {
			f.ThroughputBps, f.BufferDelayPct = t.ActualBps, t.BufferDelayPct
			f.LossPct = max(0, 100-t.EfficiencyPct)
			break
		}
	}
	if d.Partial {
		f.Verdict = VerdictPartial
	}
	return f
}
