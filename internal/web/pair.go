package web

import (
	"bytes"
	"encoding/json"
	"html/template"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// The history's bounds.
const (
	maxOverlay    = 10     // pairs on one set of axes
	maxHistoryPer = 10_000 // results per pair in one range (a year of hourly ones is 8,760)
)

// ranges are the history's spans, shortest first.
var ranges = []struct {
	Key  string
	Span time.Duration
}{
	{"6h", 6 * time.Hour}, {"24h", 24 * time.Hour}, {"7d", 7 * 24 * time.Hour},
	{"30d", 30 * 24 * time.Hour}, {"90d", 90 * 24 * time.Hour}, {"1y", 365 * 24 * time.Hour},
}

// pairData is the pair history page.
type pairData struct {
	Pairs     []string // "source:dest"
	Kind      string
	Range     string
	From, To  time.Time
	Ranges    []rangeLink
	Others    []string // pairs that can be overlaid
	Recent    []fleet.Result
	Truncated []string // pairs with more results in the range than shown
	Points    int
	JSON      template.JS // the series, for app.js (in a JSON script element)
}

type rangeLink struct {
	Key, Href string
	Current   bool
}

// series is one pair's history as the charts draw it: seconds since the
// epoch, run IDs, and one column per figure (null: not measured).
type series struct {
	Label string   `json:"label"`
	T     []int64  `json:"t"`
	Run   []string `json:"run"`
	Tput  nums     `json:"tput"`  // Mbit/s, up
	Down  nums     `json:"down"`  // Mbit/s, down
	RTT   nums     `json:"rtt"`   // ms, idle
	RTTL  nums     `json:"rttl"`  // ms, loaded
	Loss  nums     `json:"loss"`  // %
	Delay nums     `json:"delay"` // buffer delay, %
}

// pairPage: GET /ui/pair?pair=A:B&pair=C:D&kind=&range=7d&end=RFC3339.
func (s *Site) pairPage(w http.ResponseWriter, r *http.Request, v *viewer) error {
	q := r.URL.Query()
	d := pairData{Kind: q.Get("kind"), Range: q.Get("range")}
	if d.Range == "" {
		d.Range = "7d"
	}
	i := slices.IndexFunc(ranges, func(x struct {
		Key  string
		Span time.Duration
	}) bool {
		return x.Key == d.Range
	})
	if i < 0 {
		return badInput("range %q: want one of 6h, 24h, 7d, 30d, 90d, 1y", d.Range)
	}
	d.To = s.cfg.Now().UTC()
	if e := q.Get("end"); e != "" {
		t, err := time.Parse(time.RFC3339, e)
		if err != nil {
			return badInput("end %q: want a time such as 2026-11-24T12:00:00Z", e)
		}
		d.To = t.UTC()
	}
	d.From = d.To.Add(-ranges[i].Span)
	for _, p := range q["pair"] {
		if _, _, ok := strings.Cut(p, ":"); !ok {
			return badInput("pair %q: want SOURCE:DEST", p)
		}
		if !slices.Contains(d.Pairs, p) && len(d.Pairs) < maxOverlay {
			d.Pairs = append(d.Pairs, p)
		}
	}
	if len(d.Pairs) == 0 {
		return badInput("no pair: open one from the mesh, or add ?pair=SOURCE:DEST")
	}
	if err := s.history(r, &d); err != nil {
		return err
	}
	s.render(w, r, "pair", v, d)
	return nil
}

// history reads each pair's results in the range (figures only) into
// the page's series, and the pairs that could be overlaid.
func (s *Site) history(r *http.Request, d *pairData) error {
	ctx := r.Context()
	latest, err := s.cfg.Store.Latest(ctx, "")
	if err != nil {
		return err
	}
	if d.Kind == "" { // the first pair's newest kind
		src, dst, _ := strings.Cut(d.Pairs[0], ":")
		var newest time.Time
		for _, l := range latest {
			if l.Source == src && l.Dest == dst && l.Received.After(newest) {
				newest, d.Kind = l.Received, l.Kind
			}
		}
	}
	for _, l := range latest {
		if p := l.Source + ":" + l.Dest; l.Kind == d.Kind && !slices.Contains(d.Pairs, p) {
			d.Others = append(d.Others, p)
		}
	}
	var all []series
	for _, p := range d.Pairs {
		src, dst, _ := strings.Cut(p, ":")
		rs, err := s.cfg.Store.Results(ctx, fleet.ResultFilter{Source: src, Dest: dst, Kind: d.Kind,
			Since: d.From, Until: d.To, Limit: maxHistoryPer, NoDoc: true})
		if err != nil {
			return err
		}
		if len(rs) == maxHistoryPer {
			d.Truncated = append(d.Truncated, p)
		}
		d.Points += len(rs)
		d.Recent = append(d.Recent, rs[:min(len(rs), 10)]...)
		all = append(all, seriesOf(src+" → "+dst, rs))
	}
	slices.SortFunc(d.Recent, func(a, b fleet.Result) int { return b.Received.Compare(a.Received) })
	d.Recent = d.Recent[:min(len(d.Recent), 20)]
	for _, rg := range ranges {
		d.Ranges = append(d.Ranges, rangeLink{Key: rg.Key, Current: rg.Key == d.Range, Href: pairHref(d.Pairs, d.Kind, rg.Key)})
	}
	b, err := json.Marshal(map[string]any{"from": d.From.Unix(), "to": d.To.Unix(), "pairs": all})
	if err != nil {
		return err
	}
	d.JSON = template.JS(b)
	return nil
}

// pairHref links the history of pairs.
func pairHref(pairs []string, kind, rng string) string {
	var b strings.Builder
	b.WriteString(Prefix + "pair?kind=" + urlq(kind) + "&range=" + urlq(rng))
	for _, p := range pairs {
		b.WriteString("&pair=" + urlq(p))
	}
	return b.String()
}

// seriesOf turns results, newest first, into one oldest-first series.
func seriesOf(label string, rs []fleet.Result) series {
	n := len(rs)
	s := series{Label: label, T: make([]int64, n), Run: make([]string, n), Tput: make(nums, n), Down: make(nums, n),
		RTT: make(nums, n), RTTL: make(nums, n), Loss: make(nums, n), Delay: make(nums, n)}
	for i, r := range rs {
		j := n - 1 - i
		f := r.Figures
		s.T[j], s.Run[j] = r.Received.Unix(), r.RunID
		s.Tput[j], s.Down[j] = orNaN(f.ThroughputBps/1e6), orNaN(f.DownThroughputBps/1e6)
		s.RTT[j], s.RTTL[j] = orNaN(f.RTTMs), orNaN(f.RTTLoadedMs)
		s.Loss[j], s.Delay[j] = f.LossPct, orNaN(f.BufferDelayPct)
		if f.ThroughputBps == 0 && f.RTTMs == 0 {
			s.Loss[j] = math.NaN()
		}
	}
	return s
}

func orNaN(v float64) float64 {
	if v == 0 {
		return math.NaN()
	}
	return v
}

// nums is a column of figures as JSON: four significant digits, NaN as
// null (not measured), so a year of ten pairs stays a few megabytes.
type nums []float64

func (ns nums) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.Grow(len(ns) * 6)
	b.WriteByte('[')
	for i, v := range ns {
		if i > 0 {
			b.WriteByte(',')
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b.WriteString("null")
			continue
		}
		b.WriteString(strconv.FormatFloat(v, 'g', 4, 64))
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}
