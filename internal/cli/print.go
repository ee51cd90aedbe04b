package cli

// The lab's printers: a link's description, its counters and the
// profiles. They print no result document (those are package report's).

import (
	"fmt"
	"io"
	"strings"

	"github.com/fullpipe/fullpipe/internal/lab"
	"github.com/fullpipe/fullpipe/internal/report"
	"github.com/fullpipe/fullpipe/internal/units"
)

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
			units.FormatRate(float64(d.FRCIRBps)), report.BytesExact(int64(d.FRQueueBytes))))
	}
	p = append(p, "one-way delay "+units.FormatDuration(d.Delay))
	if d.Jitter > 0 {
		p = append(p, "jitter "+units.FormatDuration(d.Jitter))
	}
	if d.QueueBytes > 0 {
		p = append(p, "queue "+report.BytesExact(int64(d.QueueBytes)))
	}
	if d.QueuePackets > 0 {
		p = append(p, fmt.Sprintf("queue %d packets", d.QueuePackets))
	}
	if d.QueueBytes == 0 && d.QueuePackets == 0 && (d.RateBps > 0 || d.FRAccessBps > 0) {
		p = append(p, "queue unlimited")
	}
	if d.PoliceBps > 0 {
		p = append(p, fmt.Sprintf("policer %s burst %s", units.FormatRate(float64(d.PoliceBps)), report.BytesExact(int64(d.PoliceBurst))))
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
			strings.Join(drops, ", "), report.BytesExact(int64(d.s.QueueBytes)), report.BytesExact(int64(d.s.QueueMaxBytes)))
		if d.s.ICMPSent > 0 {
			fmt.Fprintf(w, "; ICMP frag-needed sent %d", d.s.ICMPSent)
		}
		if d.s.LabLimited {
			fmt.Fprintf(w, "; LAB-LIMITED (the forwarder's own, not the path's): %d reads dropped, %d read stalls, %d writes dropped, %d packets > %v late",
				d.s.ReadDrops, d.s.ReadStalls, d.s.WriteDrops, d.s.LatePackets, lab.LateLimit)
			fmt.Fprintf(w, "; its writer held more than %v %d times waking, %d writing, %d waiting for a reader",
				lab.StallLimit, d.s.WriterWakesLate, d.s.WriterWritesSlow, d.s.WriterLockWaits)
		}
		fmt.Fprintln(w)
	}
}

func printLabProfiles(w io.Writer) {
	for _, n := range lab.ProfileNames() {
		p := lab.Profiles[n]
		fmt.Fprintf(w, "%-11s %s\n            %s\n", n, p.Teaches, describe(p.Up))
	}
}
