package report

// The single-ended tests' summary and page (fullpipe ping, unreach).

import (
	"fmt"
	"io"

	"github.com/fullpipe/fullpipe/internal/ping"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/units"
)

// msUs prints microseconds as milliseconds to the microsecond.
func msUs(us float64) string { return fmt.Sprintf("%.3f ms", us/1e3) }

// pingWhat names a document's probes.
func pingWhat(r *result.Ping) string {
	c, over := r.Config, ""
	if r.IPv6 {
		over = " over IPv6"
	}
	if c.Probe == result.ProbeUnreach {
		return fmt.Sprintf("UDP%s to closed port %d, %d-byte payload, answered by ICMP port unreachable", over, c.Port, c.Size)
	}
	return fmt.Sprintf("ICMP echo%s, %d-byte payload", over, c.Size)
}

// PingVerdict is a single-ended test's verdict in words: what the losses
// were, a rate limiter's named as one.
func PingVerdict(r *result.Ping) string {
	v := r.Verdict
	switch v.Kind {
	case ping.Clean:
		return "every probe answered: no loss"
	case ping.Silent:
		if r.Config.Probe == result.ProbeUnreach {
			return "no port unreachable came back: the port is open, or the host or a firewall drops the datagrams or the errors"
		}
		return "no echo reply came back: the host is down or filters ICMP echo (try unreach)"
	case ping.RateLimited:
		return fmt.Sprintf("ICMP rate-limited at about %s/s (burst %d): the host or a router answered a burst of %d, then about %s of the %.0f probes offered per second; the %.1f %% unanswered are the limiter's refusals, not the path's loss",
			perSec(v.LimitPerSec), v.Burst, v.Burst, perSec(v.LimitPerSec), v.OfferedPerSec, v.LossPct)
	case ping.Capacity:
		return fmt.Sprintf("at the path's capacity: about %.0f probes/s passed of the %.0f offered, and the RTT grew by %s as a queue filled; the %.1f %% lost are the path's, at this rate",
			v.LimitPerSec, v.OfferedPerSec, units.FormatDuration(v.QueueDelay), v.LossPct)
	case ping.Loss:
		return fmt.Sprintf("%.2f %% of probes lost, at random as far as the pattern tells (not a rate limiter's burst then steady rate)", v.LossPct)
	}
	return "no probe sent"
}

// perSec prints a rate to two significant digits below 10 (a limit of
// 0.5/s), whole above.
func perSec(r float64) string {
	if r < 10 {
		return fmt.Sprintf("%.2g", r)
	}
	return fmt.Sprintf("%.0f", r)
}

// pingText is the run's RTTs and loss or the search's trials, then the
// verdict and the warnings.
func pingText(w io.Writer, r *result.Ping) {
	fmt.Fprintf(w, "\n%s to %s (%s; %s socket)\n", r.Config.Probe, r.Target, pingWhat(r), r.Socket)
	if s := r.Summary; s != nil {
		fmt.Fprintf(w, "  %d probes, %d answered, loss %.2f %%\n", s.Sent, s.Received, s.LossPct)
		if s.Received > 0 {
			fmt.Fprintf(w, "  RTT min %s, mean %s, median %s, p90 %s, p99 %s, max %s, stddev %s\n",
				msUs(s.MinUs), msUs(s.MeanUs), msUs(s.P50Us), msUs(s.P90Us), msUs(s.P99Us), msUs(s.MaxUs), msUs(s.StdDevUs))
		}
	}
	if s := r.Search; s != nil {
		fmt.Fprintf(w, "  %10s %8s %8s %8s %11s %12s  %s\n", "probes/s", "sent", "answered", "loss", "replies/s", "median RTT", "verdict")
		for _, t := range s.Trials {
			fmt.Fprintf(w, "  %10.0f %8d %8d %7.2f%% %11.0f %12s  %s\n", t.RatePPS, t.Sent, t.Received, t.LossPct, t.RepliesPPS, msUs(t.MedianRTTUs), t.Verdict.Kind)
		}
		fmt.Fprintf(w, "  highest rate with no loss: %s\n", pingRate(s.ZeroLossPPS, s.ZeroLossBps, s.FrameBytes))
		fmt.Fprintf(w, "  highest rate with at most %.2f %% loss: %s\n", r.Config.LossRatio*100, pingRate(s.AtRatioPPS, s.AtRatioBps, s.FrameBytes))
	}
	if r.Partial {
		fmt.Fprintf(w, "  PARTIAL: %s\n", r.Reason)
	}
	fmt.Fprintf(w, "verdict: %s\n", PingVerdict(r))
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
}

