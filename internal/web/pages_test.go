package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// meshCell is the class of the cell for pair src:dst of kind, "" when
// the grid has no link for it.
func meshCell(body, src, dst, kind string) string {
	re := regexp.MustCompile(`<td class="c ([a-z]+)[^"]*" aria-label="` + src + ` → ` + dst + `: `)
	m := re.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestMeshColours: each cell is coloured by its latest result against
// its schedule's thresholds now; changing them recolours the grid.
func TestMeshColours(t *testing.T) {
	f := newFixture(t)
	f.agents("a", "b", "c")
	ctx := context.Background()
	sc, err := f.st.CreateSchedule(ctx, fleet.Schedule{Name: "m", Test: fleet.Test{Kind: "tcp"}, Both: true,
		From: fleet.Selector{Labels: map[string]string{"fleet": "lab"}}, To: fleet.Selector{Labels: map[string]string{"fleet": "lab"}},
		Enabled: true, Created: time.Now(), Repeat: "R/PT1H", NextDue: time.Now().Add(time.Hour), Thresholds: &fleet.Thresholds{MaxRTTMs: 20}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(-time.Minute)
	d := doc(t, "tcp")
	f.result(sc.ID, "a", "b", "tcp", now.Add(-time.Hour), &fleet.Figures{ThroughputBps: 90e6, RTTMs: 40}, d) // older: alert, superseded
	f.result(sc.ID, "a", "b", "tcp", now, &fleet.Figures{ThroughputBps: 90e6, RTTMs: 10}, d)
	f.result(sc.ID, "b", "a", "tcp", now, &fleet.Figures{ThroughputBps: 90e6, RTTMs: 30, DownThroughputBps: 80e6}, d)
	b := f.browser()
	b.login(f.reader)
	body := b.get("/ui/mesh?schedule=" + sc.ID).body
	if i := strings.Index(body, `<td class="c `); i >= 0 {
		t.Logf("first cell: %.200s", body[i:])
	}
	if got := meshCell(body, "a", "b", "tcp"); got != "ok" {
		t.Errorf("a→b (latest RTT 10 ms, max 20): cell %q, want ok", got)
	}
	if got := meshCell(body, "b", "a", "tcp"); got != "alert" {
		t.Errorf("b→a (RTT 30 ms, max 20): cell %q, want alert", got)
	}
	if !strings.Contains(body, ` d-alert" aria-label="b → a: alert"`) {
		t.Error("b→a measured both ways: no down half")
	}
	if got := meshCell(body, "a", "c", "tcp"); got != "" {
		t.Errorf("a→c has no result but a cell %q", got)
	}
	var tips [][]string // by row (a, b, c) and column (a, b, c)
	if err := json.Unmarshal([]byte(b.get("/ui/mesh/tips?kind=tcp&schedule="+sc.ID).body), &tips); err != nil || len(tips) != 3 {
		t.Fatalf("tips: %v %v", tips, err)
	}
	if tip := tips[1][0]; !strings.Contains(tip, "RTT 30 ms idle") || !strings.Contains(tip, "ALERT: RTT 30 ms is above 20 ms") {
		t.Errorf("the b→a cell's words lack its numbers or the crossed limit: %q", tip)
	}
	if tips[0][2] != "" || tips[0][0] != "" {
		t.Errorf("cells without a result have words: %q", tips[0])
	}
	if n := strings.Count(body, "<tr><th scope=\"row\">"); n != 3 {
		t.Errorf("%d rows, want 3 (a, b, c)", n)
	}
	sc.Thresholds = &fleet.Thresholds{MaxRTTMs: 5}
	if _, err := f.st.UpdateSchedule(ctx, sc); err != nil {
		t.Fatal(err)
	}
	if got := meshCell(b.get("/ui/mesh?schedule="+sc.ID).body, "a", "b", "tcp"); got != "alert" {
		t.Errorf("a→b after the max RTT fell to 5 ms: %q, want alert", got)
	}
}

// TestPairHistory: the page carries each pair's results in the range,
// oldest first, as the charts draw them; overlays; bad queries refused.
func TestPairHistory(t *testing.T) {
	f := newFixture(t)
	f.agents("a", "b", "c")
	d := doc(t, "tcp")
	now := time.Now()
	for i := range 48 { // hourly for two days
		f.result("", "a", "b", "tcp", now.Add(-time.Duration(i)*time.Hour-time.Minute), &fleet.Figures{ThroughputBps: float64(50+i) * 1e6, RTTMs: 10}, d)
	}
	f.result("", "c", "b", "tcp", now.Add(-2*time.Hour), &fleet.Figures{ThroughputBps: 20e6}, d)
	b := f.browser()
	b.login(f.reader)
	type pairSeries struct {
		Label string    `json:"label"`
		T     []int64   `json:"t"`
		Tput  []float64 `json:"tput"`
	}
	series := func(q string) []pairSeries {
		if a := b.get("/ui/pair?" + q); a.code != 200 || !strings.Contains(a.body, `data-src="/ui/pair/data?`) {
			t.Fatalf("pair %s: %d, no data source: %.300s", q, a.code, a.body)
		}
		if !strings.Contains(q, "kind=") {
			q += "&kind=tcp"
		}
		a := b.get("/ui/pair/data?" + q)
		var v struct {
			Pairs []pairSeries `json:"pairs"`
		}
		if err := json.Unmarshal([]byte(a.body), &v); err != nil {
			t.Fatalf("pair data %s: %d %v: %.300s", q, a.code, err, a.body)
		}
		return v.Pairs
	}
	s := series("pair=a:b&range=7d")
	if len(s) != 1 || len(s[0].T) != 48 || s[0].Tput[47] != 50 || s[0].Tput[0] != 97 {
		t.Fatalf("7 days of a→b: %d pairs, %+v", len(s), s)
	}
	if s := series("pair=a:b&range=24h"); len(s[0].T) != 24 {
		t.Errorf("24 h of a→b: %d points, want 24", len(s[0].T))
	}
	if s := series("pair=a:b&pair=c:b&kind=tcp&range=24h"); len(s) != 2 || len(s[1].T) != 1 {
		t.Errorf("a→b with c→b overlaid: %+v", s)
	}
	for _, q := range []string{"pair=a:b&range=2w", "range=7d", "pair=ab", "pair=a:b&end=yesterday"} {
		for _, p := range []string{"/ui/pair?", "/ui/pair/data?kind=tcp&"} {
			if a := b.get(p + q); a.code != http.StatusBadRequest {
				t.Errorf("%s%s: %d, want 400", p, q, a.code)
			}
		}
	}
	// A chart's point opens its run: the result received in that second.
	at := now.Add(-5*time.Hour - time.Minute)
	rs, _ := f.st.Results(context.Background(), fleet.ResultFilter{Source: "a", Dest: "b", Since: at.Add(-time.Second), Until: at.Add(time.Second), NoDoc: true})
	if len(rs) != 1 {
		t.Fatalf("%d results near %v", len(rs), at)
	}
	a := b.get(fmt.Sprintf("/ui/pair/run?pair=a:b&kind=tcp&t=%d", rs[0].Received.Unix()))
	if a.code != http.StatusSeeOther || a.h.Get("Location") != "/ui/runs/"+rs[0].RunID {
		t.Errorf("the point at %v: %d to %q, want its run %s", at, a.code, a.h.Get("Location"), rs[0].RunID)
	}
	if a := b.get(fmt.Sprintf("/ui/pair/run?pair=a:b&kind=tcp&t=%d", now.Add(-30*time.Minute).Unix())); a.code != http.StatusNotFound {
		t.Errorf("a time with no result: %d, want 404", a.code)
	}
}

// TestRunPage: a finished run shows its report in a sandboxed frame and
// offers its JSON; a running one its progress.
func TestRunPage(t *testing.T) {
	f := newFixture(t)
	f.agents("a", "b")
	d := doc(t, "rfc6349")
	id := f.result("", "a", "b", "rfc6349", time.Now(), nil, d)
	b := f.browser()
	b.login(f.reader)
	page := b.get("/ui/runs/" + id).body
	for _, want := range []string{`<iframe class="report" src="/ui/runs/` + id + `/report"`, "sandbox", `/ui/runs/` + id + `/result.json`} {
		if !strings.Contains(page, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	rep := b.get("/ui/runs/" + id + "/report")
	if rep.code != 200 || !strings.Contains(rep.body, "RFC 6349") {
		t.Errorf("report: %d %.200s", rep.code, rep.body)
	}
	if csp := rep.h.Get("Content-Security-Policy"); !strings.Contains(csp, "sandbox") || !strings.Contains(csp, "frame-ancestors 'self'") || strings.Contains(csp, "script") {
		t.Errorf("report CSP %q: want sandboxed, framed only here, no script", csp)
	}
	js := b.get("/ui/runs/" + id + "/result.json")
	var want bytes.Buffer
	json.Compact(&want, d)
	if js.body != want.String() || !strings.HasPrefix(js.h.Get("Content-Disposition"), "attachment") {
		t.Errorf("result.json: %d bytes (want %d), disposition %q", len(js.body), len(d), js.h.Get("Content-Disposition"))
	}
	// A running run's progress, from the events its agent streams.
	ctx := context.Background()
	now := time.Now()
	run, err := f.st.Book(ctx, fleet.Run{Source: "a", Dest: "b", Test: fleet.Test{Kind: "tcp"}, Start: now, End: now.Add(time.Minute),
		State: fleet.RunScheduled, Created: now}, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	f.st.SetRunState(ctx, run.ID, []fleet.RunState{fleet.RunScheduled}, fleet.RunRunning, "", now)
	ev := []fleet.Event{
		{RunID: run.ID, Seq: 1, Time: now, Event: json.RawMessage(`{"kind":"step_started","step":"tcp"}`)},
		{RunID: run.ID, Seq: 2, Time: now, Event: json.RawMessage(`{"kind":"sample","step":"tcp","direction":"up","tcp":{"start_s":0,"end_s":1,"bytes":1,"throughput_bps":93500000,"retrans_segs":2,"streams":[]}}`)},
	}
	if err := f.st.AddEvents(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if p := b.get("/ui/runs/" + run.ID).body; !strings.Contains(p, `data-live="true"`) || !strings.Contains(p, "93.5 Mbit/s") {
		t.Errorf("running run's page: no live progress with its sample: %.600s", p)
	}
	var pr struct {
		State string   `json:"state"`
		Lines []string `json:"lines"`
		Next  int      `json:"next"`
	}
	a := b.get("/ui/runs/" + run.ID + "/progress?after=1")
	if err := json.Unmarshal([]byte(a.body), &pr); err != nil || pr.State != "running" || len(pr.Lines) != 1 || pr.Next != 2 {
		t.Errorf("progress after 1: %+v (%v) %s", pr, err, a.body)
	}
}
