package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// rfc6349Text writes the verdict first, then each step's figures and the
// diagnosis.
func rfc6349Text(w io.Writer, r *result.RFC6349) {
	verdict := "PASS"
	if !r.Verdict.Pass {
		verdict = "FAIL"
	}
	if r.Partial {
		verdict = "INCOMPLETE (" + r.Reason + ")"
	}
	fmt.Fprintf(w, "\n== RFC 6349 verdict: %s\n", verdict)
	for _, s := range r.Verdict.Reasons {
		fmt.Fprintf(w, "   %s\n", s)
	}
	if len(r.Diagnosis) > 0 {
		fmt.Fprintln(w, "\nDiagnosis:")
		for _, f := range r.Diagnosis {
			fmt.Fprintf(w, "  - [%s] %s\n", f.Cause, f.Detail)
		}
	}
	for _, s := range r.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", s)
	}
	fmt.Fprintf(w, "\nPath: MTU up %d B, down %d B (ICMP seen %v); baseline RTT %.3f ms from %s (TCP's own minimum %.3f ms)\n",
		r.MTU.UpBytes, r.MTU.DownBytes, r.MTU.ICMPSeen, r.RTT.BaselineMs, baselineSource(r.RTT.Source), r.RTT.TCPMinMs)
	if r.RTT.CrossCheck != "" {
		fmt.Fprintf(w, "      baseline cross-check FAILED: %s\n", r.RTT.CrossCheck)
	}
	fmt.Fprintf(w, "      bottleneck up %s, down %s (CIR %s); BDP up %.0f B, down %.0f B\n",
		mbps(r.BB.UpBps), mbps(r.BB.DownBps), mbps(float64(r.BB.CIRBps)), r.BDP.UpBytes, r.BDP.DownBytes)
	if len(r.Walk) > 0 {
		fmt.Fprintf(w, "\nWindow walk:\n  %-4s %5s %12s %5s %14s %14s %8s %11s %12s\n", "dir", "BDP", "window", "conn", "ideal", "actual", "actual%", "efficiency", "buffer delay")
		for _, s := range r.Walk {
			fmt.Fprintf(w, "  %-4s %4d%% %10d B %5d %14s %14s %7.1f%% %10.3f%% %11.1f%%\n", s.Direction, s.Percent, s.WindowBytes, s.Connections,
				mbps(s.IdealBps), mbps(s.ActualBps), s.ActualBps/s.IdealBps*100, s.EfficiencyPct, s.BufferDelayPct)
		}
	}
	for _, dir := range vocab.Both {
		sw := r.Sweep[dir]
		if sw == nil {
			continue
		}
		fmt.Fprintf(w, "\nWindow sweep %s:\n  %12s %14s %6s %16s  %s\n", dir, "window", "goodput", "retr", "delay increment", "region")
		for _, p := range sw.Points {
			fmt.Fprintf(w, "  %10d B %14s %6d %13.1f ms  %s\n", p.WindowBytes, mbps(p.GoodputBps), p.RetransSegs, p.DelayIncrementMs, p.Region)
		}
		a := sw.Analysis
		fmt.Fprintf(w, "  plateau %s, BDP %.0f B (line meets plateau), overflow from %d B, queue ≈ %.0f B (at least %.0f B)\n",
			mbps(a.PlateauBps), a.BDPBytes, a.OverflowEdgeBytes, a.QueueBytes, a.QueueMinBytes)
		for _, n := range a.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
	}
	if len(r.Throughput) > 0 {
		fmt.Fprintf(w, "\nThroughput at the BDP:\n  %-4s %12s %5s %14s %14s %7s %11s %12s %s\n", "dir", "window", "conn", "ideal", "actual", "TTR", "efficiency", "buffer delay", "per connection")
		for _, dir := range vocab.Both {
			t := r.Throughput[dir]
			if t == nil {
				continue
			}
			var per []string
			for _, b := range t.PerConnBps {
				per = append(per, fmt.Sprintf("%.1f", b/1e6))
			}
			fmt.Fprintf(w, "  %-4s %10d B %5d %14s %14s %7.3f %10.3f%% %11.1f%% %s Mbit/s\n", dir, t.WindowBytes, t.Connections,
				mbps(t.IdealBps), mbps(t.ActualBps), t.TTR, t.EfficiencyPct, t.BufferDelayPct, strings.Join(per, " / "))
		}
	}
	for _, dir := range vocab.Both {
		if s := r.Shaping[dir]; s != nil {
			fmt.Fprintf(w, "\nShaping %s: %s\n", dir, s.Detail)
		}
	}
	fmt.Fprintf(w, "\nIdeal = maximum achievable TCP throughput (RFC 6349 §4.1.1) from the bottleneck, the path MTU, the negotiated MSS and %s framing; actual = goodput at the receiver; efficiency and RTTs from the sender's TCP_INFO.\n", linkName(r))
}

func linkName(r *result.RFC6349) string {
	if r.Config.Link != "" {
		return r.Config.Link
	}
	return "the link's"
}

// baselineSource names where the baseline RTT came from.
func baselineSource(src string) string {
	if src == result.SourceTCP {
		return "TCP's own minimum (the UDP probes disagreed with it twice)"
	}
	return "the UDP probes"
}
