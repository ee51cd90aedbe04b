package cli

// The text printers: the live view and the summaries of every command.
// They read results only; a later change may move them next to the
// result types (internal/report).

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fullpipe/fullpipe/internal/lab"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/units"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// tcpPrinter prints intervals as they arrive.
type tcpPrinter struct {
	w       io.Writer
	cfg     result.TCPConfig
	started bool
}

func (p *tcpPrinter) interval(iv result.TCPInterval) {
	multi := len(iv.Streams) > 1
	if !p.started {
		p.started = true
		fmt.Fprintf(p.w, "%-15s %-4s %-6s %11s %14s %9s %9s %9s %11s %7s  %s\n",
			"interval", "dir", "stream", "bytes", "goodput", "srtt", "rttvar", "min rtt", "cwnd", "retr", "limited by")
	}
	span := fmt.Sprintf("%5.1f-%5.1f s", iv.StartS, iv.EndS)
	for _, s := range iv.Streams {
		name := fmt.Sprintf("%d", s.Stream)
		fmt.Fprintf(p.w, "%-15s %-4s %-6s %11s %14s %9s %9s %9s %11s %7s  %s\n", span, s.Direction, name,
			units.FormatBytes(float64(s.Bytes)), units.FormatRate(s.ThroughputBps),
			usOrDash(s.HasTCPInfo, s.RTTUs), usOrDash(s.HasTCPInfo, s.RTTVarUs), usOrDash(s.HasTCPInfo, s.RTTMinUs),
			bytesOrDash(s.HasTCPInfo, s.CwndBytes), segs(s.HasTCPInfo, s.RetransSegs), orDash(s.LimitedBy))
	}
	if multi {
		fmt.Fprintf(p.w, "%-15s %-4s %-6s %11s %14s %9s %9s %9s %11s %7s\n", span, "all", "sum",
			units.FormatBytes(float64(iv.Bytes)), units.FormatRate(iv.ThroughputBps), "", "", "", "", segs(true, iv.RetransSegs))
	}
}

func usOrDash(ok bool, us int64) string {
	if !ok {
		return "-"
	}
	return units.FormatDuration(time.Duration(us) * time.Microsecond)
}

func bytesOrDash(ok bool, b uint64) string {
	if !ok {
		return "-"
	}
	return units.FormatBytes(float64(b))
}

func segs(ok bool, n uint32) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%d seg", n)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func printTCPSummary(w io.Writer, r *result.TCP) {
	s := r.Summary
	fmt.Fprintf(w, "\nSummary: %s -> %s (%s, %s)", r.Client.Kernel, r.Target, r.Server.Software, r.Server.Kernel)
	if s.Partial {
		fmt.Fprintf(w, "  PARTIAL: %s", s.PartialReason)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "  goodput is measured at the receiver, first to last byte; TCP figures from the sender's TCP_INFO")
	for _, dir := range vocab.Both {
		d := s.Directions[dir]
		if d == nil {
			continue
		}
		sender, cc := "client", r.Client.CC
		if dir == vocab.Down {
			sender, cc = "responder", r.Server.CC
		}
		fmt.Fprintf(w, "  %-4s %s in %.2f s = %s   (sender: %s, cc %s)\n", dir,
			bytesExact(d.Bytes), d.IntervalS, units.FormatRate(d.ThroughputBps), sender, orDash(cc))
		fmt.Fprintf(w, "       sent %s, retransmitted %s (%d segments): TCP Efficiency %.3f %%\n",
			bytesExact(int64(d.BytesSent)), bytesExact(int64(d.BytesRetrans)), d.RetransSegs, d.EfficiencyPct)
		fmt.Fprintf(w, "       RTT min %s, mean of smoothed RTT %s\n",
			units.FormatDuration(time.Duration(d.RTTMinUs)*time.Microsecond), units.FormatDuration(time.Duration(d.RTTMeanUs)*time.Microsecond))
	}
	if len(s.Directions) > 1 {
		fmt.Fprintf(w, "  both directions: %s, %s, TCP Efficiency %.3f %%\n", bytesExact(s.Bytes), units.FormatRate(s.ThroughputBps), s.EfficiencyPct)
	}
	if s.WindowRequested > 0 {
		fmt.Fprintf(w, "  window: requested %s, effective (most bytes in flight seen) %s\n",
			bytesExact(int64(s.WindowRequested)), bytesExact(s.WindowEffective))
	}
	for _, st := range s.Streams {
		if !st.HasTCPInfo {
			continue
		}
		fmt.Fprintf(w, "  stream %d %-4s %s, limited by %s (rwnd %.0f %%, sndbuf %.0f %% of busy time), peer window %s\n",
			st.Stream, st.Direction, units.FormatRate(st.ThroughputBps), orDash(st.LimitedBy), st.RwndLimitedPct, st.SndbufLimitedPct,
			bytesExact(int64(st.PeerWindowBytes)))
	}
	if s.LatencyIdle != nil && s.LatencyLoaded != nil {
		fmt.Fprintf(w, "  latency (UDP RTT): idle median %s (%d/%d replies), loaded median %s p99 %s (%d/%d replies)\n",
			usF(s.LatencyIdle.MedianUs), s.LatencyIdle.Received, s.LatencyIdle.Sent,
			usF(s.LatencyLoaded.MedianUs), usF(s.LatencyLoaded.P99Us), s.LatencyLoaded.Received, s.LatencyLoaded.Sent)
	}
}

