package controller

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// TestWebhookChanges: each upload is judged by its schedule's
// thresholds and carries its pair's previous health; under
// WebhookChanges only changes reach the receiver (a real HTTP server):
// ok → ok is not delivered, ok → alert and alert → ok are. tcp.json
// measured 10.5 Gbit/s up.
func TestWebhookChanges(t *testing.T) {
	var (
		mu  sync.Mutex
		got []fleet.Result
	)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var res fleet.Result
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &res); err != nil {
			t.Errorf("webhook body: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		got = append(got, res)
	}))
	defer hook.Close()
	e := start(t, Config{Webhook: hook.URL, WebhookChanges: true, webhookBackoff: 50 * time.Millisecond})

	pass, fail := &fleet.Thresholds{MinThroughputBps: 1e6}, &fleet.Thresholds{MinThroughputBps: 1e15}
	cases := []struct {
		src, dst   string
		th         *fleet.Thresholds
		prev, want fleet.Health
		delivered  bool
	}{
		{"a", "b", pass, fleet.HealthOK, fleet.HealthOK, false},
		{"c", "d", fail, fleet.HealthOK, fleet.HealthAlert, true},
		{"e", "f", pass, fleet.HealthAlert, fleet.HealthOK, true},
		{"g", "h", nil, fleet.HealthOK, "", false}, // no thresholds: not judged
	}
	runs := map[string]int{} // run ID: case
	for i, c := range cases {
		src := e.agent(c.src, nil)
		e.agent(c.dst, nil)
		s := pairSchedule(c.src, c.dst)
		s.Thresholds = c.th
		sc, err := e.admin.CreateSchedule(ctx(t), s)
		if err != nil {
			t.Fatal(err)
		}
		// The pair's previous result of this schedule; and a newer one
		// of no schedule, which does not count.
		for j, r := range []fleet.Result{{RunID: "prev" + c.src, ScheduleID: sc.ID, Health: c.prev},
			{RunID: "other" + c.src, Health: fleet.HealthAlert}} {
			r.Source, r.Dest, r.Kind, r.Received, r.Doc = c.src, c.dst, "tcp", time.Now().Add(time.Duration(j-2)*time.Minute), json.RawMessage(`{}`)
			if _, err := e.st.PutResult(ctx(t), r); err != nil {
				t.Fatal(err)
			}
		}
		id := waitOrders(t, src, func(o fleet.Orders) bool { return len(o.Runs) > 0 }).Runs[0].ID
		runs[id] = i
		if _, err := src.Upload(ctx(t), id, fleet.Upload{State: fleet.RunFinished, Doc: tcpDoc(t)}); err != nil {
			t.Fatal(err)
		}
		r, err := e.admin.Result(ctx(t), id)
		if err != nil {
			t.Fatal(err)
		}
		if r.ScheduleID != sc.ID || r.Health != c.want || r.PreviousHealth != c.prev {
			t.Errorf("%s→%s stored with schedule %q, health %q after %q; want %q, %q after %q", c.src, c.dst,
				r.ScheduleID, r.Health, r.PreviousHealth, sc.ID, c.want, c.prev)
		}
	}
	want := 0
	for _, c := range cases {
		if c.delivered {
			want++
		}
	}
	// Once the outbox is empty every result was delivered or passed
	// over: no undue delivery can follow.
	ok := poll(5*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= want && e.outboxEmpty() })
	mu.Lock()
	defer mu.Unlock()
	if !ok || len(got) != want {
		t.Fatalf("webhook got %d results, want %d", len(got), want)
	}
	for _, r := range got {
		i, known := runs[r.RunID]
		if !known || !cases[i].delivered || r.Health != cases[i].want || r.PreviousHealth != cases[i].prev {
			t.Errorf("delivered %s (%s→%s, %q after %q): not a change of health", r.RunID, r.Source, r.Dest, r.Health, r.PreviousHealth)
		}
	}
	if !slices.ContainsFunc(got, func(r fleet.Result) bool { return r.Health == fleet.HealthAlert }) {
		t.Error("the alert was not delivered")
	}
}

// TestHealthChanged: what WebhookChanges delivers.
func TestHealthChanged(t *testing.T) {
	ok, alert := fleet.HealthOK, fleet.HealthAlert
	for _, c := range []struct {
		prev, now fleet.Health
		want      bool
	}{{"", "", false}, {"", ok, false}, {"", alert, true}, {ok, ok, false}, {ok, alert, true},
		{alert, ok, true}, {alert, alert, false}, {ok, "", false}, {alert, "", false}} {
		if got := healthChanged(fleet.Result{Health: c.now, PreviousHealth: c.prev}); got != c.want {
			t.Errorf("%q after %q: changed %v, want %v", c.now, c.prev, got, c.want)
		}
	}
}
