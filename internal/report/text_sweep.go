package report

// The summaries of the sweeps and the packet trains.

import (
	"fmt"
	"io"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/units"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// windowSweepText is the sweep's table, then what its regions say.
func windowSweepText(w io.Writer, r *result.WindowSweep) {
	cfg := r.Config
	dir := "up (client sends)"
	if cfg.Reverse {
		dir = "down (responder sends)"
	}
	fmt.Fprintf(w, "Window sweep to %s, %s, cc %s, %v per window; 1 mss = %d B\n", r.Target, dir, orDash(cfg.CC), cfg.Duration, cfg.MSS)
	fmt.Fprintf(w, "%-22s %8s %14s %25s %9s %9s %13s %13s  %s\n",
		"window", "", "goodput", "rate p10..p90 (sd)", "retr", "loss", "delay incr", "model", "region")
	for _, p := range r.Points {
		region := p.Region
		if p.Partial {
			region = "(partial)"
		}
		model := ""
		if p.ModelIncrementMs > 0 {
			model = fmt.Sprintf("%.1f ms", p.ModelIncrementMs)
		}
		fmt.Fprintf(w, "%-22s %5.1f mss %14s %25s %5d seg %7.3f %% %13s %13s  %s\n",
			BytesExact(int64(p.WindowBytes)), p.WindowMSS, units.FormatRate(p.GoodputBps),
			fmt.Sprintf("%s..%s (%s)", units.FormatRate(p.RateP10Bps), units.FormatRate(p.RateP90Bps), units.FormatRate(p.RateStdDevBps)),
			p.RetransSegs, p.LossPct, msOrDash(p.HasDelay, p.DelayIncrementMs), model, region)
		if len(p.Classes) > 1 {
			for _, c := range p.Classes {
				fmt.Fprintf(w, "%24s DSCP %2d: forward %.1f ms (max %.1f ms), reverse %.1f ms (max %.1f ms), %d/%d replies\n",
					"", c.DSCP, c.FwdMedianMs, c.FwdMaxMs, c.RevMedianMs, c.RevMaxMs, c.Received, c.Sent)
			}
		}
	}
	a := r.Analysis
	fmt.Fprintln(w)
	if r.Partial {
		fmt.Fprintf(w, "PARTIAL: %s\n", r.PartialReason)
	}
	fmt.Fprintln(w, "What the regions say:")
	complete := 0
	for _, p := range r.Points {
		if !p.Partial {
			complete++
		}
	}
	if complete == 0 {
		fmt.Fprintln(w, "  nothing yet: no window was measured to its end")
		return
	}
	if a.PlateauBps > 0 {
		fmt.Fprintf(w, "  bottleneck rate (saturation plateau, TCP payload): %s\n", units.FormatRate(a.PlateauBps))
	}
	if a.RateFromDelayBps > 0 {
		fmt.Fprintf(w, "  bottleneck rate from the delay increments' slope: %s\n", units.FormatRate(a.RateFromDelayBps))
	}
	if a.LineRTTMs > 0 {
		fmt.Fprintf(w, "  linear region: goodput = W x 8 / %s, up to %s\n", units.FormatDuration(time.Duration(a.LineRTTMs*1e6)), BytesExact(int64(a.LinearEndBytes)))
	}
	if a.BDPBytes > 0 {
		fmt.Fprintf(w, "  BDP (where the line meets the plateau): %s\n", BytesExact(int64(a.BDPBytes)))
	}
	if a.OverflowEdgeBytes > 0 {
		fmt.Fprintf(w, "  overflow from %s (last lossless %s)\n", BytesExact(int64(a.OverflowEdgeBytes)), BytesExact(int64(a.LastLosslessBytes)))
		if a.BDPBytes > 0 {
			fmt.Fprintf(w, "  bottleneck queue = overflow edge - BDP: %s (at least %s), of TCP payload\n",
				BytesExact(int64(a.QueueBytes)), BytesExact(int64(a.QueueMinBytes)))
		}
	}
	for _, n := range a.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

// msgLenSweepText is the sweep's table, then where TCP flattens and UDP loses.
func msgLenSweepText(w io.Writer, r *result.MsgLenSweep) {
	fmt.Fprintf(w, "Message-length sweep to %s (uploads)\n", r.Target)
	fmt.Fprintf(w, "%-22s %14s %14s %14s %16s %16s %10s\n", "write size", "TCP goodput", "TCP B/write", "UDP datagram", "UDP sender", "UDP receiver", "UDP loss")
	for _, p := range r.Points {
		mark := ""
		if p.Partial {
			mark = "  (partial)"
		}
		fmt.Fprintf(w, "%-22s %14s %12.0f B %12d B %16s %16s %8.3f %%%s\n", BytesExact(int64(p.SizeBytes)), units.FormatRate(p.TCPGoodputBps),
			p.TCPBytesPerWrite, p.UDPSizeBytes, units.FormatRate(p.UDPSenderBps), units.FormatRate(p.UDPReceiverBps), p.UDPLossPct, mark)
	}
	a := r.Analysis
	fmt.Fprintln(w)
	if r.Partial {
		fmt.Fprintf(w, "PARTIAL: %s\n", r.PartialReason)
	}
	if a.TCPKneeBytes > 0 {
		fmt.Fprintf(w, "TCP goodput reaches 90 %% of its best (%s) at writes of %s; larger writes gain little\n",
			units.FormatRate(a.TCPMaxBps), BytesExact(int64(a.TCPKneeBytes)))
	}
	if a.UDPDivergeBytes > 0 {
		fmt.Fprintf(w, "UDP: from %s datagrams on the receiver counts less than 99 %% of what was sent: datagrams are lost\n", BytesExact(int64(a.UDPDivergeBytes)))
	} else {
		fmt.Fprintln(w, "UDP: the receiver kept up with the sender at every size")
	}
}

// trainsText is each direction's verdict and why, then the warnings.
func trainsText(w io.Writer, r *result.Trains) {
	for _, dir := range vocab.Both {
		d := r.Directions[dir]
		if d == nil || d.Verdict == nil {
			continue
		}
		v := d.Verdict
		fmt.Fprintf(w, "\n%s: %s", dir, v.Kind)
		switch v.Kind {
		case "policer":
			fmt.Fprintf(w, " at %s ± %s, bucket %.0f ± %.0f B", units.FormatRate(v.RateBps.Value), units.FormatRate(v.RateBps.Err), v.BucketBytes.Value, v.BucketBytes.Err)
		case "queue":
			at := ""
			if v.QueueAtLeast {
				at = "at least "
			}
			fmt.Fprintf(w, " at %s ± %s, %s%.0f ± %.0f B", units.FormatRate(v.RateBps.Value), units.FormatRate(v.RateBps.Err), at, v.QueueBytes.Value, v.QueueBytes.Err)
			if d.SmallQueue {
				fmt.Fprintf(w, ": too small for the BDP of %.0f B", d.BDPBytes)
			}
		}
		fmt.Fprintf(w, "\n  %s\n", v.Why)
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
}
