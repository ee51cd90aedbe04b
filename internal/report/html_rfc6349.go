package report

import (
	"bytes"
	"fmt"
	"html/template"
	"math"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// rfc6349View is the RFC 6349 page: verdict first, then the steps, the
// window walk as a chart (ideal vs actual), the sweeps and the
// throughput over time.
type rfc6349View struct {
	R     *result.RFC6349
	Chart template.HTML
	Time  []template.HTML // throughput step over time, per direction
	Sweep []sweepView
}

type sweepView struct {
	Dir   vocab.Direction
	S     *result.WindowSweep
	Chart template.HTML
}

func newRFC6349View(r *result.RFC6349) rfc6349View {
	v := rfc6349View{R: r, Chart: walkChart(r)}
	for _, dir := range vocab.Both {
		if sw := r.Sweep[dir]; sw != nil && len(sw.Points) > 0 {
			v.Sweep = append(v.Sweep, sweepView{Dir: dir, S: sw, Chart: sweepChart(dir, sw)})
		}
		if t := r.Throughput[dir]; t != nil && t.Series != nil {
			v.Time = append(v.Time, timeChart(dir, t, r.RTT.BaselineMs))
		}
	}
	return v
}

const rfc6349Footer = `Ideal = maximum achievable TCP throughput (RFC 6349 §4.1.1) from the bottleneck bandwidth, the path MTU, the negotiated MSS and the link framing. Actual = goodput counted by the receiving application. Efficiency and RTTs come from TCP_INFO of the sending sockets. Buffer delay = (mean RTT during the transfer − baseline) / baseline.`

const rfc6349Body = `<div class="{{if .R.Verdict.Pass}}pass{{else}}fail{{end}}"><strong>Verdict: {{if .R.Partial}}INCOMPLETE{{else if .R.Verdict.Pass}}PASS{{else}}FAIL{{end}}</strong>
<ul>{{range .R.Verdict.Reasons}}<li>{{.}}</li>{{end}}{{if .R.Partial}}<li>{{.R.Reason}}</li>{{end}}</ul></div>
{{if .R.Diagnosis}}<h2>Diagnosis</h2><ul>{{range .R.Diagnosis}}<li><strong>{{.Cause}}</strong>: {{.Detail}}</li>{{end}}</ul>{{end}}
{{if .R.Warnings}}<h2>Warnings</h2><ul>{{range .R.Warnings}}<li>{{.}}</li>{{end}}</ul>{{end}}
<h2>1-2. Path</h2>
<table><tr><th class="l">measure</th><th>up</th><th>down</th></tr>
<tr><td class="l">path MTU (probed)</td><td>{{.R.MTU.UpBytes}} B</td><td>{{.R.MTU.DownBytes}} B</td></tr>
<tr><td class="l">bottleneck bandwidth (layer 2)</td><td>{{if .R.BB.UpBps}}{{mbps .R.BB.UpBps}}{{else}}not tested{{end}}</td><td>{{if .R.BB.DownBps}}{{mbps .R.BB.DownBps}}{{else}}not tested{{end}}</td></tr>
<tr><td class="l">BDP</td><td>{{if .R.BDP.UpBytes}}{{printf "%.0f" .R.BDP.UpBytes}} B{{else}}not tested{{end}}</td><td>{{if .R.BDP.DownBytes}}{{printf "%.0f" .R.BDP.DownBytes}} B{{else}}not tested{{end}}</td></tr></table>
<p>Baseline RTT {{printf "%.3f" .R.RTT.BaselineMs}} ms ({{if eq .R.RTT.Source "tcp"}}TCP's own minimum: the UDP probes disagreed with it twice{{else}}minimum of {{.R.RTT.Probes}} UDP probes before any load{{end}}; TCP's own minimum {{printf "%.3f" .R.RTT.TCPMinMs}} ms). CIR {{mbpsInt .R.BB.CIRBps}}.</p>
{{if .R.RTT.CrossCheck}}<p><strong>Baseline cross-check failed:</strong> {{.R.RTT.CrossCheck}}</p>{{end}}
<h2>3. Window walk</h2>
{{.Chart}}
<table><tr><th>dir</th><th>% of BDP</th><th>window</th><th>connections</th><th>ideal</th><th>actual</th><th>actual / ideal</th><th>efficiency</th><th>buffer delay</th></tr>
{{range .R.Walk}}<tr><td>{{.Direction}}</td><td>{{.Percent}}</td><td>{{.WindowBytes}} B</td><td>{{.Connections}}</td><td>{{mbps .IdealBps}}</td><td>{{mbps .ActualBps}}</td><td>{{ratio .ActualBps .IdealBps}}</td><td>{{pct .EfficiencyPct}}</td><td>{{pct .BufferDelayPct}}</td></tr>{{end}}</table>
{{range .Sweep}}<h2>3b. Window sweep, {{.Dir}}</h2>
{{.Chart}}
<p>Plateau {{mbps .S.Analysis.PlateauBps}}; BDP {{printf "%.0f" .S.Analysis.BDPBytes}} B (where the line W × 8 / RTT meets the plateau); overflow from {{.S.Analysis.OverflowEdgeBytes}} B; bottleneck queue ≈ {{printf "%.0f" .S.Analysis.QueueBytes}} B (at least {{printf "%.0f" .S.Analysis.QueueMinBytes}} B).{{range .S.Analysis.Notes}} {{.}}{{end}}</p>
<table><tr><th>window</th><th>goodput</th><th>retransmitted</th><th>delay increment</th><th class="l">region</th></tr>
{{range .S.Points}}<tr><td>{{.WindowBytes}} B</td><td>{{mbps .GoodputBps}}</td><td>{{.RetransSegs}} seg</td><td>{{printf "%.1f" .DelayIncrementMs}} ms</td><td class="l">{{.Region}}</td></tr>{{end}}</table>{{end}}
<h2>4. Throughput at the BDP</h2>
<table><tr><th>dir</th><th>window</th><th>connections</th><th>ideal</th><th>actual</th><th>TTR</th><th>efficiency</th><th>buffer delay</th><th>seconds</th></tr>
{{range $d, $t := .R.Throughput}}<tr><td>{{$d}}</td><td>{{$t.WindowBytes}} B</td><td>{{$t.Connections}}</td><td>{{mbps $t.IdealBps}}</td><td>{{mbps $t.ActualBps}}</td><td>{{printf "%.3f" $t.TTR}}</td><td>{{pct $t.EfficiencyPct}}</td><td>{{pct $t.BufferDelayPct}}</td><td>{{printf "%.1f" $t.Seconds}}</td></tr>{{end}}</table>
{{range .Time}}{{.}}{{end}}
<h2>5. Shaping vs policing</h2>
<ul>{{range $d, $s := .R.Shaping}}<li>{{$d}}: <strong>{{$s.Verdict}}</strong>: {{$s.Detail}}</li>{{end}}</ul>
`

// regionColor marks a sweep point's region.
var regionColor = map[vocab.Region]string{vocab.Linear: "#2e7d32", vocab.Transition: "#9e9e9e", vocab.Saturation: "#1f5fa8", vocab.Overflow: "#c62828"}

// sweepChart draws a window sweep: goodput and the one-way delay
// increment against the window, each point coloured by its region, with
// the BDP and the overflow edge marked.
func sweepChart(dir vocab.Direction, sw *result.WindowSweep) template.HTML {
	maxW, maxG, maxD := 0.0, 0.0, 0.0
	for _, p := range sw.Points {
		maxW = math.Max(maxW, float64(p.WindowBytes))
		maxG = math.Max(maxG, p.GoodputBps)
		maxD = math.Max(maxD, p.DelayIncrementMs)
	}
	if maxW <= 0 || maxG <= 0 {
		return ""
	}
	maxW, maxG, maxD = maxW*1.05, maxG*1.1, math.Max(maxD*1.1, 1)
	const w, ph, left, gap, top0 = 640, 140, 60, 45, 38
	h := top0 + 2*ph + gap + 60
	x := func(b float64) float64 { return left + (w-left-20)*b/maxW }
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="%s: window sweep">`, w, h, dir)
	fmt.Fprintf(&b, `<text x="%d" y="14" font-size="12" font-weight="bold">%s: goodput against the window</text>`, left, dir)
	panel := func(top int, label string, maxV float64, val func(i int) float64) {
		bottom := top + ph
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`, left, top, left, bottom, left, bottom, w-10, bottom)
		for i := 0; i <= 2; i++ {
			v := maxV * float64(i) / 2
			fmt.Fprintf(&b, `<text x="%d" y="%.0f" font-size="11" text-anchor="end">%.3g</text>`, left-5, float64(bottom)-float64(ph)*float64(i)/2+4, v)
		}
		fmt.Fprintf(&b, `<text x="12" y="%d" font-size="11" transform="rotate(-90 12 %d)">%s</text>`, top+ph/2+30, top+ph/2+30, label)
		for _, mark := range []struct {
			at    float64
			label string
		}{{sw.Analysis.BDPBytes, "BDP"}, {float64(sw.Analysis.OverflowEdgeBytes), "overflow"}} {
			if mark.at > 0 && mark.at < maxW {
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#777" stroke-dasharray="4 4"/><text x="%.1f" y="%d" font-size="10" fill="#555">%s</text>`,
					x(mark.at), top, x(mark.at), bottom, x(mark.at)+3, top+10, mark.label)
			}
		}
		for i, p := range sw.Points {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"><title>%d B: %s</title></circle>`,
				x(float64(p.WindowBytes)), float64(bottom)-float64(ph)*val(i)/maxV, regionColor[p.Region], p.WindowBytes, p.Region)
		}
	}
	panel(top0, "Mbit/s", maxG/1e6, func(i int) float64 { return sw.Points[i].GoodputBps / 1e6 })
	dTop := top0 + ph + gap
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12" font-weight="bold">%s: one-way delay increment in the data direction against the window</text>`, left, dTop-20, dir)
	panel(dTop, "ms", maxD, func(i int) float64 { return sw.Points[i].DelayIncrementMs })
	for i := 0; i <= 4; i++ {
		v := maxW * float64(i) / 4
		anchor := "middle"
		if i == 0 {
			anchor = "start"
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" text-anchor="%s">%.0f kB</text>`, x(v), dTop+ph+15, anchor, v/1e3)
	}
	lx := left
	for _, reg := range []vocab.Region{vocab.Linear, vocab.Transition, vocab.Saturation, vocab.Overflow} {
		fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="4" fill="%s"/><text x="%d" y="%d" font-size="11">%s</text>`, lx, h-12, regionColor[reg], lx+8, h-8, reg)
		lx += 110
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // built from numbers and fixed strings only
}

// timeChart draws one direction of the throughput step over time: the
// receiver's rate (100 ms windows) against the ideal, and the sender's
// smoothed RTT against the baseline, on one time axis.
func timeChart(dir vocab.Direction, t *result.ThroughputRow, baselineMs float64) template.HTML {
	s := t.Series
	end, topRate, topRTT := 0.0, t.IdealBps, baselineMs
	for _, p := range s.Rate {
		end, topRate = math.Max(end, p.TS), math.Max(topRate, p.Bps)
	}
	for _, p := range s.RTT {
		end, topRTT = math.Max(end, p.TS), math.Max(topRTT, float64(p.Us)/1e3)
	}
	if end <= 0 || topRate <= 0 || topRTT <= 0 {
		return ""
	}
	topRate *= 1.1
	topRTT *= 1.1
	const w, ph, left, gap, top0 = 640, 150, 60, 45, 38 // width, panel height, left margin, gap between panels, title space
	h := top0 + 2*ph + gap + 45
	x := func(ts float64) float64 { return left + (w-left-20)*ts/end }
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="%s: rate and RTT over time">`, w, h, dir)
	fmt.Fprintf(&b, `<text x="%d" y="14" font-size="12" font-weight="bold">%s: goodput at the receiver (%s clock, 100 ms windows every 50 ms)</text>`, left, dir, s.RateClock)
	panel := func(top int, label string, maxV float64, ref float64, refLabel string, pts [][2]float64) {
		bottom := top + ph
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`, left, top, left, bottom, left, bottom, w-10, bottom)
		for i := 0; i <= 2; i++ {
			v := maxV * float64(i) / 2
			y := float64(bottom) - float64(ph)*float64(i)/2
			fmt.Fprintf(&b, `<text x="%d" y="%.0f" font-size="11" text-anchor="end">%.3g</text>`, left-5, y+4, v)
		}
		fmt.Fprintf(&b, `<text x="12" y="%d" font-size="11" transform="rotate(-90 12 %d)">%s</text>`, top+ph/2+30, top+ph/2+30, label)
		yOf := func(v float64) float64 { return float64(bottom) - float64(ph)*v/maxV }
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#c62828" stroke-dasharray="6 4"><title>%s</title></line>`, left, yOf(ref), w-10, yOf(ref), refLabel)
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" text-anchor="end" fill="#c62828">- - %s</text>`, w-10, top-6, refLabel)
		b.WriteString(`<polyline fill="none" stroke="#1f5fa8" stroke-width="1.5" points="`)
		for _, p := range pts {
			fmt.Fprintf(&b, "%.1f,%.1f ", x(p[0]), yOf(p[1]))
		}
		b.WriteString(`"/>`)
	}
	rate := make([][2]float64, len(s.Rate))
	for i, p := range s.Rate {
		rate[i] = [2]float64{p.TS, p.Bps / 1e6}
	}
	rtt := make([][2]float64, len(s.RTT))
	for i, p := range s.RTT {
		rtt[i] = [2]float64{p.TS, float64(p.Us) / 1e3}
	}
	panel(top0, "Mbit/s", topRate/1e6, t.IdealBps/1e6, fmt.Sprintf("ideal %.2f Mbit/s", t.IdealBps/1e6), rate)
	rttTop := top0 + ph + gap
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12" font-weight="bold">%s: smoothed RTT of the sender (%s clock, every 100 ms)</text>`, left, rttTop-20, dir, s.RTTClock)
	panel(rttTop, "RTT ms", topRTT, baselineMs, fmt.Sprintf("baseline %.3f ms", baselineMs), rtt)
	for i := 0; i <= 4; i++ {
		ts := end * float64(i) / 4
		anchor := "middle"
		if i == 0 {
			anchor = "start"
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" text-anchor="%s">%.1f s</text>`, x(ts), rttTop+ph+15, anchor, ts)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // built from numbers and fixed strings only
}

// walkChart draws grouped bars per walk step: ideal (outline) and actual
// (filled), in Mbit/s, with a labelled axis.
func walkChart(r *result.RFC6349) template.HTML {
	if len(r.Walk) == 0 {
		return ""
	}
	top := 0.0
	for _, s := range r.Walk {
		top = math.Max(top, math.Max(s.IdealBps, s.ActualBps))
	}
	const w, h, left, bottom = 640, 260, 60, 40
	barW := float64(w-left-20) / float64(len(r.Walk)) / 2.5
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="window walk: ideal vs actual throughput">`, w, h)
	fmt.Fprintf(&b, `<line x1="%d" y1="10" x2="%d" y2="%d" stroke="#333"/><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`, left, left, h-bottom, left, h-bottom, w-10, h-bottom)
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		y := float64(h-bottom) - float64(h-bottom-10)*float64(i)/4
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" font-size="11" text-anchor="end">%.0f</text>`, left-5, y+4, v/1e6)
	}
	fmt.Fprintf(&b, `<text x="12" y="%d" font-size="11" transform="rotate(-90 12 %d)">Mbit/s</text>`, h/2, h/2)
	for i, s := range r.Walk {
		x := float64(left) + 10 + float64(i)*barW*2.5
		for j, v := range []float64{s.IdealBps, s.ActualBps} {
			bh := float64(h-bottom-10) * v / top
			style := `fill="none" stroke="#1f5fa8" stroke-width="2"`
			if j == 1 {
				style = `fill="#1f5fa8"`
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" %s><title>%s %d%%: %s %.2f Mbit/s</title></rect>`,
				x+float64(j)*barW, float64(h-bottom)-bh, barW-2, bh, style, s.Direction, s.Percent, []string{"ideal", "actual"}[j], v/1e6)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" text-anchor="middle">%s %d%%</text>`, x+barW, h-bottom+15, s.Direction, s.Percent)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11">outline: ideal, filled: actual; x: share of the BDP</text></svg>`, left, h-5)
	return template.HTML(b.String()) // built from numbers and fixed strings only
}
