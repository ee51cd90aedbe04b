package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// page is one template set: the layout and one page's content.
type page struct{ t *template.Template }

// parsePages parses each templates/*.html but layout.html with the
// layout.
func parsePages() (map[string]*page, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	out := map[string]*page{}
	for _, n := range names {
		base := strings.TrimSuffix(path.Base(n), ".html")
		if base == "layout" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("web: template %s: %w", n, err)
		}
		out[base] = &page{t: t}
	}
	return out, nil
}

// view is what every page's template gets: who looks, which section is
// current, and the page's own data.
type view struct {
	V       *viewer
	Section string
	Title   string
	D       any
}

// render writes page name with data d (into a buffer first, so a
// template error is a clean 500, not half a page).
func (s *Site) render(w http.ResponseWriter, r *http.Request, name string, v *viewer, d any) {
	p := s.pages[name]
	if p == nil {
		http.Error(w, "no template "+name, http.StatusInternalServerError)
		return
	}
	var b bytes.Buffer
	title, _ := titles[name]
	if err := p.t.Execute(&b, view{V: v, Section: name, Title: title, D: d}); err != nil {
		s.cfg.Log.Error("web render", "page", name, "err", err)
		http.Error(w, "the page failed to render: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

var titles = map[string]string{
	"login": "Log in", "fleet": "Fleet", "agent": "Agent", "mesh": "Mesh", "pair": "Pair history",
	"run": "Run", "schedules": "Schedules", "schedule": "Schedule",
}

// fail answers a handler's error: not found, a bad query, or the store's
// trouble as a 500 with the error's line.
func (s *Site) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, fleet.ErrNotFound):
		http.Error(w, err.Error(), http.StatusNotFound)
	case errors.Is(err, errBadInput):
		http.Error(w, err.Error(), http.StatusBadRequest)
	default:
		s.cfg.Log.Error("web", "path", r.URL.Path, "err", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// errBadInput marks a query the page cannot take.
var errBadInput = errors.New("bad input")

func badInput(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errBadInput}, a...)...)
}

var funcs = template.FuncMap{
	"mbps":  mbps,
	"ms":    func(v float64) string { return num(v, "ms") },
	"pct":   func(v float64) string { return num(v, "%") },
	"when":  when,
	"ago":   ago,
	"join":  strings.Join,
	"args":  fieldArgs,
	"thr":   thresholdsText,
	"asset": asset,
}

// assetVersion is a hash of the embedded assets, so that a page names
// the assets of its own build and a browser's cached copies (kept a
// day) never outlive an upgrade.
var assetVersion = func() string {
	h := sha256.New()
	_ = fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := staticFS.ReadFile(p)
			h.Write([]byte(p))
			h.Write(b)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:12]
}()

// asset is an embedded asset's URL, with the build's version.
func asset(name string) string { return Prefix + "static/" + name + "?v=" + assetVersion }

// thresholdsText says a schedule's limits in a line ("none").
func thresholdsText(t *fleet.Thresholds) string {
	if t == nil {
		return "none"
	}
	var ws []string
	add := func(ok bool, format string, v float64) {
		if ok {
			ws = append(ws, fmt.Sprintf(format, v))
		}
	}
	add(t.MinThroughputPct > 0, "throughput ≥ %g %% of ideal", t.MinThroughputPct)
	add(t.MinThroughputBps > 0, "throughput ≥ %g Mbit/s", t.MinThroughputBps/1e6)
	add(t.MaxRTTMs > 0, "RTT ≤ %g ms", t.MaxRTTMs)
	add(t.MaxRTTLoadedMs > 0, "loaded RTT ≤ %g ms", t.MaxRTTLoadedMs)
	add(t.MaxLossPct > 0, "loss ≤ %g %%", t.MaxLossPct)
	add(t.MaxBufferDelayPct > 0, "buffer delay ≤ %g %%", t.MaxBufferDelayPct)
	if t.FailVerdict {
		ws = append(ws, "verdict pass")
	}
	return strings.Join(ws, ", ")
}

// fieldArgs are a form field's: id (and name), label, value, error,
// input type and placeholder.
func fieldArgs(id, label, value, err, typ, hint string) map[string]string {
	return map[string]string{"id": id, "label": label, "value": value, "err": err, "type": typ, "hint": hint}
}

// mbps is a rate in bit/s in Mbit/s (SI), or "–".
func mbps(bps float64) string {
	if bps <= 0 || math.IsNaN(bps) {
		return "–"
	}
	return fmt.Sprintf("%.4g Mbit/s", bps/1e6)
}

func num(v float64, unit string) string {
	if v == 0 || math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.3g %s", v, unit)
}

// when is a time in UTC to the second, or "–".
func when(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// ago is how long before now t was, roughly.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "in " + (-d).Round(time.Second).String()
	case d < time.Minute:
		return fmt.Sprintf("%d s ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return fmt.Sprintf("%d days ago", int(d.Hours()/24))
}
