package report

// The pages of the engine's tests: tcp, udp, rtt, mtu.

import (
	"fmt"
	"math"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/units"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// rateScale picks the unit a chart of rates up to max bit/s reads best in.
func rateScale(max float64) (div float64, unit string) {
	switch {
	case max >= 1e9:
		return 1e9, "Gbit/s"
	case max >= 1e6:
		return 1e6, "Mbit/s"
	}
	return 1e3, "kbit/s"
}

// timeScale picks the unit of a chart of times up to max µs.
func timeScale(maxUs float64) (div float64, unit string) {
	if maxUs >= 1000 {
		return 1000, "ms"
	}
	return 1, "µs"
}

// receiver names the host that receives in dir.
func receiver(dir vocab.Direction) string {
	if dir == vocab.Down {
		return "this host"
	}
	return "the responder"
}

// sender names the host that sends in dir.
func sender(dir vocab.Direction) string {
	if dir == vocab.Down {
		return "the responder"
	}
	return "this host"
}

type tcpView struct {
	R       *result.TCP
	Dirs    []tcpDir
	Figures []figure
}

type tcpDir struct {
	Dir              vocab.Direction
	D                *result.TCPDirection
	Sender, Receiver string
	CC               string
}

func newTCPView(r *result.TCP) tcpView {
	v := tcpView{R: r}
	for _, dir := range vocab.Both {
		if d := r.Summary.Directions[dir]; d != nil {
			cc := r.Client.CC
			if dir == vocab.Down {
				cc = r.Server.CC
			}
			v.Dirs = append(v.Dirs, tcpDir{dir, d, sender(dir), receiver(dir), orDash(cc)})
		}
	}
	v.Figures = append(v.Figures, tcpGoodput(r), tcpPerStream(r), tcpRTT(r), tcpRetrans(r))
	v.Figures = append(v.Figures, tcpSeries(r)...)
	if s := r.Summary; s.LatencyIdle != nil && s.LatencyLoaded != nil {
		v.Figures = append(v.Figures, figure{rttStrip("UDP round-trip time, idle vs under the load", []stripRow{{"idle", s.LatencyIdle}, {"loaded", s.LatencyLoaded}}),
			"UDP echo probes every 100 ms from this host to the responder and back, timed on this host's clock: before the load starts (idle) and while it runs (loaded). Only the summary of each series is kept: the strips draw those figures, not samples."})
	}
	return v
}

// tcpEnd is the end of a tcp test's last interval.
func tcpEnd(r *result.TCP) float64 {
	if n := len(r.Intervals); n > 0 {
		return r.Intervals[n-1].EndS
	}
	return 0
}

// mid is an interval's middle, where its figure is drawn.
func mid(iv result.TCPInterval) float64 { return (iv.StartS + iv.EndS) / 2 }

// tcpGoodput charts each direction's goodput per interval.
func tcpGoodput(r *result.TCP) figure {
	top := 0.0
	for _, iv := range r.Intervals {
		top = math.Max(top, iv.ThroughputBps)
	}
	div, unit := rateScale(top)
	c := lineChart{Title: "goodput per interval, by direction", XUnit: "s", XMax: tcpEnd(r), YUnit: unit}
	for i, dir := range vocab.Both {
		d := r.Summary.Directions[dir]
		if d == nil {
			continue
		}
		s := series{Name: string(dir) + ", at " + receiver(dir), Color: color(i)}
		for _, iv := range r.Intervals {
			sum, any := 0.0, false
			for _, st := range iv.Streams {
				if st.Direction == dir {
					sum, any = sum+st.ThroughputBps, true
				}
			}
			if any {
				s.Pts = append(s.Pts, [2]float64{mid(iv), sum / div})
			}
		}
		c.Series = append(c.Series, s)
		c.Refs = append(c.Refs, refLine{d.ThroughputBps / div, fmt.Sprintf("%s over the whole test: %s", dir, units.FormatRate(d.ThroughputBps)), color(i)})
	}
	return figure{c.svg(), fmt.Sprintf("Goodput (payload bytes × 8 per second) counted by the receiving application, per reporting interval of %v, summed over the streams of each direction; each point is one interval, drawn at its middle, on the time since the test started. Dashed: each direction's goodput over the whole test, first to last byte.", r.Config.Interval)}
}

// tcpPerStream charts each stream's goodput when a direction has several.
func tcpPerStream(r *result.TCP) figure {
	if r.Config.Streams < 2 {
		return figure{}
	}
	c := lineChart{Title: "goodput per interval, by stream", XUnit: "s", XMax: tcpEnd(r)}
	top := 0.0
	for _, iv := range r.Intervals {
		for _, st := range iv.Streams {
			top = math.Max(top, st.ThroughputBps)
		}
	}
	div, unit := rateScale(top)
	c.YUnit = unit
	c.Series = perStream(r, func(st result.TCPStream) (float64, bool) { return st.ThroughputBps / div, true })
	return figure{c.svg(), "Goodput of each stream per reporting interval, counted by its receiver (the responder for up, this host for down)."}
}

// perStream is one series per (direction, stream) of the intervals'
// streams, from val (false: no figure for that interval).
func perStream(r *result.TCP, val func(result.TCPStream) (float64, bool)) []series {
	type key struct {
		dir vocab.Direction
		n   int
	}
	idx := map[key]int{}
	var out []series
	for _, iv := range r.Intervals {
		for _, st := range iv.Streams {
			y, ok := val(st)
			if !ok {
				continue
			}
			k := key{st.Direction, st.Stream}
			i, seen := idx[k]
			if !seen {
				i = len(out)
				idx[k] = i
				out = append(out, series{Name: fmt.Sprintf("%s stream %d", st.Direction, st.Stream), Color: color(i)})
			}
			out[i].Pts = append(out[i].Pts, [2]float64{mid(iv), y})
		}
	}
	return out
}

// tcpRTT charts each stream's smoothed RTT per interval (the sender's
// TCP_INFO).
func tcpRTT(r *result.TCP) figure {
	top := 0.0
	for _, iv := range r.Intervals {
		for _, st := range iv.Streams {
			if st.HasTCPInfo {
				top = math.Max(top, float64(st.RTTUs))
			}
		}
	}
	div, unit := timeScale(top)
	c := lineChart{Title: "smoothed RTT per interval, by stream", XUnit: "s", XMax: tcpEnd(r), YUnit: unit}
	c.Series = perStream(r, func(st result.TCPStream) (float64, bool) { return float64(st.RTTUs) / div, st.HasTCPInfo })
	return figure{c.svg(), "Smoothed round-trip time (srtt) of each stream at the end of each reporting interval, from TCP_INFO of the sending socket: this host's for up, the responder's for down."}
}

// tcpRetrans charts the segments each direction retransmitted per
// interval.
func tcpRetrans(r *result.TCP) figure {
	c := lineChart{Title: "retransmitted segments per interval, by direction", XUnit: "s", XMax: tcpEnd(r), YUnit: "segments"}
	for i, dir := range vocab.Both {
		if r.Summary.Directions[dir] == nil {
			continue
		}
		s := series{Name: string(dir) + ", at " + sender(dir), Color: color(i)}
		for _, iv := range r.Intervals {
			n, any := 0.0, false
			for _, st := range iv.Streams {
				if st.Direction == dir && st.HasTCPInfo {
					n, any = n+float64(st.RetransSegs), true
				}
			}
			if any {
				s.Pts = append(s.Pts, [2]float64{mid(iv), n})
			}
		}
		c.Series = append(c.Series, s)
	}
	return figure{c.svg(), "Segments the sender retransmitted during each reporting interval (TCP_INFO of the sending sockets), summed over the streams of each direction."}
}

// tcpSeries charts the receiver's rate over 100 ms windows, per
// direction, when the document has it.
func tcpSeries(r *result.TCP) []figure {
	var out []figure
	for i, dir := range vocab.Both {
		s := r.Series[dir]
		if s == nil || len(s.Rate) == 0 {
			continue
		}
		top := 0.0
		for _, p := range s.Rate {
			top = math.Max(top, p.Bps)
		}
		div, unit := rateScale(top)
		line := series{Name: string(dir), Color: color(i)}
		for _, p := range s.Rate {
			line.Pts = append(line.Pts, [2]float64{p.TS, p.Bps / div})
		}
		c := lineChart{Title: fmt.Sprintf("%s: goodput over %.0f ms windows", dir, s.WindowS*1e3), XUnit: "s", YUnit: unit, Series: []series{line}}
		out = append(out, figure{c.svg(), fmt.Sprintf("Goodput at the receiver (%s clock, from its read times) over sliding windows of %.0f ms, a point every %.0f ms: the detail the reporting intervals average out.", s.RateClock, s.WindowS*1e3, result.RateStep.Seconds()*1e3)})
	}
	return out
}

const tcpFooter = "Goodput = payload bytes counted by the receiving application × 8 / the span from its first to its last byte. TCP Efficiency (RFC 6349) = (bytes sent − bytes retransmitted) / bytes sent × 100, from TCP_INFO of the sending sockets, as are the RTTs, the congestion window and what limited the sender."

const tcpBody = `{{if .R.Summary.Partial}}<div class="partial"><strong>PARTIAL:</strong> {{.R.Summary.PartialReason}}</div>{{end}}
<h2>Summary</h2>
<table><tr><th class="l">direction</th><th class="l">sender</th><th class="l">cc</th><th>bytes received</th><th>over</th><th>goodput</th><th>bytes sent</th><th>retransmitted</th><th>TCP Efficiency</th><th>min RTT</th><th>mean srtt</th></tr>
{{range .Dirs}}<tr><td class="l">{{.Dir}}</td><td class="l">{{.Sender}}</td><td class="l">{{.CC}}</td><td>{{bytes .D.Bytes}}</td><td>{{printf "%.2f" .D.IntervalS}} s</td><td>{{rate .D.ThroughputBps}}</td><td>{{bytesU .D.BytesSent}}</td><td>{{bytesU .D.BytesRetrans}} ({{.D.RetransSegs}} seg)</td><td>{{printf "%.3f" .D.EfficiencyPct}} %</td><td>{{usInt .D.RTTMinUs}}</td><td>{{usInt .D.RTTMeanUs}}</td></tr>{{end}}
{{if gt (len .Dirs) 1}}<tr><td class="l">both</td><td></td><td></td><td>{{bytes .R.Summary.Bytes}}</td><td></td><td>{{rate .R.Summary.ThroughputBps}}</td><td></td><td></td><td>{{printf "%.3f" .R.Summary.EfficiencyPct}} %</td><td></td><td></td></tr>{{end}}</table>
{{with .R.Summary}}{{if .WindowRequested}}<p>Window: requested {{bytesI .WindowRequested}}, effective (most bytes in flight seen) {{bytes .WindowEffective}}.</p>{{end}}
{{if .LatencyIdle}}{{if .LatencyLoaded}}<p>Latency (UDP RTT): idle median {{us .LatencyIdle.P50Us}} ({{.LatencyIdle.Received}}/{{.LatencyIdle.Sent}} replies), loaded median {{us .LatencyLoaded.P50Us}}, p99 {{us .LatencyLoaded.P99Us}} ({{.LatencyLoaded.Received}}/{{.LatencyLoaded.Sent}} replies).</p>{{end}}{{end}}
<h2>Streams</h2>
<table><tr><th>stream</th><th class="l">direction</th><th>goodput</th><th class="l">limited by</th><th>rwnd-limited</th><th>sndbuf-limited</th><th>peer window</th></tr>
{{range .Streams}}<tr><td>{{.Stream}}</td><td class="l">{{.Direction}}</td><td>{{rate .ThroughputBps}}</td><td class="l">{{dash .LimitedBy}}</td><td>{{printf "%.0f" .RwndLimitedPct}} % of busy time</td><td>{{printf "%.0f" .SndbufLimitedPct}} % of busy time</td><td>{{bytes32 .PeerWindowBytes}}</td></tr>{{end}}</table>{{end}}
<h2>Over time</h2>
{{template "figures" .Figures}}`