func usF(us float64) string { return units.FormatDuration(time.Duration(us * 1e3)) }

// bytesExact prints an exact byte count and a readable one: "65,536 B (64.00 KiB)".
func bytesExact(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%s B (%s)", units.GroupDigits(n), units.FormatBytes(float64(n)))
}

func printUDPSummary(w io.Writer, r *result.UDP) {
	s := r.Summary
	fmt.Fprintf(w, "\nSummary: UDP %s, %d-byte payloads, target %s", s.Direction, s.SizeBytes, units.FormatRate(float64(s.TargetRateBps)))
	if s.Partial {
		fmt.Fprintf(w, "  PARTIAL: %s", s.PartialReason)
	}
	fmt.Fprintln(w)
	late := "" // an older responder sending down does not report its schedule
	if s.Direction == vocab.Up || s.SenderMaxSlipUs > 0 {
		late = fmt.Sprintf(", %d sent > 1 ms behind schedule (at most %.2f ms)", s.SenderLate, s.SenderMaxSlipUs/1e3)
	}
	fmt.Fprintf(w, "  sender   %d datagrams, %s, %s (payload)%s\n",
		s.SentPackets, bytesExact(int64(s.SentBytes)), units.FormatRate(s.SenderRateBps), late)
	if c := s.Sender(s.Direction); c != nil {
		fmt.Fprintf(w, "  sender CPU %.1f %% of a CPU, its threads waited %.1f %% of the time, its %d CPU(s) %.0f %% busy\n", c.CPUPct, c.WaitPct, c.CPUs, c.CPUsBusyPct)
	}
	fmt.Fprintf(w, "  receiver %d datagrams, %s in %.3f s, %s (payload), %s (with IP+UDP headers)\n",
		s.RecvPackets, bytesExact(int64(s.RecvBytes)), s.IntervalS, units.FormatRate(s.ReceiverRateBps), units.FormatRate(s.ReceiverIPBps))
	fmt.Fprintf(w, "  lost %d (%.3f %%), duplicates %d, reordered %d, jitter %s (RFC 3550)\n",
		s.Lost, s.LossPct, s.Duplicates, s.Reordered, usF(s.JitterUs))
}

func printRTTSummary(w io.Writer, r *result.RTT) {
	s := r.Summary
	fmt.Fprintf(w, "\nSummary: %d probes to %s, %d received, loss %.1f %%", s.Sent, r.Target, s.Received, s.LossPct)
	if s.Partial {
		fmt.Fprintf(w, "  PARTIAL: %s", s.PartialReason)
	}
	fmt.Fprintln(w)
	if s.Received > 0 {
		fmt.Fprintf(w, "  RTT min %s, mean %s, median %s, p99 %s, max %s, stddev %s\n",
			usF(s.MinUs), usF(s.MeanUs), usF(s.MedianUs), usF(s.P99Us), usF(s.MaxUs), usF(s.StdDevUs))
	}
}

func mtuText(n int) string {
	if n == 0 {
		return "below the search floor (nothing passed)"
	}
	return fmt.Sprintf("%d B (TCP MSS %d B on IPv4 without options)", n, n-40)
}

