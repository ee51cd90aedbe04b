package web

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// The history's bounds.
const (
	maxOverlay    = 10     // pairs on one set of axes
	maxHistoryPer = 10_000 // results per pair in one range (a year of hourly ones is 8,760)
)

// ranges are the history's spans, shortest first.
type rangeSpan struct {
	Key  string
	Span time.Duration
}

var ranges = []rangeSpan{
	{"6h", 6 * time.Hour}, {"24h", 24 * time.Hour}, {"7d", 7 * 24 * time.Hour},
	{"30d", 30 * 24 * time.Hour}, {"90d", 90 * 24 * time.Hour}, {"1y", 365 * 24 * time.Hour},
}

// pairData is the pair history page: the charts' data comes from
// pairSeries (DataURL), so that the page shows at once and the browser
// parses the numbers as JSON, not as HTML.
type pairData struct {
	pairQuery
	Ranges    []rangeLink
	OthersURL string // the pairs that can be overlaid (pairOthers)
	Recent    []fleet.Result
	DataURL   string
}

// pairQuery is what a history asks: pairs ("source:dest"), a kind, and
// a range ending at To.
type pairQuery struct {
	Pairs    []string
	Kind     string
	Range    string
	From, To time.Time
}

type rangeLink struct {
	Key, Href string
	Current   bool
}

// series is one pair's history as the charts draw it: seconds since the
// epoch, and one column per figure (null: not measured).
type series struct {
	Label     string  `json:"label"`
	Pair      string  `json:"pair"`
	Truncated bool    `json:"truncated,omitempty"` // more than maxHistoryPer in the range: the newest shown
	T         []int64 `json:"t"`
	Tput      nums    `json:"tput"`  // Mbit/s, up
	Down      nums    `json:"down"`  // Mbit/s, down
	RTT       nums    `json:"rtt"`   // ms, idle
	RTTL      nums    `json:"rttl"`  // ms, loaded
	Loss      nums    `json:"loss"`  // %
	Delay     nums    `json:"delay"` // buffer delay, %
}

// readPairQuery reads ?pair=A:B&pair=C:D&kind=&range=7d&end=RFC3339.
func (s *Site) readPairQuery(r *http.Request) (pairQuery, error) {
	q := r.URL.Query()
	pq := pairQuery{Kind: q.Get("kind"), Range: cmp.Or(q.Get("range"), "7d")}
	i := slices.IndexFunc(ranges, func(x rangeSpan) bool { return x.Key == pq.Range })
	if i < 0 {
		return pq, badInput("range %q: want one of 6h, 24h, 7d, 30d, 90d, 1y", pq.Range)
	}
	pq.To = s.cfg.Now().UTC()
	if e := q.Get("end"); e != "" {
		t, err := time.Parse(time.RFC3339, e)
		if err != nil {
			return pq, badInput("end %q: want a time such as 2026-11-24T12:00:00Z", e)
		}
		pq.To = t.UTC()
	}
	pq.From = pq.To.Add(-ranges[i].Span)
	for _, p := range q["pair"] {
		if _, _, ok := strings.Cut(p, ":"); !ok {
			return pq, badInput("pair %q: want SOURCE:DEST", p)
		}
		if !slices.Contains(pq.Pairs, p) && len(pq.Pairs) < maxOverlay {
			pq.Pairs = append(pq.Pairs, p)
		}
	}
	if len(pq.Pairs) == 0 {
		return pq, badInput("no pair: open one from the mesh, or add ?pair=SOURCE:DEST")
	}
	return pq, nil
}

