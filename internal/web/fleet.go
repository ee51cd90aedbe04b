package web

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/schedule"
)

// agentRow is one agent as the fleet page lists it.
type agentRow struct {
	fleet.Agent
	Busy   bool   // a run of it is running now
	Labels string // k=v, sorted
	Seen   string // how long ago
}

// fleetData is the fleet page: the agents matching the filter, sorted.
type fleetData struct {
	Rows          []agentRow
	Total         int
	Q, State      string
	Sort          string
	Desc          bool
	States        []string
	Columns       []column
	Up, Down, Run int
}

// column is a sortable column's header link.
type column struct {
	Key, Label, Href, AriaSort string
}

var sortKeys = []struct{ key, label string }{
	{"name", "Name"}, {"state", "State"}, {"site", "Site"}, {"version", "Version"}, {"last_seen", "Last seen"},
}

// fleetPage: GET /ui/?q=&state=&sort=&desc=1.
func (s *Site) fleetPage(w http.ResponseWriter, r *http.Request, v *viewer) error {
	q := r.URL.Query()
	d := fleetData{Q: strings.TrimSpace(q.Get("q")), State: q.Get("state"), Sort: cmp.Or(q.Get("sort"), "name"), Desc: q.Get("desc") == "1",
		States: []string{"up", "busy", "down", "new", "revoked"}}
	rows, err := s.agentRows(r)
	if err != nil {
		return err
	}
	d.Total = len(rows)
	for _, a := range rows {
		switch {
		case a.Busy:
			d.Run++
		case a.State == fleet.AgentUp:
			d.Up++
		case a.State == fleet.AgentDown:
			d.Down++
		}
		if matches(a, d.Q, d.State) {
			d.Rows = append(d.Rows, a)
		}
	}
	sortAgents(d.Rows, d.Sort, d.Desc)
	for _, k := range sortKeys {
		c := column{Key: k.key, Label: k.label}
		desc := k.key == d.Sort && !d.Desc
		c.Href = "?q=" + urlq(d.Q) + "&state=" + urlq(d.State) + "&sort=" + k.key
		if desc {
			c.Href += "&desc=1"
		}
		if k.key == d.Sort {
			c.AriaSort = map[bool]string{false: "ascending", true: "descending"}[d.Desc]
		}
		d.Columns = append(d.Columns, c)
	}
	s.render(w, r, "fleet", v, d)
	return nil
}

// agentRows are every agent with its state now and whether it is busy.
func (s *Site) agentRows(r *http.Request) ([]agentRow, error) {
	as, err := s.cfg.Store.Agents(r.Context())
	if err != nil {
		return nil, err
	}
	running, err := s.cfg.Store.Runs(r.Context(), fleet.RunFilter{States: []fleet.RunState{fleet.RunRunning}, Limit: 10_000})
	if err != nil {
		return nil, err
	}
	busy := map[string]bool{}
	for _, run := range running {
		busy[run.Source], busy[run.Dest] = true, true
	}
	now := s.cfg.Now()
	rows := make([]agentRow, 0, len(as))
	for _, a := range as {
		a.State = fleet.StateAt(a, now, s.cfg.DownAfter)
		var ls []string
		for k, v := range a.Labels {
			ls = append(ls, k+"="+v)
		}
		slices.Sort(ls)
		rows = append(rows, agentRow{Agent: a, Busy: busy[a.Name] && a.State == fleet.AgentUp, Labels: strings.Join(ls, " "), Seen: ago(now, a.LastSeen)})
	}
	return rows, nil
}

// matches is the fleet page's filter: q in the name, site, labels or
// version; state one of the states, or busy.
func matches(a agentRow, q, state string) bool {
	if state != "" && !(state == "busy" && a.Busy) && (state == "busy" || string(a.State) != state) {
		return false
	}
	if q == "" {
		return true
	}
	q = strings.ToLower(q)
	for _, f := range []string{a.Name, a.Site, a.Labels, a.Version} {
		if strings.Contains(strings.ToLower(f), q) {
			return true
		}
	}
	return false
}

func sortAgents(rows []agentRow, key string, desc bool) {
	slices.SortStableFunc(rows, func(a, b agentRow) int {
		c := 0
		switch key {
		case "state":
			c = strings.Compare(string(a.State), string(b.State))
		case "site":
			c = strings.Compare(a.Site, b.Site)
		case "version":
			c = strings.Compare(a.Version, b.Version)
		case "last_seen":
			c = a.LastSeen.Compare(b.LastSeen)
		}
		c = cmp.Or(c, strings.Compare(a.Name, b.Name))
		if desc {
			return -c
		}
		return c
	})
}

// agentData is one agent's page.
type agentData struct {
	A        agentRow
	Runs     []fleet.Run
	Busy     float64 // share of the next 24 h taken by exclusive runs, %
	NextFree time.Time
	Now      time.Time
}

// agentPage: GET /ui/agents/{name}: the agent and its recent runs.
func (s *Site) agentPage(w http.ResponseWriter, r *http.Request, v *viewer) error {
	name := r.PathValue("name")
	rows, err := s.agentRows(r)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(rows, func(a agentRow) bool { return a.Name == name })
	if i < 0 {
		return notFound("agent " + name)
	}
	d := agentData{A: rows[i], Now: s.cfg.Now()}
	if d.Runs, err = s.cfg.Store.Runs(r.Context(), fleet.RunFilter{Agent: name, Limit: 50}); err != nil {
		return err
	}
	if d.Busy, d.NextFree, err = s.busy(r, name, d.Now); err != nil {
		return err
	}
	s.render(w, r, "agent", v, d)
	return nil
}

// busy is the share of the next 24 h an agent's exclusive runs take
// (%), and when it is next free.
func (s *Site) busy(r *http.Request, name string, now time.Time) (float64, time.Time, error) {
	slots, err := s.cfg.Store.Slots(r.Context(), name, now, now.Add(24*time.Hour))
	if err != nil {
		return 0, time.Time{}, err
	}
	var excl []schedule.Interval
	for _, sl := range slots {
		if sl.Exclusive {
			excl = append(excl, schedule.Interval{Start: sl.Start, End: sl.End})
		}
	}
	return schedule.BusyFraction(excl, now, now.Add(24*time.Hour)) * 100, schedule.NextFree(excl, now), nil
}
