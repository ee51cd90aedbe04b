package report

// The summaries of the engine's tests (tcp, udp, rtt, mtu), as the
// command line prints them after the live view.

import (
	"fmt"
	"io"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/units"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// tcpText is the tcp test's summary.
func tcpText(w io.Writer, r *result.TCP) {
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
			BytesExact(d.Bytes), d.IntervalS, units.FormatRate(d.ThroughputBps), sender, orDash(cc))
		fmt.Fprintf(w, "       sent %s, retransmitted %s (%d segments): TCP Efficiency %.3f %%\n",
			BytesExact(int64(d.BytesSent)), BytesExact(int64(d.BytesRetrans)), d.RetransSegs, d.EfficiencyPct)
		fmt.Fprintf(w, "       RTT min %s, mean of smoothed RTT %s\n",
			units.FormatDuration(time.Duration(d.RTTMinUs)*time.Microsecond), units.FormatDuration(time.Duration(d.RTTMeanUs)*time.Microsecond))
	}
	if len(s.Directions) > 1 {
		fmt.Fprintf(w, "  both directions: %s, %s, TCP Efficiency %.3f %%\n", BytesExact(s.Bytes), units.FormatRate(s.ThroughputBps), s.EfficiencyPct)
	}
	if s.WindowRequested > 0 {
		fmt.Fprintf(w, "  window: requested %s, effective (most bytes in flight seen) %s\n",
			BytesExact(int64(s.WindowRequested)), BytesExact(s.WindowEffective))
	}
	for _, st := range s.Streams {
		if !st.HasTCPInfo {
			continue
		}
		fmt.Fprintf(w, "  stream %d %-4s %s, limited by %s (rwnd %.0f %%, sndbuf %.0f %% of busy time), peer window %s\n",
			st.Stream, st.Direction, units.FormatRate(st.ThroughputBps), orDash(st.LimitedBy), st.RwndLimitedPct, st.SndbufLimitedPct,
			BytesExact(int64(st.PeerWindowBytes)))
	}
	if s.LatencyIdle != nil && s.LatencyLoaded != nil {
		fmt.Fprintf(w, "  latency (UDP RTT): idle median %s (%d/%d replies), loaded median %s p99 %s (%d/%d replies)\n",
			usF(s.LatencyIdle.P50Us), s.LatencyIdle.Received, s.LatencyIdle.Sent,
			usF(s.LatencyLoaded.P50Us), usF(s.LatencyLoaded.P99Us), s.LatencyLoaded.Received, s.LatencyLoaded.Sent)
	}
}

// udpText is the udp test's summary: the sender's figures, then the receiver's.
func udpText(w io.Writer, r *result.UDP) {
	s := r.Summary
	fmt.Fprintf(w, "\nSummary: UDP %s, %d-byte payloads, target %s", s.Direction, s.SizeBytes, units.FormatRate(float64(s.TargetRateBps)))
	if s.Partial {
		fmt.Fprintf(w, "  PARTIAL: %s", s.PartialReason)
	}
	fmt.Fprintln(w)
	late := "" // an older responder sending down does not report its schedule
	if s.Direction == vocab.Up || s.SenderMaxSlipUs > 0 {
		late = fmt.Sprintf(", %d sent late, > 1 ms and a gap behind schedule (at most %.2f ms)", s.SenderLate, s.SenderMaxSlipUs/1e3)
	}
	fmt.Fprintf(w, "  sender   %d datagrams, %s, %s (payload)%s\n",
		s.SentPackets, BytesExact(int64(s.SentBytes)), units.FormatRate(s.SenderRateBps), late)
	if c := s.Sender(s.Direction); c != nil {
		fmt.Fprintf(w, "  sender CPU %.1f %% of a CPU, its threads waited %.1f %% of the time, its %d CPU(s) %.0f %% busy\n", c.CPUPct, c.WaitPct, c.CPUs, c.CPUsBusyPct)
	}
	fmt.Fprintf(w, "  receiver %d datagrams, %s in %.3f s, %s (payload), %s (with IP+UDP headers)\n",
		s.RecvPackets, BytesExact(int64(s.RecvBytes)), s.IntervalS, units.FormatRate(s.ReceiverRateBps), units.FormatRate(s.ReceiverIPBps))
	fmt.Fprintf(w, "  lost %d (%.3f %%), duplicates %d, reordered %d, jitter %s (RFC 3550)\n",
		s.Lost, s.LossPct, s.Duplicates, s.Reordered, usF(s.JitterUs))
	if s.ReceiverDrops > 0 {
		fmt.Fprintf(w, "  of the lost, at least %d dropped by the receiving host's own socket (its buffer overflowed; a coalesced buffer of datagrams counts once): the host's loss, not the path's\n", s.ReceiverDrops)
	}
	if l := s.Latency; l != nil {
		fmt.Fprintf(w, "  latency (round trip of %d/%d probes in the stream): min %s, mean %s, p50 %s, p90 %s, p99 %s, max %s, IPDV %s\n",
			l.Replies, l.Probes, usF(l.MinUs), usF(l.MeanUs), usF(l.P50Us), usF(l.P90Us), usF(l.P99Us), usF(l.MaxUs), usF(l.IPDVUs))
	}
	if s.GeneratorLimited {
		fmt.Fprintf(w, "  generator-limited: the sender could not hold the asked rate (%d datagrams sent, %d late): these figures describe the sending host, not the path\n", s.SentPackets, s.SenderLate)
	}
}

// rttText is the rtt test's summary.
func rttText(w io.Writer, r *result.RTT) {
	s := r.Summary
	fmt.Fprintf(w, "\nSummary: %d probes to %s, %d received, loss %.1f %%", s.Sent, r.Target, s.Received, s.LossPct)
	if s.Partial {
		fmt.Fprintf(w, "  PARTIAL: %s", s.PartialReason)
	}
	fmt.Fprintln(w)
	if s.Received > 0 {
		fmt.Fprintf(w, "  RTT min %s, mean %s, median %s, p99 %s, max %s, stddev %s\n",
			usF(s.MinUs), usF(s.MeanUs), usF(s.P50Us), usF(s.P99Us), usF(s.MaxUs), usF(s.StdDevUs))
	}
}

// mtuDocText is the path MTU each way.
func mtuDocText(w io.Writer, res *result.PMTU) {
	fmt.Fprintf(w, "path MTU up (to the responder): %s\npath MTU down (to this host):   %s\nlocal interface MTU %d B; ICMP fragmentation-needed seen: %v; %d probes, timeout %s each\n",
		mtuText(res.UpBytes), mtuText(res.DownBytes), res.LocalBytes, res.ICMPSeen, res.Probes, units.FormatDuration(res.Timeout))
}