func msOrDash(ok bool, ms float64) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.1f ms", ms)
}

func printWindowSweep(w io.Writer, r *result.WindowSweep) {
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
			bytesExact(int64(p.WindowBytes)), p.WindowMSS, units.FormatRate(p.GoodputBps),
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
		fmt.Fprintf(w, "  linear region: goodput = W x 8 / %s, up to %s\n", units.FormatDuration(time.Duration(a.LineRTTMs*1e6)), bytesExact(int64(a.LinearEndBytes)))
	}
	if a.BDPBytes > 0 {
		fmt.Fprintf(w, "  BDP (where the line meets the plateau): %s\n", bytesExact(int64(a.BDPBytes)))
	}
	if a.OverflowEdgeBytes > 0 {
		fmt.Fprintf(w, "  overflow from %s (last lossless %s)\n", bytesExact(int64(a.OverflowEdgeBytes)), bytesExact(int64(a.LastLosslessBytes)))
		if a.BDPBytes > 0 {
			fmt.Fprintf(w, "  bottleneck queue = overflow edge - BDP: %s (at least %s), of TCP payload\n",
				bytesExact(int64(a.QueueBytes)), bytesExact(int64(a.QueueMinBytes)))
		}
	}
	for _, n := range a.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

func printMsgLenSweep(w io.Writer, r *result.MsgLenSweep) {
	fmt.Fprintf(w, "Message-length sweep to %s (uploads)\n", r.Target)
	fmt.Fprintf(w, "%-22s %14s %14s %14s %16s %16s %10s\n", "write size", "TCP goodput", "TCP B/write", "UDP datagram", "UDP sender", "UDP receiver", "UDP loss")
	for _, p := range r.Points {
		mark := ""
		if p.Partial {
			mark = "  (partial)"
		}
		fmt.Fprintf(w, "%-22s %14s %12.0f B %12d B %16s %16s %8.3f %%%s\n", bytesExact(int64(p.SizeBytes)), units.FormatRate(p.TCPGoodputBps),
			p.TCPBytesPerWrite, p.UDPSizeBytes, units.FormatRate(p.UDPSenderBps), units.FormatRate(p.UDPReceiverBps), p.UDPLossPct, mark)
	}
	a := r.Analysis
	fmt.Fprintln(w)
	if r.Partial {
		fmt.Fprintf(w, "PARTIAL: %s\n", r.PartialReason)
	}
	if a.TCPKneeBytes > 0 {
		fmt.Fprintf(w, "TCP goodput reaches 90 %% of its best (%s) at writes of %s; larger writes gain little\n",
			units.FormatRate(a.TCPMaxBps), bytesExact(int64(a.TCPKneeBytes)))
	}
	if a.UDPDivergeBytes > 0 {
		fmt.Fprintf(w, "UDP: from %s datagrams on the receiver counts less than 99 %% of what was sent: datagrams are lost\n", bytesExact(int64(a.UDPDivergeBytes)))
	} else {
		fmt.Fprintln(w, "UDP: the receiver kept up with the sender at every size")
	}
}

