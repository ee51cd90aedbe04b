package report

// Charts as inline SVG, drawn from numbers and fixed strings only; every
// piece of text that comes from a document is escaped. Non-finite values
// are left out, so a chart never prints NaN or Inf.

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
)

// palette colours series in order.
var palette = []string{"#1f5fa8", "#c62828", "#2e7d32", "#ef6c00", "#6a1b9a", "#00838f", "#5d4037", "#9e9d24"}

func color(i int) string { return palette[i%len(palette)] }

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func esc(s string) string { return template.HTMLEscapeString(s) }

// series is one line of a chart, in the chart's units.
type series struct {
	Name  string
	Color string
	Pts   [][2]float64 // x, y
}

// refLine is a dashed horizontal line across a chart: a figure the
// series are read against (a target, a mean over the whole test).
type refLine struct {
	Y     float64
	Label string
	Color string
}

// lineChart is one panel: series against a shared x axis, with the
// y axis from 0.
type lineChart struct {
	Title        string  // what the chart shows, drawn above it
	XUnit, YUnit string  // "s", "Mbit/s"
	XMax         float64 // the x axis's end, when past the last point (the end of the last interval)
	Series       []series
	Refs         []refLine
}

// Chart geometry: width, panel height, left margin, title space.
const cw, cph, cleft, ctop = 640, 170, 64, 30

// bounds are the largest x and y of the chart's finite points and refs;
// ok is false when there is nothing to draw.
func (c lineChart) bounds() (maxX, maxY float64, ok bool) {
	for _, s := range c.Series {
		for _, p := range s.Pts {
			if finite(p[0]) && finite(p[1]) {
				maxX, maxY, ok = math.Max(maxX, p[0]), math.Max(maxY, p[1]), true
			}
		}
	}
	for _, r := range c.Refs {
		if finite(r.Y) {
			maxY = math.Max(maxY, r.Y)
		}
	}
	if finite(c.XMax) {
		maxX = math.Max(maxX, c.XMax)
	}
	if maxX <= 0 {
		maxX = 1
	}
	if maxY <= 0 {
		maxY = 1
	}
	return maxX, maxY * 1.1, ok
}

// svg draws the chart, or nothing when it has no finite point.
func (c lineChart) svg() template.HTML {
	maxX, maxY, ok := c.bounds()
	if !ok {
		return ""
	}
	legend := len(c.Series) + len(c.Refs)
	h := ctop + cph + 40 + 16*((legend+1)/2)
	bottom := float64(ctop + cph)
	x := func(v float64) float64 { return cleft + (cw-cleft-20)*v/maxX }
	y := func(v float64) float64 { return bottom - cph*v/maxY }
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="%s">`, cw, h, esc(c.Title))
	fmt.Fprintf(&b, `<text x="%d" y="14" font-size="12" font-weight="bold">%s</text>`, cleft, esc(c.Title))
	axes(&b, ctop, cph, maxY, c.YUnit)
	for i := 0; i <= 4; i++ {
		v := maxX * float64(i) / 4
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" font-size="11" text-anchor="middle">%.3g %s</text>`, x(v), bottom+15, v, esc(c.XUnit))
	}
	for _, r := range c.Refs {
		if finite(r.Y) {
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-dasharray="6 4"><title>%s</title></line>`,
				cleft, y(r.Y), cw-10, y(r.Y), r.Color, esc(r.Label))
		}
	}
	for _, s := range c.Series {
		b.WriteString(`<polyline fill="none" stroke-width="1.5" stroke="` + s.Color + `" points="`)
		for _, p := range s.Pts {
			if finite(p[0]) && finite(p[1]) {
				fmt.Fprintf(&b, "%.1f,%.1f ", x(p[0]), y(p[1]))
			}
		}
		b.WriteString(`"/>`)
		for _, p := range s.Pts {
			if finite(p[0]) && finite(p[1]) {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"><title>%s: %.4g %s at %.4g %s</title></circle>`,
					x(p[0]), y(p[1]), s.Color, esc(s.Name), p[1], esc(c.YUnit), p[0], esc(c.XUnit))
			}
		}
	}
	keys := make([]legendKey, 0, legend)
	for _, s := range c.Series {
		keys = append(keys, legendKey{s.Name, s.Color, false})
	}
	for _, r := range c.Refs {
		keys = append(keys, legendKey{r.Label, r.Color, true})
	}
	drawLegend(&b, keys, ctop+cph+32)
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // numbers, fixed strings and escaped text only
}