// pairPage: GET /ui/pair?...: the page, its newest results, and what
// else can be overlaid.
func (s *Site) pairPage(w http.ResponseWriter, r *http.Request, v *viewer) error {
	pq, err := s.readPairQuery(r)
	if err != nil {
		return err
	}
	d := pairData{pairQuery: pq}
	ctx := r.Context()
	if d.Kind == "" { // the first pair's newest result's
		src, dst, _ := strings.Cut(d.Pairs[0], ":")
		rs, err := s.cfg.Store.Results(ctx, fleet.ResultFilter{Source: src, Dest: dst, Limit: 1, NoDoc: true})
		if err != nil {
			return err
		}
		if len(rs) > 0 {
			d.Kind = rs[0].Kind
		}
	}
	for _, p := range d.Pairs {
		src, dst, _ := strings.Cut(p, ":")
		rs, err := s.cfg.Store.Results(ctx, fleet.ResultFilter{Source: src, Dest: dst, Kind: d.Kind, Since: d.From, Until: d.To, Limit: 20, NoDoc: true})
		if err != nil {
			return err
		}
		d.Recent = append(d.Recent, rs...)
	}
	slices.SortFunc(d.Recent, func(a, b fleet.Result) int { return b.Received.Compare(a.Received) })
	d.Recent = d.Recent[:min(len(d.Recent), 20)]
	for _, rg := range ranges {
		d.Ranges = append(d.Ranges, rangeLink{Key: rg.Key, Current: rg.Key == d.Range, Href: pairHref(d.Pairs, d.Kind, rg.Key, "")})
	}
	if d.Kind != "" { // else the pair has no result at all
		d.DataURL = pairHref(d.Pairs, d.Kind, d.Range, d.To.Format(time.RFC3339))
		d.DataURL = strings.Replace(d.DataURL, Prefix+"pair?", Prefix+"pair/data?", 1)
		d.OthersURL = Prefix + "pair/others?kind=" + urlq(d.Kind)
	}
	s.render(w, r, "pair", v, d)
	return nil
}

