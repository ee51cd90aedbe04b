package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/rfc2544"
	"github.com/fullpipe/fullpipe/internal/units"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// rfc2544Text is RFC 2544's tables per direction (throughput, latency,
// frame loss, back-to-back), the lossy line's reading, then the warnings.
func rfc2544Text(w io.Writer, r *result.RFC2544) {
	c := r.Config
	fmt.Fprintf(w, "\nRFC 2544 at a line rate of %s (100 %%), trials of %s (the RFC asks 60 s), resolution %.2g %% of the line\n",
		units.FormatRate(float64(c.LineRateBps)), units.FormatDuration(c.Trial), c.ResolutionPct)
	for _, dir := range vocab.Both {
		d := r.Directions[dir]
		if d == nil {
			continue
		}
		fmt.Fprintf(w, "\n%s (%s sends)\n", dir, dir.Sender())
		rfc2544ThroughputText(w, c, d)
		rfc2544LatencyText(w, d)
		rfc2544LossText(w, d)
		rfc2544BurstText(w, d)
		if l := d.Lossy; l != nil {
			fmt.Fprintf(w, "  LOSSY LINE: %s.\n", l.Why)
			fmt.Fprintf(w, "  BER %.3g (95 %% interval %.3g to %.3g), size-independent loss %.3g (%.3g to %.3g): %s; %d of %d frames lost over all trials at or below the line rate\n",
				l.BER, l.BERLow, l.BERHigh, l.Q, l.QLow, l.QHigh, l.Verdict, l.Lost, l.Sent)
		}
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
}

func newTab(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
}

// rfc2544ThroughputText is §26.1's table: frames/s, Mbit/s of frames,
// % of the line rate, at zero loss and at the loss ratio.
func rfc2544ThroughputText(w io.Writer, c result.RFC2544Config, d *result.RFC2544Direction) {
	if !c.Has(result.BenchThroughput) {
		return
	}
	fmt.Fprintf(w, "  throughput (§26.1)%s\n", map[bool]string{true: ": zero-loss throughput is NOT meaningful on this lossy line (see below)", false: ""}[d.Lossy != nil])
	tw := newTab(w)
	fmt.Fprintf(tw, "  frame B\tpayload B\tline frames/s\tzero loss frames/s\tMbit/s\t%% of line\tat %.2g %% loss frames/s\t%% of line\t\n", c.LossRatioPct)
	for _, s := range d.Sizes {
		if s.Skipped != "" || s.Throughput == nil {
			fmt.Fprintf(tw, "  %d\t%d\t%.0f\tskipped\t\t\t\t\t\n", s.FrameBytes, s.PayloadBytes, s.LineFPS)
			continue
		}
		t := s.Throughput
		gen := ""
		if t.GeneratorLimitedFPS > 0 {
			gen = fmt.Sprintf("  generator-limited at %.0f frames/s", t.GeneratorLimitedFPS)
		}
		fmt.Fprintf(tw, "  %d\t%d\t%.0f\t%.0f\t%.2f\t%.2f\t%.0f\t%.2f\t%s\n", s.FrameBytes, s.PayloadBytes, s.LineFPS, t.ZeroLossFPS,
			rfc2544.FrameBps(t.ZeroLossFPS, s.FrameBytes)/1e6, t.ZeroLossPct, t.LossRatioFPS, t.LossRatioPct, gen)
	}
	tw.Flush()
}

// rfc2544LatencyText is §26.2's table: the probes' round trip at the
// throughput rate.
func rfc2544LatencyText(w io.Writer, d *result.RFC2544Direction) {
	var rows []*result.RFC2544Size
	for _, s := range d.Sizes {
		if s.Latency != nil && len(s.Latency.Trials) > 0 {
			rows = append(rows, s)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "  latency at the throughput rate (§26.2), round trip: there under the load, back unloaded, µs")
	tw := newTab(w)
	fmt.Fprintln(tw, "  frame B\tframes/s\tmin\tmean\tp50\tp90\tp99\tmax\texpected unloaded\t")
	for _, s := range rows {
		l := s.Latency.Summary
		exp := "-"
		if s.Latency.ExpectedUs > 0 {
			exp = fmt.Sprintf("%.0f", s.Latency.ExpectedUs)
		}
		fmt.Fprintf(tw, "  %d\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%s\t\n", s.FrameBytes, s.Latency.RateFPS, l.MinUs, l.MeanUs, l.P50Us, l.P90Us, l.P99Us, l.MaxUs, exp)
	}
	tw.Flush()
}

// rfc2544LossText is §26.3's table: loss % per offered load, a column per
// step of 10 % of the line rate.
func rfc2544LossText(w io.Writer, d *result.RFC2544Direction) {
	has := false
	for _, s := range d.Sizes {
		has = has || len(s.Loss) > 0
	}
	if !has {
		return
	}
	fmt.Fprintln(w, "  frame loss rate (§26.3), % of frames lost at each offered load (% of the line rate)")
	tw := newTab(w)
	head := []string{"  frame B"}
	for _, f := range rfc2544.LossSteps() {
		head = append(head, fmt.Sprintf("%.0f %%", f*100))
	}
	fmt.Fprintln(tw, strings.Join(append(head, "rate verdict"), "\t")+"\t")
	for _, s := range d.Sizes {
		if len(s.Loss) == 0 {
			continue
		}
		row := append([]string{fmt.Sprintf("  %d", s.FrameBytes)}, rfc2544LossCells(s)...)
		fmt.Fprintln(tw, strings.Join(append(row, rfc2544RateVerdict(s)), "\t")+"\t")
	}
	tw.Flush()
	if m := rfc2544GenMarked(d); m != "" {
		fmt.Fprintf(w, "  %s\n", m)
	}
}

// rfc2544GenMarked explains the mark of a generator-limited loss cell
// when d's loss table has one ("" when not).
func rfc2544GenMarked(d *result.RFC2544Direction) string {
	for _, s := range d.Sizes {
		for _, t := range s.Loss {
			if t.GeneratorLimited {
				return "* generator-limited: this host could not send at the load, so the loss is not the path's alone"
			}
		}
	}
	return ""
}

// rfc2544LossCells are s's loss table row, % lost per step of
// rfc2544.LossSteps (empty after the table stopped), a generator-limited
// step marked "*".
func rfc2544LossCells(s *result.RFC2544Size) []string {
	cells := make([]string, len(rfc2544.LossSteps()))
	for i, t := range s.Loss[:min(len(s.Loss), len(cells))] {
		cells[i] = fmt.Sprintf("%.3g", t.LossPct)
		if t.GeneratorLimited {
			cells[i] += "*"
		}
	}
	return cells
}

// rfc2544RateVerdict says whether s's loss depended on the rate, "-"
// when not judged.
func rfc2544RateVerdict(s *result.RFC2544Size) string {
	if s.Rate == nil {
		return "-"
	}
	return s.Rate.Verdict
}

// rfc2544BurstText is §26.4's table and the buffer each implies.
func rfc2544BurstText(w io.Writer, d *result.RFC2544Direction) {
	has := false
	for _, s := range d.Sizes {
		has = has || s.BackToBack != nil
	}
	if !has {
		return
	}
	fmt.Fprintln(w, "  back-to-back frames (§26.4): the longest burst without loss, and the buffer it implies")
	tw := newTab(w)
	fmt.Fprintln(tw, "  frame B\tlongest burst\ttrials\tgenerator frames/s\tbuffer frames\tbuffer bytes\t")
	for _, s := range d.Sizes {
		b := s.BackToBack
		if b == nil {
			continue
		}
		at := ""
		if b.NoLimit {
			at = "≥ "
		}
		fmt.Fprintf(tw, "  %d\t%s%.0f\t%v\t%.0f\t%s%.1f\t%s%.0f\t\n", s.FrameBytes, at, b.MeanLong, b.Longest, b.GeneratorFPS, at, b.BufferFrames, at, b.BufferBytes)
	}
	tw.Flush()
}