// axes draws a panel's axes, three y ticks and the y unit.
func axes(b *bytes.Buffer, top, ph int, maxY float64, unit string) {
	bottom := top + ph
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`,
		cleft, top, cleft, bottom, cleft, bottom, cw-10, bottom)
	for i := 0; i <= 2; i++ {
		v := maxY * float64(i) / 2
		fmt.Fprintf(b, `<text x="%d" y="%.0f" font-size="11" text-anchor="end">%.3g</text>`, cleft-5, float64(bottom)-float64(ph)*float64(i)/2+4, v)
	}
	fmt.Fprintf(b, `<text x="12" y="%d" font-size="11" transform="rotate(-90 12 %d)">%s</text>`, top+ph/2+20, top+ph/2+20, esc(unit))
}

type legendKey struct {
	name, color string
	dashed      bool
}

// drawLegend lists the keys two to a row from y on.
func drawLegend(b *bytes.Buffer, keys []legendKey, y int) {
	for i, k := range keys {
		lx, ly := cleft+(i%2)*290, y+16*(i/2)
		dash := ""
		if k.dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/><text x="%d" y="%d" font-size="11">%s</text>`,
			lx, ly-4, lx+20, ly-4, k.color, dash, lx+25, ly, esc(k.name))
	}
}

// barSeries is one set of bars, a value per category.
type barSeries struct {
	Name    string
	Color   string
	Outline bool // drawn as an outline (a figure the filled bars are read against)
	Vals    []float64
}

// barChart is grouped bars: a group per category, a bar per series.
type barChart struct {
	Title, YUnit string
	Cats         []string
	Series       []barSeries
}

func (c barChart) svg() template.HTML {
	top := 0.0
	for _, s := range c.Series {
		for _, v := range s.Vals {
			if finite(v) {
				top = math.Max(top, v)
			}
		}
	}
	if top <= 0 || len(c.Cats) == 0 {
		return ""
	}
	top *= 1.1
	h := ctop + cph + 40 + 16*((len(c.Series)+1)/2)
	bottom := float64(ctop + cph)
	group := float64(cw-cleft-20) / float64(len(c.Cats))
	barW := group * 0.8 / float64(len(c.Series))
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="%s">`, cw, h, esc(c.Title))
	fmt.Fprintf(&b, `<text x="%d" y="14" font-size="12" font-weight="bold">%s</text>`, cleft, esc(c.Title))
	axes(&b, ctop, cph, top, c.YUnit)
	for i, cat := range c.Cats {
		gx := float64(cleft) + group*float64(i) + group*0.1
		for j, s := range c.Series {
			if i >= len(s.Vals) || !finite(s.Vals[i]) {
				continue
			}
			bh := cph * s.Vals[i] / top
			style := `fill="` + s.Color + `"`
			if s.Outline {
				style = `fill="none" stroke="` + s.Color + `" stroke-width="1.5"`
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" %s><title>%s, %s: %.4g %s</title></rect>`,
				gx+barW*float64(j), bottom-bh, math.Max(barW-1, 1), bh, style, esc(cat), esc(s.Name), s.Vals[i], esc(c.YUnit))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" font-size="10" text-anchor="middle">%s</text>`, gx+group*0.4, bottom+14, esc(cat))
	}
	keys := make([]legendKey, len(c.Series))
	for i, s := range c.Series {
		keys[i] = legendKey{s.Name, s.Color, s.Outline}
	}
	drawLegend(&b, keys, ctop+cph+32)
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // numbers, fixed strings and escaped text only
}
