package report

// The pages of the udp, rtt and mtu tests.

import (
	"fmt"
	"math"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/units"
)

type udpView struct {
	R                *result.UDP
	Sender, Receiver string
	Figures          []figure
}

func newUDPView(r *result.UDP) udpView {
	s := r.Summary
	v := udpView{R: r, Sender: sender(s.Direction), Receiver: receiver(s.Direction)}
	top := math.Max(float64(s.TargetRateBps), s.SenderRateBps)
	for _, iv := range r.Intervals {
		top = math.Max(top, iv.ThroughputBps)
	}
	div, unit := rateScale(top)
	rate := lineChart{Title: "receiver's rate per interval against the sender's", XUnit: "s", YUnit: unit,
		Refs: []refLine{{float64(s.TargetRateBps) / div, "target rate " + units.FormatRate(float64(s.TargetRateBps)), "#777"},
			{s.SenderRateBps / div, "sender over the whole test " + units.FormatRate(s.SenderRateBps), color(1)}}}
	recv := series{Name: "received, per interval", Color: color(0)}
	loss := series{Name: "lost", Color: color(1)}
	jit := series{Name: "jitter", Color: color(2)}
	maxJ := 0.0
	for _, iv := range r.Intervals {
		maxJ = math.Max(maxJ, iv.JitterUs)
	}
	jdiv, junit := timeScale(maxJ)
	for _, iv := range r.Intervals {
		x := (iv.StartS + iv.EndS) / 2
		recv.Pts = append(recv.Pts, [2]float64{x, iv.ThroughputBps / div})
		if n := iv.Packets + iv.Lost; n > 0 {
			loss.Pts = append(loss.Pts, [2]float64{x, float64(iv.Lost) / float64(n) * 100})
		}
		jit.Pts = append(jit.Pts, [2]float64{x, iv.JitterUs / jdiv})
	}
	rate.Series = []series{recv}
	end := 0.0
	if n := len(r.Intervals); n > 0 {
		end = r.Intervals[n-1].EndS
	}
	rate.XMax = end
	every := fmt.Sprintf("per reporting interval of %v, counted by the receiver (%s); each point is one interval, at its middle", r.Config.Interval, v.Receiver)
	v.Figures = []figure{
		{rate.svg(), "UDP payload rate " + every + ". The sender reports its rate for the whole test only (dashed), beside the rate asked for (grey)."},
		{lineChart{Title: "loss per interval", XUnit: "s", YUnit: "%", XMax: end, Series: []series{loss}}.svg(), "Datagrams lost as a share of those expected (received + lost), " + every + ", from the gaps in the sequence numbers."},
		{lineChart{Title: "jitter per interval", XUnit: "s", YUnit: junit, XMax: end, Series: []series{jit}}.svg(), "RFC 3550 interarrival jitter " + every + ", from the datagrams' send stamps and the receiver's arrival times."},
	}
	return v
}

const udpFooter = "Rates count UDP payload (the receiver's rate with IP and UDP headers is in the summary). Jitter is RFC 3550's smoothed interarrival jitter. Loss counts sequence numbers that never arrived before the drain ended."

