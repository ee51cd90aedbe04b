package report

// The live view: samples rendered as they arrive, before the document
// exists (the command line's output without --json).

import (
	"fmt"
	"io"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/sweep"
	"github.com/fullpipe/fullpipe/internal/units"
)

// TCPLive prints a tcp test's intervals as they arrive: a header before
// the first, a row per stream, and a sum row when there are several.
type TCPLive struct {
	W       io.Writer
	started bool
}

// Interval prints one interval.
func (p *TCPLive) Interval(iv result.TCPInterval) {
	multi := len(iv.Streams) > 1
	if !p.started {
		p.started = true
		fmt.Fprintf(p.W, "%-15s %-4s %-6s %11s %14s %9s %9s %9s %11s %7s  %s\n",
			"interval", "dir", "stream", "bytes", "goodput", "srtt", "rttvar", "min rtt", "cwnd", "retr", "limited by")
	}
	span := fmt.Sprintf("%5.1f-%5.1f s", iv.StartS, iv.EndS)
	for _, s := range iv.Streams {
		name := fmt.Sprintf("%d", s.Stream)
		fmt.Fprintf(p.W, "%-15s %-4s %-6s %11s %14s %9s %9s %9s %11s %7s  %s\n", span, s.Direction, name,
			units.FormatBytes(float64(s.Bytes)), units.FormatRate(s.ThroughputBps),
			usOrDash(s.HasTCPInfo, s.RTTUs), usOrDash(s.HasTCPInfo, s.RTTVarUs), usOrDash(s.HasTCPInfo, s.RTTMinUs),
			bytesOrDash(s.HasTCPInfo, s.CwndBytes), segs(s.HasTCPInfo, s.RetransSegs), orDash(s.LimitedBy))
	}
	if multi {
		fmt.Fprintf(p.W, "%-15s %-4s %-6s %11s %14s %9s %9s %9s %11s %7s\n", span, "all", "sum",
			units.FormatBytes(float64(iv.Bytes)), units.FormatRate(iv.ThroughputBps), "", "", "", "", segs(true, iv.RetransSegs))
	}
}

// UDPLive prints a udp test's intervals (the receiver's figures) as they
// arrive.
type UDPLive struct {
	W       io.Writer
	started bool
}

// Interval prints one interval.
func (p *UDPLive) Interval(iv result.UDPInterval) {
	if !p.started {
		p.started = true
		fmt.Fprintf(p.W, "%-15s %11s %12s %14s %9s %10s\n", "interval", "packets", "bytes", "rate", "lost", "jitter")
	}
	fmt.Fprintf(p.W, "%5.1f-%5.1f s   %11d %12s %14s %9d %10s\n", iv.StartS, iv.EndS, iv.Packets,
		units.FormatBytes(float64(iv.Bytes)), units.FormatRate(iv.ThroughputBps), iv.Lost, usF(iv.JitterUs))
}

// RTTReply prints one probe's round trip as it arrives.
func RTTReply(w io.Writer, seq uint64, rtt time.Duration) {
	fmt.Fprintf(w, "reply seq=%d rtt=%s\n", seq, units.FormatDuration(rtt))
}

// WindowPoint prints point i of n of a window sweep as it ends.
func WindowPoint(w io.Writer, i, n int, p *sweep.WindowPoint) {
	fmt.Fprintf(w, "point %d/%d: window %s (%.1f mss): %s, %d retransmitted segments, delay increment %s\n",
		i+1, n, BytesExact(int64(p.WindowBytes)), p.WindowMSS, units.FormatRate(p.GoodputBps), p.RetransSegs, msOrDash(p.HasDelay, p.DelayIncrementMs))
}

// MsgLenPoint prints size i of n of a message-length sweep as it ends.
func MsgLenPoint(w io.Writer, i, n int, p *sweep.MsgLenPoint) {
	fmt.Fprintf(w, "size %d/%d: %s: TCP %s, UDP sent %s received %s\n", i+1, n, BytesExact(int64(p.SizeBytes)),
		units.FormatRate(p.TCPGoodputBps), units.FormatRate(p.UDPSenderBps), units.FormatRate(p.UDPReceiverBps))
}
