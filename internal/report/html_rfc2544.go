package report

import (
	"fmt"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/rfc2544"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// The RFC 2544 page: per direction, the RFC's tables and two charts.

type rfc2544View struct {
	R    *result.RFC2544
	Dirs []rfc2544Dir
}

type rfc2544Dir struct {
	Dir              vocab.Direction
	D                *result.RFC2544Direction
	Sender, Receiver string
	Figures          []figure
	Steps            []string // the loss table's columns
	LossRows         []rfc2544LossRow
	GenMark          string // explains a "*" in LossRows ("" when none)
}

type rfc2544LossRow struct {
	Frame   int
	Cells   []string
	Verdict string
}

func newRFC2544View(r *result.RFC2544) rfc2544View {
	v := rfc2544View{R: r}
	for _, dir := range vocab.Both {
		d := r.Directions[dir]
		if d == nil {
			continue
		}
		rd := rfc2544Dir{Dir: dir, D: d, Sender: sender(dir), Receiver: receiver(dir), Figures: rfc2544Figures(r.Config, d), GenMark: rfc2544GenMarked(d)}
		for _, f := range rfc2544.LossSteps() {
			rd.Steps = append(rd.Steps, fmt.Sprintf("%.0f %%", f*100))
		}
		for _, s := range d.Sizes {
			if len(s.Loss) == 0 {
				continue
			}
			rd.LossRows = append(rd.LossRows, rfc2544LossRow{Frame: s.FrameBytes, Cells: rfc2544LossCells(s), Verdict: rfc2544RateVerdict(s)})
		}
		v.Dirs = append(v.Dirs, rd)
	}
	return v
}

// rfc2544Figures are throughput against frame size (% of the line, both
// goals) and loss against offered load, a line per frame size.
func rfc2544Figures(c result.RFC2544Config, d *result.RFC2544Direction) []figure {
	tp := barChart{Title: "throughput against frame size, % of the line rate", YUnit: "%"}
	zero := barSeries{Name: "zero loss", Color: color(0)}
	ratio := barSeries{Name: fmt.Sprintf("at %.2g %% loss", c.LossRatioPct), Color: color(1), Outline: true}
	loss := lineChart{Title: "frame loss against offered load", XUnit: "% of line", YUnit: "% lost"}
	for i, s := range d.Sizes {
		if t := s.Throughput; t != nil {
			tp.Cats = append(tp.Cats, fmt.Sprintf("%d B", s.FrameBytes))
			zero.Vals = append(zero.Vals, t.ZeroLossPct)
			ratio.Vals = append(ratio.Vals, t.LossRatioPct)
		}
		if len(s.Loss) > 0 {
			ser := series{Name: fmt.Sprintf("%d B", s.FrameBytes), Color: color(i)}
			for _, l := range s.Loss {
				ser.Pts = append(ser.Pts, [2]float64{l.PctOfLine, l.LossPct})
			}
			loss.Series = append(loss.Series, ser)
		}
	}
	tp.Series = []barSeries{zero, ratio}
	return []figure{
		{tp.svg(), "The highest offered load each frame size passed with no frame lost (filled) and with at most the loss ratio lost (outline), from the search's trials, as % of the line rate (preamble and gap counted)."},
		{loss.svg(), "Frames lost at each offered load of the frame loss table, 100 % of the line rate down by 10 % until two steps lost nothing. A rate limit loses only above it; a lossy line loses the same share at every load."},
	}
}

const rfc2544Footer = "Frame sizes are Ethernet frames with the FCS (RFC 2544 §9); each is sent as a UDP datagram of frame − 46 bytes over IPv4 (− 66 over IPv6). Line frames/s = line rate / ((frame + 20) × 8): preamble, start delimiter and inter-frame gap counted. Mbit/s counts the frames' bytes. Latency is the round trip of probes inside the stream: the loaded direction there and the reply back. The buffer is (longest burst − 1) × (1 − line frames/s ÷ generator frames/s)."

const rfc2544Body = `<p>Line rate {{rateInt .R.Config.LineRateBps}} (100 % of every table); trials of {{dur .R.Config.Trial}} (RFC 2544 asks 60 s); search resolution {{printf "%.2g" .R.Config.ResolutionPct}} % of the line; second goal {{printf "%.2g" .R.Config.LossRatioPct}} % loss; MTU {{.R.Config.MTU}} B{{if .R.Config.IPv6}}, IPv6{{end}}.</p>
{{if .R.Warnings}}<h2>Warnings</h2><ul>{{range .R.Warnings}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{range .Dirs}}<h2>{{.Dir}}: sent by {{.Sender}}, counted by {{.Receiver}}</h2>
{{with .D.Lossy}}<div class="fail"><strong>A lossy line: zero-loss throughput is not meaningful here.</strong> {{.Why}}.<br>
BER {{printf "%.3g" .BER}} (95 % interval {{printf "%.3g" .BERLow}} to {{printf "%.3g" .BERHigh}}), size-independent loss {{printf "%.3g" .Q}} ({{printf "%.3g" .QLow}} to {{printf "%.3g" .QHigh}}): {{.Verdict}}; {{.Lost}} of {{.Sent}} frames lost.</div>{{end}}
{{template "figures" .Figures}}
<h3>Throughput (§26.1)</h3>
<table><tr><th>frame</th><th>UDP payload</th><th>line frames/s</th><th>zero loss frames/s</th><th>Mbit/s</th><th>% of line</th><th>at the loss ratio frames/s</th><th>% of line</th><th>trials</th><th class="l">note</th></tr>
{{range .D.Sizes}}{{$f := .FrameBytes}}<tr><td>{{.FrameBytes}} B</td><td>{{.PayloadBytes}} B</td><td>{{printf "%.0f" .LineFPS}}</td>{{with .Throughput}}<td>{{printf "%.0f" .ZeroLossFPS}}</td><td>{{frameMbps .ZeroLossFPS $f}}</td><td>{{printf "%.2f" .ZeroLossPct}}</td><td>{{printf "%.0f" .LossRatioFPS}}</td><td>{{printf "%.2f" .LossRatioPct}}</td><td>{{len .Trials}}</td><td class="l">{{if .GeneratorLimitedFPS}}generator-limited at {{printf "%.0f" .GeneratorLimitedFPS}} frames/s{{end}}</td>{{else}}<td colspan="7" class="l">{{dash .Skipped}}</td>{{end}}</tr>{{end}}</table>
<h3>Latency at the throughput rate (§26.2), round trip</h3>
<table><tr><th>frame</th><th>frames/s</th><th>min</th><th>mean</th><th>p50</th><th>p90</th><th>p99</th><th>max</th><th>expected unloaded</th><th>probes</th></tr>
{{range .D.Sizes}}{{$f := .FrameBytes}}{{with .Latency}}<tr><td>{{$f}} B</td><td>{{printf "%.0f" .RateFPS}}</td>{{with .Summary}}<td>{{us .MinUs}}</td><td>{{us .MeanUs}}</td><td>{{us .P50Us}}</td><td>{{us .P90Us}}</td><td>{{us .P99Us}}</td><td>{{us .MaxUs}}</td>{{end}}<td>{{if .ExpectedUs}}{{us .ExpectedUs}}{{else}}-{{end}}</td><td>{{.Summary.Replies}}</td></tr>{{end}}{{end}}</table>
<h3>Frame loss rate (§26.3), % lost at each offered load</h3>
<table><tr><th>frame</th>{{range .Steps}}<th>{{.}}</th>{{end}}<th class="l">does loss depend on the rate</th></tr>
{{range .LossRows}}<tr><td>{{.Frame}} B</td>{{range .Cells}}<td>{{.}}</td>{{end}}<td class="l">{{.Verdict}}</td></tr>{{end}}</table>
{{with .GenMark}}<p>{{.}}</p>{{end}}
<h3>Back-to-back frames (§26.4)</h3>
<table><tr><th>frame</th><th>longest burst</th><th>per search</th><th>generator frames/s</th><th>buffer frames</th><th>buffer bytes</th></tr>
{{range .D.Sizes}}{{$f := .FrameBytes}}{{with .BackToBack}}<tr><td>{{$f}} B</td><td>{{if .NoLimit}}≥ {{end}}{{printf "%.0f" .MeanLong}}</td><td>{{.Longest}}</td><td>{{printf "%.0f" .GeneratorFPS}}</td><td>{{if .NoLimit}}≥ {{end}}{{printf "%.1f" .BufferFrames}}</td><td>{{if .NoLimit}}≥ {{end}}{{bytesF .BufferBytes}}</td></tr>{{end}}{{end}}</table>
{{end}}`