const udpBody = `{{with .R.Summary}}{{if .Partial}}<div class="partial"><strong>PARTIAL:</strong> {{.PartialReason}}</div>{{end}}
{{if .GeneratorLimited}}<div class="partial"><strong>generator-limited:</strong> the sender could not hold the asked rate ({{.SentPackets}} datagrams sent, {{.SenderLate}} late): these figures describe the sending host, not the path.</div>{{end}}
<h2>Summary</h2>
<p>UDP {{.Direction}}: {{.SizeBytes}}-byte payloads at a target of {{rateInt .TargetRateBps}}.</p>
<table><tr><th class="l">side</th><th>datagrams</th><th>bytes</th><th>rate (payload)</th><th>rate (with IP+UDP headers)</th></tr>
<tr><td class="l">sender ({{$.Sender}})</td><td>{{.SentPackets}}</td><td>{{bytesU .SentBytes}}</td><td>{{rate .SenderRateBps}}</td><td></td></tr>
<tr><td class="l">receiver ({{$.Receiver}}), over {{printf "%.3f" .IntervalS}} s</td><td>{{.RecvPackets}}</td><td>{{bytesU .RecvBytes}}</td><td>{{rate .ReceiverRateBps}}</td><td>{{rate .ReceiverIPBps}}</td></tr></table>
<table><tr><th>lost</th><th>loss</th><th>duplicates</th><th>reordered</th><th>jitter</th><th>sent late (&gt; 1 ms and a gap behind schedule)</th><th>most behind</th></tr>
<tr><td>{{.Lost}}</td><td>{{printf "%.3f" .LossPct}} %</td><td>{{.Duplicates}}</td><td>{{.Reordered}}</td><td>{{us .JitterUs}}</td><td>{{.SenderLate}}</td><td>{{us .SenderMaxSlipUs}}</td></tr></table>
{{if .ReceiverDrops}}<p>Of the lost, at least {{.ReceiverDrops}} were dropped by the receiving host's own socket (its buffer overflowed; a coalesced buffer of datagrams counts once): the host's loss, not the path's.</p>{{end}}
{{with .Latency}}<table><tr><th class="l">latency probes in the stream (round trip)</th><th>replies</th><th>min</th><th>mean</th><th>p50</th><th>p90</th><th>p99</th><th>max</th><th>IPDV</th></tr>
<tr><td class="l">{{.Probes}} sent</td><td>{{.Replies}}</td><td>{{us .MinUs}}</td><td>{{us .MeanUs}}</td><td>{{us .P50Us}}</td><td>{{us .P90Us}}</td><td>{{us .P99Us}}</td><td>{{us .MaxUs}}</td><td>{{us .IPDVUs}}</td></tr></table>{{end}}
{{with .Sender .Direction}}<p>Sender CPU: {{printf "%.1f" .CPUPct}} % of a CPU; its threads waited {{printf "%.1f" .WaitPct}} % of the time; its {{.CPUs}} CPU(s) {{printf "%.0f" .CPUsBusyPct}} % busy.</p>{{end}}{{end}}
<h2>Over time</h2>
{{template "figures" .Figures}}`

type rttView struct {
	R     *result.RTT
	Strip figure
}

func newRTTView(r *result.RTT) rttView {
	s := r.Summary
	return rttView{R: r, Strip: figure{rttStrip("round-trip time", []stripRow{{"UDP probes", &s.RTTStats}}),
		fmt.Sprintf("%d UDP echo probes of %d B, %.0f ms apart, from this host to the responder and back, each timed on this host's monotonic clock. The document keeps the summary only (min, median, mean, p99, max, standard deviation): these are drawn, no samples.", s.Sent, s.SizeBytes, r.Config.Interval.Seconds()*1e3)}}
}

const rttFooter = "RTT includes both hosts' UDP stacks and the responder's echo. Loss counts probes without a reply before the test ended; replies that answered no probe as sent are rejected and counted apart."

const rttBody = `{{with .R.Summary}}{{if .Partial}}<div class="partial"><strong>PARTIAL:</strong> {{.PartialReason}}</div>{{end}}
<h2>Summary</h2>
<table><tr><th>sent</th><th>received</th><th>loss</th><th>min</th><th>mean</th><th>median</th><th>p99</th><th>max</th><th>stddev</th><th>rejected replies</th><th>control connection's TCP min RTT</th></tr>
<tr><td>{{.Sent}}</td><td>{{.Received}}</td><td>{{printf "%.1f" .LossPct}} %</td>{{if .Received}}<td>{{us .MinUs}}</td><td>{{us .MeanUs}}</td><td>{{us .P50Us}}</td><td>{{us .P99Us}}</td><td>{{us .MaxUs}}</td><td>{{us .StdDevUs}}</td>{{else}}<td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td>{{end}}<td>{{.Rejected}}</td><td>{{if .ControlTCPMinUs}}{{usInt .ControlTCPMinUs}}{{else}}unknown{{end}}</td></tr></table>{{end}}
<h2>Distribution</h2>
{{template "figures" (list .Strip)}}`

const mtuFooter = "The search probes with DF-set UDP datagrams echoed by the responder (RFC 4821 / RFC 8899 style), so it does not depend on ICMP; whether ICMP fragmentation-needed reached this host is shown apart."

const mtuBody = `<h2>Path MTU</h2>
<table><tr><th class="l">direction</th><th>largest IP packet that crossed</th></tr>
<tr><td class="l">up (to the responder)</td><td>{{mtu .UpBytes}}</td></tr>
<tr><td class="l">down (to this host)</td><td>{{mtu .DownBytes}}</td></tr></table>
<table><tr><th>local interface MTU</th><th>ICMP fragmentation-needed seen</th><th>probes</th><th>timeout per probe</th></tr>
<tr><td>{{.LocalBytes}} B</td><td>{{if .ICMPSeen}}yes{{else}}no{{end}}</td><td>{{.Probes}}</td><td>{{dur .Timeout}}</td></tr></table>`
