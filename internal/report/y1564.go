package report

import (
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/units"
	"github.com/fullpipe/fullpipe/internal/y1564"
)

// y1564Text is a table per service and direction (a row per step: IR,
// FLR, FTD, FDV, availability, verdict), the reasons of each step that
// did not simply pass, the policing flag in words, and the run's verdict.
func y1564Text(w io.Writer, r *result.Y1564) {
	for _, s := range r.Services {
		fmt.Fprintf(w, "\n%s, %s: %s\n", s.Name, s.Direction, s.Verdict)
		fmt.Fprintf(w, "  %-12s %12s %12s %9s %10s %10s %9s  %s\n", "step", "offered", "IR", "FLR", "FTD", "FDV", "avail", "verdict")
		for _, st := range y1564Rows(s) {
			f := st.Figures
			fmt.Fprintf(w, "  %-12s %12s %12s %9s %10s %10s %9s  %s\n", st.Step.Name(), mbps(f.OfferedBps), mbps(f.IRBps),
				fmt.Sprintf("%.3g %%", f.FLRPct), y1564Delay(f, f.FTD), y1564Delay(f, f.FDV), fmt.Sprintf("%.4g %%", f.AvailPct), st.Judgement.Verdict)
		}
		for _, st := range y1564Rows(s) {
			if st.Judgement.Verdict != y1564.Pass || st.Judgement.Policing != y1564.PolicingNone {
				fmt.Fprintf(w, "  %s: %s\n", st.Step.Name(), strings.Join(st.Judgement.Reasons, "; "))
			}
		}
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
	if r.Partial {
		fmt.Fprintf(w, "PARTIAL: %s\n", r.PartialReason)
	}
	fmt.Fprintf(w, "\nY.1564 verdict: %s (FTD and FDV are round trips of the probes in each stream)\n", r.Verdict)
}

// y1564Rows are a service's configuration steps then its performance
// step.
func y1564Rows(s result.Y1564Service) []result.Y1564Step {
	rows := append([]result.Y1564Step(nil), s.Steps...)
	if s.Performance != nil {
		rows = append(rows, *s.Performance)
	}
	return rows
}

// y1564Delay is a delay figure, or "-" when not measured.
func y1564Delay(f y1564.Figures, d time.Duration) string {
	if !f.Delayed() {
		return "-"
	}
	return units.FormatDuration(d)
}

// y1564View is the page's: a table and a chart per service.
type y1564View struct {
	R        *result.Y1564
	Services []y1564ServiceView
}

type y1564ServiceView struct {
	S     result.Y1564Service
	Rows  []result.Y1564Step
	Chart template.HTML
}

func newY1564View(r *result.Y1564) y1564View {
	v := y1564View{R: r}
	for _, s := range r.Services {
		rows := y1564Rows(s)
		c := barChart{Title: fmt.Sprintf("%s, %s: information rate per step", s.Name, s.Direction), YUnit: "Mbit/s"}
		offered := barSeries{Name: "offered", Color: color(0), Outline: true}
		ir := barSeries{Name: "IR (received, layer 2)", Color: color(2)}
		for _, st := range rows {
			c.Cats = append(c.Cats, st.Step.Name())
			offered.Vals = append(offered.Vals, st.Figures.OfferedBps/1e6)
			ir.Vals = append(ir.Vals, st.Figures.IRBps/1e6)
		}
		c.Series = []barSeries{offered, ir}
		v.Services = append(v.Services, y1564ServiceView{S: s, Rows: rows, Chart: c.svg()})
	}
	return v
}

const y1564Footer = "Rates are information rates at layer 2: the bits of each Ethernet frame from destination MAC through FCS, without preamble and inter-frame gap; a frame of F bytes carries F − 46 bytes of UDP payload. FLR is frames lost over frames sent. FTD is the mean round trip of the latency probes carried in the stream (there under its load and back), FDV the 99th percentile of those round trips less their minimum. A second is unavailable when it lost more than the configured share of its frames; availability is the share of available seconds. At CIR+EIR frames above the CIR may be lost; at the policing step the IR must stay within CIR+EIR plus the bucket over the step's time."

const y1564Body = `<div class="{{if eq (printf "%s" .R.Verdict) "PASS"}}pass{{else}}fail{{end}}"><strong>Y.1564 verdict: {{.R.Verdict}}</strong></div>
{{if .R.Warnings}}<h2>Warnings</h2><ul>{{range .R.Warnings}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{range .Services}}<h2>{{.S.Name}}, {{.S.Direction}}: {{.S.Verdict}}</h2>
<p>Configuration test: {{if .S.ConfigVerdict}}{{.S.ConfigVerdict}}{{else}}skipped{{end}}; performance test: {{if .S.PerfVerdict}}{{.S.PerfVerdict}}{{else}}skipped{{end}}.</p>
<table><tr><th class="l">step</th><th>offered</th><th>IR</th><th>FLR</th><th>FTD (round trip)</th><th>FDV</th><th>availability</th><th>verdict</th><th class="l">why</th></tr>
{{range .Rows}}<tr><td class="l">{{.Step.Name}}</td><td>{{rate .Figures.OfferedBps}}</td><td>{{rate .Figures.IRBps}}</td><td>{{printf "%.3g %%" .Figures.FLRPct}}</td><td>{{if .Figures.Delayed}}{{dur .Figures.FTD}}{{else}}-{{end}}</td><td>{{if .Figures.Delayed}}{{dur .Figures.FDV}}{{else}}-{{end}}</td><td>{{printf "%.4g %%" .Figures.AvailPct}}</td><td><strong>{{.Judgement.Verdict}}</strong></td><td class="l">{{join .Judgement.Reasons}}</td></tr>{{end}}</table>
{{if .Chart}}<figure>{{.Chart}}<figcaption>What each step offered (outline) and what arrived (filled), layer 2, measured by the receiver over the step.</figcaption></figure>{{end}}
{{end}}`
