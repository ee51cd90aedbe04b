package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// maxMeshSide bounds the grid: more agents than this on a side are
// left out (the page says so); a schedule's mesh narrows it.
const maxMeshSide = 300

// meshData is the mesh page: a grid of sources by destinations, each
// cell the pair's latest result of one kind.
type meshData struct {
	Schedules  []fleet.Schedule
	Schedule   string
	Kind       string
	Kinds      []string
	Cols       []string
	Rows       []meshRow
	Thresholds string // the schedule's, in words
	Cut        int    // agents left out of a side
	Cells      int    // cells with a result
	// TipsURL answers the cells' numbers in words, by row and column,
	// for mesh.js to show on hover or focus (kept out of the page: the
	// words of 10,000 cells would triple it).
	TipsURL string
}

type meshRow struct {
	Name  string
	Cells []cell
}

// cell is one pair: its name for a screen reader (the pair and its
// state), its numbers in words (shown on hover or focus), and the
// classes of its two halves (up: source to destination, the upper left;
// down: back, the lower right, when the test measured it). The grid is
// one Tab stop (First: the cell that takes it); mesh.js moves in it
// with the arrow keys and opens a cell's pair on click or Enter. Cells
// are not links: 10,000 links cost Chromium 0.4 s more to load
// (each is a URL to parse and a visited-link lookup), and Tab would stop
// at each.
type cell struct {
	Label, Text string
	Up, Down    string
	First       bool
}

// meshPage: GET /ui/mesh?schedule=&kind=.
func (s *Site) meshPage(w http.ResponseWriter, r *http.Request, v *viewer) error {
	d, _, err := s.grid(r)
	if err != nil {
		return err
	}
	d.TipsURL = Prefix + "mesh/tips?schedule=" + urlq(d.Schedule) + "&kind=" + urlq(d.Kind)
	s.render(w, r, "mesh", v, d)
	return nil
}

// meshTips: GET /ui/mesh/tips?schedule=&kind=: the grid's cells in
// words, by row and column ("" where no result), as JSON.
func (s *Site) meshTips(w http.ResponseWriter, r *http.Request, v *viewer) error {
	_, tips, err := s.grid(r)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(tips)
}

// grid is the mesh the query asks for, and its cells' words.
func (s *Site) grid(r *http.Request) (meshData, [][]string, error) {
	q := r.URL.Query()
	d := meshData{Schedule: q.Get("schedule"), Kind: q.Get("kind")}
	ctx := r.Context()
	var err error
	if d.Schedules, err = s.cfg.Store.Schedules(ctx); err != nil {
		return d, nil, err
	}
	byID := map[string]*fleet.Schedule{}
	for i := range d.Schedules {
		byID[d.Schedules[i].ID] = &d.Schedules[i]
	}
	sc := byID[d.Schedule]
	if d.Schedule != "" && sc == nil {
		return d, nil, notFound("schedule " + d.Schedule)
	}
	latest, err := s.cfg.Store.Latest(ctx, d.Schedule)
	if err != nil {
		return d, nil, err
	}
	agents, err := s.cfg.Store.Agents(ctx)
	if err != nil {
		return d, nil, err
	}
	d.Kinds, d.Kind = kindsOf(latest, sc, d.Kind)
	if sc != nil {
		d.Thresholds = thresholdsText(sc.Thresholds)
	}
	rows, cols := meshSides(agents, sc)
	d.Cut = max(0, len(rows)-maxMeshSide, len(cols)-maxMeshSide)
	rows, cols = rows[:min(len(rows), maxMeshSide)], cols[:min(len(cols), maxMeshSide)]
	d.Cols = cols
	cells := map[[2]string]fleet.Result{}
	for _, res := range latest {
		if res.Kind == d.Kind {
			cells[[2]string{res.Source, res.Dest}] = res
		}
	}
	now := s.cfg.Now()
	tips := make([][]string, 0, len(rows))
	for _, src := range rows {
		row := meshRow{Name: src, Cells: make([]cell, len(cols))}
		tip := make([]string, len(cols))
		for j, dst := range cols {
			if res, ok := cells[[2]string{src, dst}]; ok {
				row.Cells[j] = cellOf(res, byID[res.ScheduleID], now)
				row.Cells[j].First = d.Cells == 0
				tip[j] = row.Cells[j].Text
				d.Cells++
			}
		}
		d.Rows, tips = append(d.Rows, row), append(tips, tip)
	}
	return d, tips, nil
}

