package report

import (
	"bytes"
	"fmt"
	"html/template"
	"math"

	"github.com/fullpipe/fullpipe/internal/result"
)

// stripRow is one summary of round trips to draw.
type stripRow struct {
	Label string
	S     *result.RTTStats
}

// rttStrip draws each summary as a box-like strip on one axis: a line
// from the minimum to the maximum, a box from the median to the 99th
// percentile, a thick tick at the median, a diamond at the mean and,
// below, a bar of the mean ± one standard deviation. These are the only
// figures a document keeps: no sample is drawn, none is invented.
func rttStrip(title string, rows []stripRow) template.HTML {
	maxUs := 0.0
	var draw []stripRow
	for _, r := range rows {
		if r.S != nil && r.S.Received > 0 && finite(r.S.MaxUs) {
			draw = append(draw, r)
			maxUs = math.Max(maxUs, math.Max(r.S.MaxUs, r.S.MeanUs+r.S.StdDevUs))
		}
	}
	if len(draw) == 0 || maxUs <= 0 {
		return ""
	}
	unit, div := "µs", 1.0
	if maxUs >= 1000 {
		unit, div = "ms", 1000
	}
	top := maxUs * 1.05 / div
	const rowH, labelW = 56, 120
	h := ctop + rowH*len(draw) + 70
	x := func(us float64) float64 { return labelW + (cw-labelW-20)*(us/div)/top }
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="%s">`, cw, h, esc(title))
	fmt.Fprintf(&b, `<text x="%d" y="14" font-size="12" font-weight="bold">%s</text>`, cleft, esc(title))
	for i, r := range draw {
		stripOne(&b, float64(ctop+rowH*i+20), r, x)
		fmt.Fprintf(&b, `<text x="4" y="%d" font-size="11">%s</text>`, ctop+rowH*i+24, esc(r.Label))
	}
	axisY := ctop + rowH*len(draw) + 5
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`, labelW, axisY, cw-10, axisY)
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" text-anchor="middle">%.3g %s</text>`, x(v*div), axisY+15, v, unit)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11">line: min to max; box: median to p99; thick tick: median; ◆ mean; bar below: mean ± 1 standard deviation</text>`, 4, axisY+38)
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // numbers, fixed strings and escaped text only
}

// stripOne draws one summary centred on y.
func stripOne(b *bytes.Buffer, y float64, r stripRow, x func(float64) float64) {
	s := r.S
	tip := fmt.Sprintf("%s: min %s, median %s, mean %s, p99 %s, max %s, stddev %s (%d of %d replies)",
		r.Label, usF(s.MinUs), usF(s.P50Us), usF(s.MeanUs), usF(s.P99Us), usF(s.MaxUs), usF(s.StdDevUs), s.Received, s.Sent)
	fmt.Fprintf(b, `<g><title>%s</title>`, esc(tip))
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`, x(s.MinUs), y, x(s.MaxUs), y)
	for _, v := range []float64{s.MinUs, s.MaxUs} {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`, x(v), y-6, x(v), y+6)
	}
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="16" fill="#bcd3ee" stroke="#1f5fa8"/>`,
		x(s.P50Us), y-8, math.Max(x(s.P99Us)-x(s.P50Us), 1))
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#1f5fa8" stroke-width="3"/>`, x(s.P50Us), y-10, x(s.P50Us), y+10)
	mx := x(s.MeanUs)
	fmt.Fprintf(b, `<path d="M%.1f %.1f l5 5 l-5 5 l-5 -5 z" fill="#c62828"/>`, mx, y-5)
	lo, hi := math.Max(s.MeanUs-s.StdDevUs, 0), s.MeanUs+s.StdDevUs
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#c62828" stroke-width="2"/>`, x(lo), y+16, x(hi), y+16)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="middle">median %s</text>`, x(s.P50Us), y-13, esc(usF(s.P50Us)))
	b.WriteString(`</g>`)
}
