package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"strings"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/rfc2544"
	"github.com/fullpipe/fullpipe/internal/units"
)

// pageView is the shared page around a document's body.
type pageView struct {
	Title  string
	M      *result.Meta
	Body   template.HTML
	Config string
	Footer string
}

// figure is a chart and the sentence that says what it shows.
type figure struct {
	Chart   template.HTML
	Caption string
}

var funcs = template.FuncMap{
	"mbps":    mbps,
	"mbpsInt": func(v int64) string { return mbps(float64(v)) },
	"rate":    units.FormatRate,
	"rateInt": func(v int64) string { return units.FormatRate(float64(v)) },
	"bytes":   func(n int64) string { return BytesExact(n) },
	"bytesU":  func(n uint64) string { return BytesExact(int64(n)) },
	"bytesI":  func(n int) string { return BytesExact(int64(n)) },
	"bytes32": func(n uint32) string { return BytesExact(int64(n)) },
	"bytesF":  func(n float64) string { return BytesExact(int64(n)) },
	"us":      usF,
	"ms":      msUs,
	"usInt":   func(us int64) string { return usF(float64(us)) },
	"dur":     units.FormatDuration,
	"dash":    orDash,
	"pct":     func(v float64) string { return fmt.Sprintf("%.2f %%", v) },
	"json": func(v any) string {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err.Error()
		}
		return string(b)
	},
	"ratio": func(a, b float64) string {
		if b == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f %%", a/b*100)
	},
	"join":      func(s []string) string { return strings.Join(s, " ") },
	"list":      func(f ...figure) []figure { return f },
	"mtu":       mtuText,
	"frameMbps": func(fps float64, frame int) string { return mbps(rfc2544.FrameBps(fps, frame)) },
}

// pages is the shared page and every document's body.
var pages = parse("page", pageTemplate, "rfc6349", rfc6349Body, "tcp", tcpBody, "udp", udpBody, "rtt", rttBody, "mtu", mtuBody,
	"trains", trainsBody, "sweep-window", windowSweepBody, "sweep-msglen", msgLenBody,
	"ping", pingBody,
	"stamp", stampBody,
	"rfc2544", rfc2544Body,
	"y1564", y1564Body,
)

// parse reads name, source pairs into one set of templates.
func parse(pairs ...string) *template.Template {
	t := template.New("report").Funcs(funcs)
	for i := 0; i < len(pairs); i += 2 {
		template.Must(t.New(pairs[i]).Parse(pairs[i+1]))
	}
	return t
}

// figures is how each body shows its charts.
const figures = `{{define "figures"}}{{range .}}{{if .Chart}}<figure>{{.Chart}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}{{end}}{{end}}`

const pageTemplate = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}: {{.M.Target}}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:72em;color:#222}
h1{font-size:1.5em} h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}
.pass{background:#e3f4e1;border:2px solid #2e7d32;padding:.8em} .fail{background:#fbe4e4;border:2px solid #c62828;padding:.8em}
.partial{background:#fff4e0;border:2px solid #ef6c00;padding:.8em}
table{border-collapse:collapse;margin:.5em 0} td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right} th{background:#f3f3f3}
td.l,th.l{text-align:left} pre{background:#f7f7f7;padding:.6em;white-space:pre-wrap;font-size:12px}
figure{margin:1em 0} figcaption{font-size:12px;color:#444;max-width:640px}
</style></head><body>
<h1>{{.Title}}</h1>
<p>Target {{.M.Target}}, started {{.M.Started.Format "2006-01-02 15:04:05 MST"}}, {{.M.Tool}} {{.M.Version}}.</p>
{{with .M.Lab}}{{if .LabLimited}}<p class="fail lab">{{.Account}}</p>{{else}}<p class="lab">Lab: held its path: {{.Account}}</p>{{end}}{{end}}
{{.Body}}
<h2>Configuration</h2>
<p>Command: <code>{{join .M.Command}}</code></p>
<p>Client: {{.M.Client.Software}}, {{.M.Client.Kernel}}. Responder: {{.M.Server.Software}}, {{.M.Server.Kernel}}.</p>
<pre>{{.Config}}</pre>
{{if .Footer}}<p>{{.Footer}}</p>{{end}}
</body></html>
` + figures