// pairOthers: GET /ui/pair/others?kind=K: every pair with a result of
// kind, as JSON ("source:dest"), for the overlay field's suggestions
// (asked when it is first used: reading the latest of every pair costs
// the store more than the page itself).
func (s *Site) pairOthers(w http.ResponseWriter, r *http.Request, v *viewer) error {
	latest, err := s.cfg.Store.Latest(r.Context(), "")
	if err != nil {
		return err
	}
	out := []string{}
	for _, l := range latest {
		if l.Kind == r.URL.Query().Get("kind") && len(out) < 10_000 {
			out = append(out, l.Source+":"+l.Dest)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(out)
}

// pairSeries: GET /ui/pair/data?...: each pair's results in the range
// (figures only), oldest first, as JSON, the pairs read in parallel.
func (s *Site) pairSeries(w http.ResponseWriter, r *http.Request, v *viewer) error {
	pq, err := s.readPairQuery(r)
	if err != nil {
		return err
	}
	if pq.Kind == "" {
		return badInput("no kind: say which test's history (kind=tcp, rfc6349, ...)")
	}
	all := make([]series, len(pq.Pairs))
	errs := make([]error, len(pq.Pairs))
	var wg sync.WaitGroup
	for i, p := range pq.Pairs {
		wg.Go(func() {
			src, dst, _ := strings.Cut(p, ":")
			rs, err := s.cfg.Store.Results(r.Context(), fleet.ResultFilter{Source: src, Dest: dst, Kind: pq.Kind,
				Since: pq.From, Until: pq.To, Limit: maxHistoryPer, NoDoc: true})
			errs[i] = err
			all[i] = seriesOf(src+" → "+dst, rs)
			all[i].Pair, all[i].Truncated = p, len(rs) == maxHistoryPer
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	_, err = w.Write(appendSeries(nil, pq.From.Unix(), pq.To.Unix(), all))
	return err
}

// appendSeries writes the history's JSON by hand: encoding/json would
// check the columns' own JSON again (megabytes of numbers) after they
// wrote it.
func appendSeries(b []byte, from, to int64, all []series) []byte {
	b = fmt.Appendf(b, `{"from":%d,"to":%d,"pairs":[`, from, to)
	for i, s := range all {
		if i > 0 {
			b = append(b, ',')
		}
		label, _ := json.Marshal(s.Label)
		pair, _ := json.Marshal(s.Pair)
		b = fmt.Appendf(b, `{"label":%s,"pair":%s,`, label, pair)
		if s.Truncated {
			b = append(b, `"truncated":true,`...)
		}
		b = append(b, `"t":[`...)
		for j, t := range s.T {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, t, 10)
		}
		b = append(b, ']')
		for _, c := range []struct {
			key string
			col nums
		}{{"tput", s.Tput}, {"down", s.Down}, {"rtt", s.RTT}, {"rttl", s.RTTL}, {"loss", s.Loss}, {"delay", s.Delay}} {
			b = append(b, `,"`+c.key+`":`...)
			b = c.col.append(b)
		}
		b = append(b, '}')
	}
	return append(b, "]}\n"...)
}

// pairRun: GET /ui/pair/run?pair=A:B&kind=K&t=UNIX: the run whose
// result the pair received in that second (a chart's point), opened.
func (s *Site) pairRun(w http.ResponseWriter, r *http.Request, v *viewer) error {
	q := r.URL.Query()
	src, dst, ok := strings.Cut(q.Get("pair"), ":")
	t, err := strconv.ParseInt(q.Get("t"), 10, 64)
	if !ok || err != nil {
		return badInput("want pair=SOURCE:DEST and t=SECONDS")
	}
	at := time.Unix(t, 0)
	rs, err := s.cfg.Store.Results(r.Context(), fleet.ResultFilter{Source: src, Dest: dst, Kind: q.Get("kind"),
		Since: at, Until: at.Add(time.Second), Limit: 1, NoDoc: true})
	if err != nil {
		return err
	}
	if len(rs) == 0 {
		return notFound(fmt.Sprintf("a result of %s → %s at %s", src, dst, at.UTC().Format(time.RFC3339)))
	}
	http.Redirect(w, r, Prefix+"runs/"+rs[0].RunID, http.StatusSeeOther)
	return nil
}

// pairHref links the history of pairs.
func pairHref(pairs []string, kind, rng, end string) string {
	var b strings.Builder
	b.WriteString(Prefix + "pair?kind=" + urlq(kind) + "&range=" + urlq(rng))
	if end != "" {
		b.WriteString("&end=" + urlq(end))
	}
	for _, p := range pairs {
		b.WriteString("&pair=" + urlq(p))
	}
	return b.String()
}

// seriesOf turns results, newest first, into one oldest-first series.
func seriesOf(label string, rs []fleet.Result) series {
	n := len(rs)
	s := series{Label: label, T: make([]int64, n), Tput: make(nums, n), Down: make(nums, n),
		RTT: make(nums, n), RTTL: make(nums, n), Loss: make(nums, n), Delay: make(nums, n)}
	for i, r := range rs {
		j := n - 1 - i
		f := r.Figures
		s.T[j] = r.Received.Unix()
		s.Tput[j], s.Down[j] = orNaN(f.ThroughputBps/1e6), orNaN(f.DownThroughputBps/1e6)
		s.RTT[j], s.RTTL[j] = orNaN(f.RTTMs), orNaN(f.RTTLoadedMs)
		s.Loss[j], s.Delay[j] = f.LossPct, orNaN(f.BufferDelayPct)
		if f.ThroughputBps == 0 && f.RTTMs == 0 {
			s.Loss[j] = math.NaN()
		}
		if f.Implausible != "" { // no path's figures: the table says why; a chart would lose its scale to them
			s.Tput[j], s.Down[j], s.RTT[j], s.RTTL[j], s.Loss[j], s.Delay[j] = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
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

func (ns nums) MarshalJSON() ([]byte, error) { return ns.append(nil), nil }

func (ns nums) append(b []byte) []byte {
	b = append(b, '[')
	for i, v := range ns {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, v, 'g', 4, 64)
	}
	return append(b, ']')
}