// kindsOf are the kinds the latest results have, and the one to show:
// the asked one, else the schedule's, else the most common.
func kindsOf(latest []fleet.Result, sc *fleet.Schedule, want string) ([]string, string) {
	n := map[string]int{}
	for _, r := range latest {
		n[r.Kind]++
	}
	var kinds []string
	for k := range n {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	switch {
	case want != "":
		return kinds, want
	case sc != nil:
		return kinds, sc.Test.Kind
	}
	best := ""
	for _, k := range kinds {
		if n[k] > n[best] {
			best = k
		}
	}
	return kinds, best
}

// meshSides are the grid's rows (sources) and columns (destinations):
// a schedule's own (both ways: the union), or every agent not revoked.
func meshSides(agents []fleet.Agent, sc *fleet.Schedule) (rows, cols []string) {
	for _, a := range agents {
		switch {
		case sc == nil:
			if a.State != fleet.AgentRevoked {
				rows, cols = append(rows, a.Name), append(cols, a.Name)
			}
		case sc.Both && (sc.From.Picks(a) || sc.To.Picks(a)):
			rows, cols = append(rows, a.Name), append(cols, a.Name)
		default:
			if sc.From.Picks(a) {
				rows = append(rows, a.Name)
			}
			if sc.To.Picks(a) {
				cols = append(cols, a.Name)
			}
		}
	}
	slices.Sort(rows)
	slices.Sort(cols)
	return rows, cols
}

// cellOf colours and words one pair's latest result: by its schedule's
// thresholds now (so changed thresholds recolour the grid), or, when
// the schedule is gone, by the health stored with it.
func cellOf(res fleet.Result, sc *fleet.Schedule, now time.Time) cell {
	var c cell
	var th fleet.Thresholds
	judged := sc != nil && sc.Thresholds != nil
	if judged {
		th = *sc.Thresholds
	}
	var words []string
	words = append(words, fmt.Sprintf("%s → %s, %s, %s", res.Source, res.Dest, res.Kind, ago(now, res.Received)))
	up := res.Figures.Up()
	h, why := th.Judge(up)
	if !judged {
		h = res.Health
	}
	c.Up = class(h)
	words = append(words, "up: "+dirWords(up))
	if down, ok := res.Figures.Down(); ok {
		hd, whyd := th.Judge(down)
		if !judged {
			hd = res.Health
		}
		c.Down = class(hd)
		words = append(words, "down: "+dirWords(down))
		why = append(why, whyd...)
	}
	if res.Figures.Verdict != "" {
		words = append(words, "verdict "+res.Figures.Verdict)
	}
	switch {
	case len(why) > 0:
		words = append(words, "ALERT: "+strings.Join(why, "; "))
	case h == fleet.HealthOK:
		words = append(words, "within thresholds")
	case !judged:
		words = append(words, "no thresholds")
	}
	c.Text = strings.Join(words, "\n")
	c.Label = res.Source + " → " + res.Dest + ": " + map[string]string{"ok": "within thresholds", "alert": "alert", "seen": "no thresholds"}[c.Up]
	if c.Down == "alert" && c.Up != "alert" {
		c.Label += ", alert back"
	}
	return c
}

// class is a half's colour class.
func class(h fleet.Health) string {
	switch h {
	case fleet.HealthOK:
		return "ok"
	case fleet.HealthAlert:
		return "alert"
	}
	return "seen"
}

// dirWords are one direction's figures in words, with units.
func dirWords(d fleet.Direction) string {
	var ws []string
	if d.ThroughputBps > 0 {
		t := mbps(d.ThroughputBps)
		if d.IdealBps > 0 {
			t += fmt.Sprintf(" (%.0f %% of ideal %s)", d.ThroughputBps/d.IdealBps*100, mbps(d.IdealBps))
		}
		ws = append(ws, t)
	}
	if d.RTTMs > 0 {
		ws = append(ws, "RTT "+num(d.RTTMs, "ms")+" idle")
	}
	if d.RTTLoadedMs > 0 {
		ws = append(ws, num(d.RTTLoadedMs, "ms")+" loaded")
	}
	ws = append(ws, fmt.Sprintf("loss %.3g %%", d.LossPct))
	if d.BufferDelayPct > 0 {
		ws = append(ws, "buffer delay "+num(d.BufferDelayPct, "%"))
	}
	return strings.Join(ws, ", ")
}