// pingRate is a search's rate in probes/s and bit/s of its frames.
func pingRate(pps, bps float64, frame int) string {
	if pps == 0 {
		return "none (even the lowest rate lost probes)"
	}
	return fmt.Sprintf("%.0f probes/s (%s in %d-byte frames)", pps, units.FormatRate(bps), frame)
}

const pingFooter = "RTT runs from the send to the kernel's receive stamp of the reply (SO_TIMESTAMPNS), in ms to the µs. A probe is lost when no reply matching its token and sequence number came before the wait after the last probe. The verdict reads the pattern of the replies: a limiter answers a burst, then replies at a steady rate whatever the offered one; random loss spaces them at random; a queue at capacity also delays them (docs/single.md). Bit rates count the probes' Ethernet frames (IPv4 or IPv6 header, ICMP or UDP header, payload, 18 bytes of Ethernet header and FCS; at least 64 bytes) at the frame's bytes, without the 20 bytes of preamble and gap each costs on the line."

const pingBody = `{{if .Partial}}<div class="partial"><strong>PARTIAL:</strong> {{.Reason}}</div>{{end}}
<p>{{.What}}; {{.R.Socket}} socket.</p>
<h2>Verdict</h2>
<p><strong>{{.R.Verdict.Kind}}</strong>: {{.Verdict}}</p>
{{with .R.Summary}}<h2>RTT and loss</h2>
<table><tr><th>sent</th><th>answered</th><th>loss</th><th>min</th><th>mean</th><th>median</th><th>p90</th><th>p99</th><th>max</th><th>stddev</th><th>kernel-stamped</th></tr>
<tr><td>{{.Sent}}</td><td>{{.Received}}</td><td>{{printf "%.2f" .LossPct}} %</td>{{if .Received}}<td>{{ms .MinUs}}</td><td>{{ms .MeanUs}}</td><td>{{ms .P50Us}}</td><td>{{ms .P90Us}}</td><td>{{ms .P99Us}}</td><td>{{ms .MaxUs}}</td><td>{{ms .StdDevUs}}</td>{{else}}<td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td>{{end}}<td>{{.Stamped}}</td></tr></table>{{end}}
{{with .R.Search}}<h2>Rate search</h2>
<table><tr><th class="l">target</th><th>probes/s</th><th>bit/s in {{.FrameBytes}}-byte frames</th></tr>
<tr><td class="l">no loss</td><td>{{printf "%.0f" .ZeroLossPPS}}</td><td>{{rate .ZeroLossBps}}</td></tr>
<tr><td class="l">loss at most {{printf "%.2f" $.Ratio}} %</td><td>{{printf "%.0f" .AtRatioPPS}}</td><td>{{rate .AtRatioBps}}</td></tr></table>
<table><tr><th>trial at probes/s</th><th>sent</th><th>answered</th><th>loss</th><th>replies/s</th><th>median RTT</th><th class="l">verdict</th></tr>
{{range .Trials}}<tr><td>{{printf "%.0f" .RatePPS}}</td><td>{{.Sent}}</td><td>{{.Received}}</td><td>{{printf "%.2f" .LossPct}} %</td><td>{{printf "%.0f" .RepliesPPS}}</td><td>{{ms .MedianRTTUs}}</td><td class="l">{{.Verdict.Kind}}{{if .Verdict.LimitPerSec}} at {{printf "%.0f" .Verdict.LimitPerSec}}/s{{end}}</td></tr>
{{end}}</table>{{end}}
{{if .R.Warnings}}<h2>Warnings</h2><ul>{{range .R.Warnings}}<li>{{.}}</li>{{end}}</ul>{{end}}`

// pingView is what pingBody reads.
type pingView struct {
	R       *result.Ping
	What    string
	Verdict string
	Partial bool
	Reason  string
	Ratio   float64 // the search's loss ratio, %
}

func newPingView(r *result.Ping) pingView {
	return pingView{R: r, What: pingWhat(r), Verdict: PingVerdict(r), Partial: r.Partial, Reason: r.Reason, Ratio: r.Config.LossRatio * 100}
}