func printTrains(w io.Writer, r *result.Trains) {
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

func describe(d lab.Direction) string {
	var p []string
	if d.RateBps > 0 {
		r := "rate " + units.FormatRate(float64(d.RateBps))
		if d.ATM {
			r += " (ATM cells)"
		}
		p = append(p, r)
	} else if d.FRAccessBps == 0 {
		p = append(p, "rate unlimited")
	}
	if d.FRAccessBps > 0 {
		p = append(p, fmt.Sprintf("frame relay access %s, CIR %s, switch queue %s", units.FormatRate(float64(d.FRAccessBps)),
			units.FormatRate(float64(d.FRCIRBps)), bytesExact(int64(d.FRQueueBytes))))
	}
	p = append(p, "one-way delay "+units.FormatDuration(d.Delay))
	if d.Jitter > 0 {
		p = append(p, "jitter "+units.FormatDuration(d.Jitter))
	}
	if d.QueueBytes > 0 {
		p = append(p, "queue "+bytesExact(int64(d.QueueBytes)))
	}
	if d.QueuePackets > 0 {
		p = append(p, fmt.Sprintf("queue %d packets", d.QueuePackets))
	}
	if d.QueueBytes == 0 && d.QueuePackets == 0 && (d.RateBps > 0 || d.FRAccessBps > 0) {
		p = append(p, "queue unlimited")
	}
	if d.PoliceBps > 0 {
		p = append(p, fmt.Sprintf("policer %s burst %s", units.FormatRate(float64(d.PoliceBps)), bytesExact(int64(d.PoliceBurst))))
	}
	if d.Loss > 0 {
		p = append(p, fmt.Sprintf("loss %.4g %%", d.Loss*100))
		if d.LossBurst > 0 {
			p = append(p, fmt.Sprintf("mean burst %.3g packets", d.LossBurst))
		}
	}
	if d.BER > 0 {
		p = append(p, fmt.Sprintf("BER %.3g", d.BER))
	}
	if d.CellLoss > 0 {
		p = append(p, fmt.Sprintf("cell loss %.3g", d.CellLoss))
	}
	if d.MTU > 0 {
		m := fmt.Sprintf("MTU %d B", d.MTU)
		if d.ICMP {
			m += " with ICMP"
		} else {
			m += " (black hole)"
		}
		p = append(p, m)
	}
	if d.Priority {
		p = append(p, "2 priority classes")
	}
	return strings.Join(p, ", ")
}

func printLabStats(w io.Writer, s *lab.Stats) {
	fmt.Fprintf(w, "lab %s, up %.1f s\n", s.Name, s.UptimeS)
	for _, d := range []struct {
		n string
		s lab.DirectionStats
	}{{"up", s.Up}, {"down", s.Down}} {
		var drops []string
		for _, c := range []string{"queue", "policer", "loss", "ber", "mtu", "cell"} {
			drops = append(drops, fmt.Sprintf("%s %d", c, d.s.Drops[c]))
		}
		fmt.Fprintf(w, "  %-4s in %d packets (%s), forwarded %d packets (%s); drops: %s; queue now %s, max %s",
			d.n, d.s.RxPackets, units.FormatBytes(float64(d.s.RxBytes)), d.s.TxPackets, units.FormatBytes(float64(d.s.TxBytes)),
			strings.Join(drops, ", "), bytesExact(int64(d.s.QueueBytes)), bytesExact(int64(d.s.QueueMaxBytes)))
		if d.s.ICMPSent > 0 {
			fmt.Fprintf(w, "; ICMP frag-needed sent %d", d.s.ICMPSent)
		}
		fmt.Fprintln(w)
	}
}

// udpPrinter prints UDP intervals as they arrive.
type udpPrinter struct {
	w       io.Writer
	started bool
}

func (p *udpPrinter) interval(iv result.UDPInterval) {
	if !p.started {
		p.started = true
		fmt.Fprintf(p.w, "%-15s %11s %12s %14s %9s %10s\n", "interval", "packets", "bytes", "rate", "lost", "jitter")
	}
	fmt.Fprintf(p.w, "%5.1f-%5.1f s   %11d %12s %14s %9d %10s\n", iv.StartS, iv.EndS, iv.Packets,
		units.FormatBytes(float64(iv.Bytes)), units.FormatRate(iv.ThroughputBps), iv.Lost, usF(iv.JitterUs))
}

// printRTTReply prints one probe's round trip as it arrives.
func printRTTReply(w io.Writer, seq uint64, rtt time.Duration) {
	fmt.Fprintf(w, "reply seq=%d rtt=%s\n", seq, units.FormatDuration(rtt))
}

func printMTU(w io.Writer, res *result.PMTU) {
	fmt.Fprintf(w, "path MTU up (to the responder): %s\npath MTU down (to this host):   %s\nlocal interface MTU %d B; ICMP fragmentation-needed seen: %v; %d probes, timeout %s each\n",
		mtuText(res.UpBytes), mtuText(res.DownBytes), res.LocalBytes, res.ICMPSeen, res.Probes, units.FormatDuration(res.Timeout))
}

func printLabProfiles(w io.Writer) {
	for _, n := range lab.ProfileNames() {
		p := lab.Profiles[n]
		fmt.Fprintf(w, "%-11s %s\n            %s\n", n, p.Teaches, describe(p.Up))
	}
}
