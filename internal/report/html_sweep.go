package report

// The pages of the sweeps and the packet trains.

import (
	"fmt"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/units"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

type windowSweepView struct {
	R        *result.WindowSweep
	Dir      vocab.Direction
	Side     string // who sends
	Complete int    // points measured to their end
	Figures  []figure
}

func newWindowSweepView(r *result.WindowSweep) windowSweepView {
	v := windowSweepView{R: r, Dir: vocab.Up, Side: "this host sends"}
	if r.Config.Reverse {
		v.Dir, v.Side = vocab.Down, "the responder sends"
	}
	for _, p := range r.Points {
		if !p.Partial {
			v.Complete++
		}
	}
	if len(r.Points) > 0 {
		v.Figures = []figure{{sweepChart(v.Dir, r), fmt.Sprintf("One TCP test per exact window (%v each, cc %s, %s). Top: goodput counted by the receiver over each test. Bottom: the median one-way delay increment of the data direction during the load, over the least delay of %d idle probes sent before it (UDP probes every %v; the clocks' offset cancels). Colour: the region the point falls in; dashed: the BDP and the overflow edge.",
			r.Config.Duration, orDash(r.Config.CC), v.Side, r.Config.BaselineProbes, r.Config.ProbeGap)}}
	}
	return v
}

const windowSweepFooter = "Regions: linear (window below the BDP: goodput = W × 8 / RTT), transition, saturation (goodput at the bottleneck rate, the queue holds W − BDP), overflow (the queue overflows: loss). Bottleneck rate = the plateau; BDP = where the line meets the plateau; queue = overflow edge − BDP, all of TCP payload (docs/sweep.md)."

const windowSweepBody = `{{if .R.Partial}}<div class="partial"><strong>PARTIAL:</strong> {{.R.PartialReason}}</div>{{end}}
<p>Direction {{.Dir}} ({{.Side}}); one mss = {{.R.Config.MSS}} B.</p>
{{template "figures" .Figures}}
<h2>What the regions say</h2>
{{if .Complete}}{{with .R.Analysis}}<ul>
{{if .PlateauBps}}<li>bottleneck rate (saturation plateau, TCP payload): {{rate .PlateauBps}}</li>{{end}}
{{if .RateFromDelayBps}}<li>bottleneck rate from the delay increments' slope: {{rate .RateFromDelayBps}}</li>{{end}}
{{if .LineRTTMs}}<li>linear region: goodput = W × 8 / {{printf "%.3f" .LineRTTMs}} ms, up to {{bytesI .LinearEndBytes}}</li>{{end}}
{{if .BDPBytes}}<li>BDP (where the line meets the plateau): {{bytesF .BDPBytes}}</li>{{end}}
{{if .OverflowEdgeBytes}}<li>overflow from {{bytesI .OverflowEdgeBytes}} (last lossless {{bytesI .LastLosslessBytes}}){{if .BDPBytes}}; bottleneck queue = overflow edge − BDP: {{bytesF .QueueBytes}} (at least {{bytesF .QueueMinBytes}}){{end}}</li>{{end}}
{{range .Notes}}<li>note: {{.}}</li>{{end}}</ul>{{end}}{{else}}<p>Nothing yet: no window was measured to its end.</p>{{end}}
<h2>Points</h2>
<table><tr><th>window</th><th>window</th><th>goodput</th><th>rate p10 .. p90 (sd)</th><th>retransmitted</th><th>loss</th><th>delay increment</th><th>model</th><th class="l">region</th></tr>
{{range .R.Points}}<tr><td>{{bytesI .WindowBytes}}</td><td>{{printf "%.1f" .WindowMSS}} mss</td><td>{{rate .GoodputBps}}</td><td>{{rate .RateP10Bps}} .. {{rate .RateP90Bps}} ({{rate .RateStdDevBps}})</td><td>{{.RetransSegs}} seg</td><td>{{printf "%.3f" .LossPct}} %</td><td>{{if .HasDelay}}{{printf "%.1f" .DelayIncrementMs}} ms{{else}}-{{end}}</td><td>{{if .ModelIncrementMs}}{{printf "%.1f" .ModelIncrementMs}} ms{{end}}</td><td class="l">{{if .Partial}}(partial){{else}}{{.Region}}{{end}}</td></tr>
{{if gt (len .Classes) 1}}{{range .Classes}}<tr><td></td><td colspan="8" class="l">DSCP {{.DSCP}}: forward {{printf "%.1f" .FwdMedianMs}} ms (max {{printf "%.1f" .FwdMaxMs}} ms), reverse {{printf "%.1f" .RevMedianMs}} ms (max {{printf "%.1f" .RevMaxMs}} ms), {{.Received}}/{{.Sent}} replies</td></tr>{{end}}{{end}}{{end}}</table>`

type msgLenView struct {
	R       *result.MsgLenSweep
	Figures []figure
}

func newMsgLenView(r *result.MsgLenSweep) msgLenView {
	top := 0.0
	for _, p := range r.Points {
		top = max(top, p.TCPGoodputBps, p.UDPSenderBps, p.UDPReceiverBps)
	}
	div, unit := rateScale(top)
	c := barChart{Title: "goodput against the size of each write, TCP and UDP", YUnit: unit}
	tcp := barSeries{Name: "TCP goodput", Color: color(0)}
	sent := barSeries{Name: "UDP sent", Color: color(1), Outline: true}
	got := barSeries{Name: "UDP received", Color: color(1)}
	for _, p := range r.Points {
		c.Cats = append(c.Cats, units.FormatBytes(float64(p.SizeBytes)))
		tcp.Vals = append(tcp.Vals, p.TCPGoodputBps/div)
		sent.Vals = append(sent.Vals, p.UDPSenderBps/div)
		got.Vals = append(got.Vals, p.UDPReceiverBps/div)
	}
	c.Series = []barSeries{tcp, sent, got}
	udpTop := 0.0
	for _, p := range r.Points {
		udpTop = max(udpTop, p.UDPSenderBps, p.UDPReceiverBps)
	}
	udiv, uunit := rateScale(udpTop)
	u := barChart{Title: "UDP alone: sent and received against the datagram size", YUnit: uunit, Cats: c.Cats}
	for _, s := range []barSeries{sent, got} {
		vals := make([]float64, len(s.Vals))
		for i, v := range s.Vals {
			vals[i] = v * div / udiv
		}
		s.Vals = vals
		u.Series = append(u.Series, s)
	}
	udp := figure{u.svg(), "The UDP bars of the chart above on their own scale: this host's sending rate (outline) and the responder's receiving rate (filled), payload."}
	return msgLenView{R: r, Figures: []figure{{c.svg(), fmt.Sprintf("Uploads from this host, %v per size and protocol. TCP: goodput counted by the responder with every write of that size. UDP at an offered %s: the rate this host sent (outline) and the responder received (filled), with datagrams of that size (at most 65,507 B); where they part, datagrams are lost.",
		r.Config.Duration, units.FormatRate(float64(r.Config.UDPRateBps)))}, udp}}
}

const msgLenFooter = "Rates count payload. TCP B/write is the payload over the number of write calls (the last write may be short)."

const msgLenBody = `{{if .R.Partial}}<div class="partial"><strong>PARTIAL:</strong> {{.R.PartialReason}}</div>{{end}}
{{template "figures" .Figures}}
<h2>What the sweep says</h2>
<ul>{{with .R.Analysis}}{{if .TCPKneeBytes}}<li>TCP goodput reaches 90 % of its best ({{rate .TCPMaxBps}}) at writes of {{bytesI .TCPKneeBytes}}; larger writes gain little.</li>{{end}}
{{if .UDPDivergeBytes}}<li>UDP: from {{bytesI .UDPDivergeBytes}} datagrams on the receiver counts less than 99 % of what was sent: datagrams are lost.</li>{{else}}<li>UDP: the receiver kept up with the sender at every size.</li>{{end}}{{end}}</ul>
<h2>Points</h2>
<table><tr><th>write size</th><th>TCP goodput</th><th>TCP B/write</th><th>TCP retransmitted</th><th>UDP datagram</th><th>UDP sender</th><th>UDP receiver</th><th>UDP loss</th></tr>
{{range .R.Points}}<tr><td>{{bytesI .SizeBytes}}{{if .Partial}} (partial){{end}}</td><td>{{rate .TCPGoodputBps}}</td><td>{{printf "%.0f" .TCPBytesPerWrite}} B</td><td>{{.TCPRetransSegs}} seg</td><td>{{.UDPSizeBytes}} B</td><td>{{rate .UDPSenderBps}}</td><td>{{rate .UDPReceiverBps}}</td><td>{{printf "%.3f" .UDPLossPct}} %</td></tr>{{end}}</table>`

type trainsView struct {
	R    *result.Trains
	Dirs []trainsDir
}

type trainsDir struct {
	Dir              vocab.Direction
	D                *result.TrainsDirection
	Sender, Receiver string
}

func newTrainsView(r *result.Trains) trainsView {
	v := trainsView{R: r}
	for _, dir := range vocab.Both {
		if d := r.Directions[dir]; d != nil {
			v.Dirs = append(v.Dirs, trainsDir{dir, d, sender(dir), receiver(dir)})
		}
	}
	return v
}

const trainsFooter = "Rates count each packet's payload plus the IP, UDP and link overhead. A train's head is what arrived before the first loss or the first sign of a queue; its tail what followed. A queue spaces the head at its rate and delays it; a policer passes its bucket unspaced, then only its rate."

const trainsBody = `<p>Rate as far as known {{rate .R.Config.RateBps}}{{if .R.Config.CIRBps}}, CIR {{rate .R.Config.CIRBps}}{{end}}; base RTT {{dur .R.Config.RTT}}; path MTU {{.R.Config.MTU}} B; link framing {{.R.Config.Link}}.</p>
{{if .R.Warnings}}<h2>Warnings</h2><ul>{{range .R.Warnings}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{range .Dirs}}<h2>{{.Dir}}: {{if .D.Verdict}}{{.D.Verdict.Kind}}{{else}}no verdict{{end}}</h2>
<p>Sent by {{.Sender}}, read by {{.Receiver}} on its clock. BDP {{bytesF .D.BDPBytes}}.</p>
{{with .D.Verdict}}<table><tr><th class="l">verdict</th><th>trains sent at</th><th>rate</th><th>queue</th><th>bucket</th><th>longest train</th></tr>
<tr><td class="l"><strong>{{.Kind}}</strong></td><td>{{rate .SenderBps}}</td><td>{{if .RateBps.Value}}{{rate .RateBps.Value}} ± {{rate .RateBps.Err}}{{else}}-{{end}}</td><td>{{if .QueueBytes.Value}}{{if .QueueAtLeast}}at least {{end}}{{printf "%.0f" .QueueBytes.Value}} ± {{printf "%.0f" .QueueBytes.Err}} B{{else}}-{{end}}</td><td>{{if .BucketBytes.Value}}{{printf "%.0f" .BucketBytes.Value}} ± {{printf "%.0f" .BucketBytes.Err}} B{{else}}-{{end}}</td><td>{{bytesI .LongestBytes}}</td></tr></table>
<p>{{.Why}}</p>{{end}}
{{if .D.SmallQueue}}<p><strong>The queue is too small for the BDP</strong> (below 3/7 of {{bytesF .D.BDPBytes}}): a CUBIC flow cannot keep the link busy after a loss.</p>{{end}}
<table><tr><th>packets</th><th>payload</th><th>received</th><th>sent at</th><th>head</th><th>head arrived at</th><th>tail</th><th>tail arrived at</th><th>delay rise</th><th>tail delay rise</th><th>local drops</th></tr>
{{range .D.Rows}}<tr><td>{{.Packets}}</td><td>{{.SizeBytes}} B</td><td>{{.Reading.Got}}/{{.Reading.Sent}}</td><td>{{rate .Reading.SendBps}}</td><td>{{.Reading.HeadPackets}} pkt, {{bytesI .Reading.HeadBytes}}</td><td>{{rate .Reading.HeadBps}}</td><td>{{.Reading.TailPackets}} pkt</td><td>{{if .Reading.TailBps}}{{rate .Reading.TailBps}}{{else}}-{{end}}</td><td>{{dur .Reading.DelayRise}}</td><td>{{dur .Reading.TailRise}}</td><td>{{.LocalDrops}}</td></tr>{{end}}</table>{{end}}`
