package report

// The STAMP session's summary and page (fullpipe stamp).

import (
	"fmt"
	"io"

	"github.com/fullpipe/fullpipe/internal/result"
)

// stampText is a STAMP session's summary: loss (by direction when the
// reflector is stateful), then each delay with its unit and the clocks
// it subtracts.
func stampText(w io.Writer, r *result.STAMP) {
	s := r.Summary
	fmt.Fprintf(w, "\nSummary: %d STAMP test packets of %d B to %s, %d answered, loss %.2f %%", s.Sent, r.Config.Size, r.Target, s.Received, s.LossPct)
	if s.Partial {
		fmt.Fprintf(w, "  PARTIAL: %s", s.PartialReason)
	}
	fmt.Fprintln(w)
	if s.LossByDirection {
		fmt.Fprintf(w, "  lost forward (tester → reflector) %d, backward (reflector → tester) %d, after the last reply (direction unknown) %d\n", s.LostForward, s.LostBackward, s.LostUnknown)
	} else {
		fmt.Fprintf(w, "  lost %d, direction unknown (a stateless reflector: pass --stateful if it counts our packets)\n", s.Lost)
	}
	fmt.Fprintf(w, "  duplicates %d, reordered %d, unknown replies %d", s.Duplicates, s.Reordered, s.Unknown)
	if r.Config.KeyFile != "" {
		fmt.Fprintf(w, ", bad HMAC %d", s.BadAuth)
	}
	fmt.Fprintln(w)
	if s.Received == 0 {
		return
	}
	delaysText(w, "round trip without the reflector's residence", s.RTT)
	delaysText(w, "reflector residence (T3 − T2)", s.Residence)
	if s.Forward != nil && s.Backward != nil {
		delaysText(w, "one way forward (T2 − T1)", *s.Forward)
		delaysText(w, "one way backward (T4 − T3)", *s.Backward)
	} else {
		fmt.Fprintf(w, "  one-way delays %s\n", s.OneWay)
	}
}

func delaysText(w io.Writer, what string, d result.STAMPDelays) {
	fmt.Fprintf(w, "  %s, %s clock: min %s, mean %s, p50 %s, p90 %s, p99 %s, max %s\n",
		what, d.Side, usF(d.MinUs), usF(d.MeanUs), usF(d.P50Us), usF(d.P90Us), usF(d.P99Us), usF(d.MaxUs))
}

// stampRow is one delay of the page's table.
type stampRow struct {
	What string
	D    *result.STAMPDelays
}

type stampView struct {
	R    *result.STAMP
	Rows []stampRow
}

func newSTAMPView(r *result.STAMP) stampView {
	s := &r.Summary
	v := stampView{R: r, Rows: []stampRow{{"round trip (T4 − T1) − (T3 − T2)", &s.RTT}, {"reflector residence T3 − T2", &s.Residence}}}
	if s.Forward != nil && s.Backward != nil {
		v.Rows = append(v.Rows, stampRow{"one way forward T2 − T1", s.Forward}, stampRow{"one way backward T4 − T3", s.Backward})
	}
	return v
}

const stampFooter = "T1: the tester sends; T2: the reflector receives; T3: the reflector replies; T4: the tester receives (RFC 8762). The round trip leaves out the reflector's residence. A one-way delay subtracts one host's clock from the other's: it is reported only when both hosts state their clocks synchronized (the S bit of the Error Estimate), and is then as good as their synchronization. Loss is placed by direction only with a stateful reflector, which numbers what it received; losses after the last reply cannot be placed."

const stampBody = `{{with .R.Summary}}{{if .Partial}}<div class="partial"><strong>PARTIAL:</strong> {{.PartialReason}}</div>{{end}}
<h2>Loss</h2>
<table><tr><th>sent</th><th>answered</th><th>lost</th><th>loss</th><th>lost forward (tester → reflector)</th><th>lost backward (reflector → tester)</th><th>lost, direction unknown</th><th>duplicates</th><th>reordered</th><th>unknown replies</th><th>bad HMAC</th></tr>
<tr><td>{{.Sent}}</td><td>{{.Received}}</td><td>{{.Lost}}</td><td>{{printf "%.2f" .LossPct}} %</td>{{if .LossByDirection}}<td>{{.LostForward}}</td><td>{{.LostBackward}}</td>{{else}}<td>-</td><td>-</td>{{end}}<td>{{.LostUnknown}}</td><td>{{.Duplicates}}</td><td>{{.Reordered}}</td><td>{{.Unknown}}</td><td>{{.BadAuth}}</td></tr></table>
{{if not .LossByDirection}}<p>The reflector was taken as stateless: losses cannot be placed by direction.</p>{{end}}{{end}}
<h2>Delays</h2>
{{if .R.Summary.Received}}<table><tr><th class="l">delay</th><th class="l">clocks</th><th>packets</th><th>min</th><th>mean</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>
{{range .Rows}}<tr><td class="l">{{.What}}</td><td class="l">{{.D.Side}}</td><td>{{.D.Count}}</td><td>{{us .D.MinUs}}</td><td>{{us .D.MeanUs}}</td><td>{{us .D.P50Us}}</td><td>{{us .D.P90Us}}</td><td>{{us .D.P99Us}}</td><td>{{us .D.MaxUs}}</td></tr>
{{end}}</table>{{else}}<p>No reply: no delay.</p>{{end}}
<p>One-way delays: {{.R.Summary.OneWay}}. Reflector's clock stated synchronized: {{if .R.Summary.ReflectorSynced}}yes{{else}}no{{end}}. Receive timestamps on this host from the kernel: {{if .R.Summary.KernelTimestamps}}yes{{else}}no{{end}}. Timestamps {{.R.Config.Timestamps}}; {{if .R.Config.KeyFile}}authenticated (HMAC-SHA-256){{else}}unauthenticated{{end}}.</p>`
