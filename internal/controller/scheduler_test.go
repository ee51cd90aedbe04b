package controller

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/kinds"
)

// meshSchedule is a tcp test both ways between every agent labelled
// mesh=yes.
func meshSchedule() fleet.Schedule {
	sel := fleet.Selector{Labels: map[string]string{"mesh": "yes"}}
	return fleet.Schedule{Name: "mesh", Test: fleet.Test{Kind: "tcp", Config: json.RawMessage(`{"duration_ns": 1000000000}`)},
		From: sel, To: sel, Both: true}
}

// waitRuns polls the schedule's runs until there are n, for at most 15 s.
func waitRuns(t *testing.T, e *env, schedule string, n int) []fleet.Run {
	t.Helper()
	var rs []fleet.Run
	poll(15*time.Second, func() bool {
		var err error
		rs, err = e.admin.Runs(ctx(t), fleet.RunFilter{Schedule: schedule, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return len(rs) >= n
	})
	if len(rs) != n {
		t.Fatalf("schedule %s has %d runs, want %d", schedule, len(rs), n)
	}
	return rs
}

// TestMesh: a mesh of three agents both ways books each of the six
// ordered pairs once, and no agent's exclusive runs overlap; an agent
// outside the labels, or down, gets none.
func TestMesh(t *testing.T) {
	e := start(t, Config{})
	for _, n := range []string{"a", "b", "c"} {
		e.agent(n, map[string]string{"mesh": "yes"})
	}
	e.agent("outsider", map[string]string{"mesh": "no"})
	sc, err := e.admin.CreateSchedule(ctx(t), meshSchedule())
	if err != nil {
		t.Fatal(err)
	}
	rs := waitRuns(t, e, sc.ID, 6)
	n := e.ticks()
	if !poll(5*time.Second, func() bool { return e.ticks() >= n+2 }) { // two more ticks: nothing more is booked
		t.Fatalf("the scheduler ticked %d times in 5 s, want 2", e.ticks()-n)
	}
	rs = waitRuns(t, e, sc.ID, 6)
	var pairs []string
	for _, r := range rs {
		pairs = append(pairs, r.Source+"→"+r.Dest)
		if !r.Exclusive || r.State != fleet.RunScheduled || !r.End.After(r.Start) {
			t.Errorf("run %+v", r)
		}
	}
	slices.Sort(pairs)
	if want := []string{"a→b", "a→c", "b→a", "b→c", "c→a", "c→b"}; !slices.Equal(pairs, want) {
		t.Fatalf("pairs %v, want %v", pairs, want)
	}
	noOverlap(t, rs)
	checkBusy(t, e, "a", rs)
}

// noOverlap fails when two exclusive runs share an agent in time.
func noOverlap(t *testing.T, rs []fleet.Run) {
	t.Helper()
	for i, r := range rs {
		for _, q := range rs[i+1:] {
			shared := r.Source == q.Source || r.Source == q.Dest || r.Dest == q.Source || r.Dest == q.Dest
			if shared && r.Exclusive && q.Exclusive && r.Start.Before(q.End) && q.Start.Before(r.End) {
				t.Errorf("runs overlap: %s→%s [%v, %v) and %s→%s [%v, %v)", r.Source, r.Dest, r.Start, r.End, q.Source, q.Dest, q.Start, q.End)
			}
		}
	}
}

// checkBusy: the busy answer for agent lists its runs, the share of the
// window they take, and the first moment from the window's start that
// no exclusive run covers.
func checkBusy(t *testing.T, e *env, agent string, rs []fleet.Run) {
	t.Helper()
	from := rs[len(rs)-1].Start // the earliest slot (newest first)
	for _, r := range rs {
		from = minTime(from, r.Start)
	}
	to := from.Add(time.Hour)
	b, err := e.admin.Busy(ctx(t), agent, from, to)
	if err != nil {
		t.Fatal(err)
	}
	var mine []fleet.Run
	var taken time.Duration
	for _, r := range rs {
		if r.Source == agent || r.Dest == agent {
			mine = append(mine, r)
			taken += r.End.Sub(r.Start)
		}
	}
	if len(b.Slots) != len(mine) {
		t.Errorf("busy lists %d slots, want %d", len(b.Slots), len(mine))
	}
	if want := taken.Seconds() / time.Hour.Seconds(); math.Abs(b.Fraction-want) > 1e-9 {
		t.Errorf("busy fraction %v, want %v", b.Fraction, want)
	}
	next := from
	for changed := true; changed; {
		changed = false
		for _, r := range mine {
			if !r.Start.After(next) && r.End.After(next) {
				next, changed = r.End, true
			}
		}
	}
	if !b.NextFree.Equal(next) {
		t.Errorf("next free %v, want %v", b.NextFree, next)
	}
	_, err = e.admin.Busy(ctx(t), agent, to, from)
	wantStatus(t, "busy with to before from", err, http.StatusBadRequest)
	_, err = e.admin.Busy(ctx(t), "nobody", from, to)
	wantStatus(t, "busy of an unknown agent", err, http.StatusNotFound)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// TestWebhook: each stored result is POSTed once to the webhook, after
// a first refusal (503) is retried; a re-upload sends nothing.
func TestWebhook(t *testing.T) {
	var mu sync.Mutex
	var got []fleet.Result
	calls := 0
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var res fleet.Result
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &res); err != nil {
			t.Errorf("webhook body: %v", err)
		}
		got = append(got, res)
	}))
	defer hook.Close()
	e := start(t, Config{Webhook: hook.URL, webhookBackoff: 50 * time.Millisecond})
	a := e.agent("a", nil)
	e.agent("b", nil)
	if _, err := e.admin.CreateSchedule(ctx(t), pairSchedule("a", "b")); err != nil {
		t.Fatal(err)
	}
	id := waitOrders(t, a, func(o fleet.Orders) bool { return len(o.Runs) > 0 }).Runs[0].ID
	up := fleet.Upload{State: fleet.RunFinished, Doc: tcpDoc(t)}
	for range 2 {
		if _, err := a.Upload(ctx(t), id, up); err != nil {
			t.Fatal(err)
		}
	}
	// Once the outbox is empty every delivery is over: what got holds is
	// final, and so are the metrics.
	ok := poll(5*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 1 && e.outboxEmpty() })
	mu.Lock()
	defer mu.Unlock()
	if !ok || len(got) != 1 || got[0].RunID != id || len(got[0].Doc) == 0 || calls != 2 {
		t.Fatalf("webhook got %d results in %d calls, want run %s once after one retry", len(got), calls, id)
	}
	m, _ := e.admin.Raw(ctx(t), "/metrics")
	for _, want := range []string{`fullpipe_webhook_deliveries_total{outcome="delivered"} 1`, `fullpipe_webhook_deliveries_total{outcome="retried"} 1`} {
		if !strings.Contains(string(m), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestCancelSlotsAndCap: a cancelled run is refused a start and named
// in its agent's orders; a pair's slot is sized by its latest measured
// RTT (the default before one); /metrics exports at most MaxPairs
// pairs' figures and counts the rest.
func TestCancelSlotsAndCap(t *testing.T) {
	e := start(t, Config{MaxPairs: 1})
	a := e.agent("a", nil)
	e.agent("b", nil)
	e.agent("c", nil)
	if _, err := e.admin.CreateSchedule(ctx(t), pairSchedule("a", "b")); err != nil {
		t.Fatal(err)
	}
	id := waitOrders(t, a, func(o fleet.Orders) bool { return len(o.Runs) > 0 }).Runs[0].ID
	if r, err := e.admin.CancelRun(ctx(t), id); err != nil || r.State != fleet.RunCancelled {
		t.Fatalf("cancel: %+v, %v", r, err)
	}
	_, err := e.admin.CancelRun(ctx(t), id)
	wantStatus(t, "cancel twice", err, http.StatusConflict)
	wantStatus(t, "start a cancelled run", a.Start(ctx(t), id), http.StatusConflict)
	o, err := a.Heartbeat(ctx(t), fleet.Heartbeat{Running: []string{id}})
	if err != nil || !slices.Contains(o.Cancelled, id) || len(o.Runs) != 0 {
		t.Fatalf("orders after the cancel: %+v, %v", o, err)
	}

	rttRun := bookOne(t, e, fleet.Schedule{Name: "rtt", Test: fleet.Test{Kind: "rtt"},
		From: fleet.Selector{Agents: []string{"a"}}, To: fleet.Selector{Agents: []string{"c"}}})
	wantSlot(t, rttRun, e.c.cfg.DefaultRTT)
	if _, err := a.Upload(ctx(t), rttRun.ID, fleet.Upload{State: fleet.RunFinished, Doc: rttDoc(t)}); err != nil {
		t.Fatal(err)
	}
	tcpRun := bookOne(t, e, pairSchedule("a", "c"))
	wantSlot(t, tcpRun, slotRTT(37653*time.Nanosecond)) // rtt.json's minimum, made pessimistic
	if _, err := a.Upload(ctx(t), tcpRun.ID, fleet.Upload{State: fleet.RunFinished, Doc: tcpDoc(t)}); err != nil {
		t.Fatal(err)
	}
	m, _ := e.admin.Raw(ctx(t), "/metrics")
	if !strings.Contains(string(m), "fullpipe_pair_series_dropped 1") || strings.Count(string(m), "fullpipe_pair_result_timestamp_seconds{") != 1 {
		t.Errorf("metrics with MaxPairs 1 and two pairs:\n%s", grepLines(string(m), "fullpipe_pair"))
	}
}

// bookOne creates s and waits for its one run.
func bookOne(t *testing.T, e *env, s fleet.Schedule) fleet.Run {
	t.Helper()
	sc, err := e.admin.CreateSchedule(ctx(t), s)
	if err != nil {
		t.Fatal(err)
	}
	return waitRuns(t, e, sc.ID, 1)[0]
}

// wantSlot: the run's slot is kinds.SlotFor its test at rtt.
func wantSlot(t *testing.T, r fleet.Run, rtt time.Duration) {
	t.Helper()
	slot, err := kinds.SlotFor(r.Test.Kind, r.Test.Config, rtt)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.End.Sub(r.Start), slot.Truncate(time.Millisecond); got != want {
		t.Errorf("%s run's slot %v, want %v (rtt %v)", r.Test.Kind, got, want, rtt)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestWebhookOutbox: a delivery pending when the controller stops waits
// in its outbox and is sent when a controller starts again on the same
// state directory.
func TestWebhookOutbox(t *testing.T) {
	var mu sync.Mutex
	up, got := false, []string{}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if !up {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var res fleet.Result
		json.NewDecoder(r.Body).Decode(&res)
		got = append(got, res.RunID)
	}))
	defer hook.Close()
	st, dir := sqliteStore(t), t.TempDir()
	cfg := Config{Store: st, StateDir: dir, Webhook: hook.URL, webhookBackoff: time.Second}
	var id string
	t.Run("first", func(t *testing.T) {
		e := start(t, cfg)
		a := e.agent("a", nil)
		e.agent("b", nil)
		if _, err := e.admin.CreateSchedule(ctx(t), pairSchedule("a", "b")); err != nil {
			t.Fatal(err)
		}
		id = waitOrders(t, a, func(o fleet.Orders) bool { return len(o.Runs) > 0 }).Runs[0].ID
		if _, err := a.Upload(ctx(t), id, fleet.Upload{State: fleet.RunFinished, Doc: tcpDoc(t)}); err != nil {
			t.Fatal(err)
		}
	}) // the controller stops while the webhook refuses
	if _, err := os.Stat(filepath.Join(dir, "outbox", id)); err != nil {
		t.Fatalf("no outbox entry after the stop: %v", err)
	}
	mu.Lock()
	up = true
	mu.Unlock()
	t.Run("again", func(t *testing.T) {
		start(t, cfg)
		if !poll(10*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 1 }) {
			t.Fatal("the pending delivery was not sent after the restart")
		}
		// The hook has the delivery before the controller has its
		// answer and removes the entry (stopped in between, it would
		// rightly deliver again): wait for the removal, not the hook.
		gone := func() bool {
			_, err := os.Stat(filepath.Join(dir, "outbox", id))
			return errors.Is(err, fs.ErrNotExist)
		}
		if !poll(10*time.Second, gone) {
			t.Error("the outbox entry outlived its delivery by 10 s")
		}
	})
	if got[0] != id {
		t.Errorf("delivered run %s, want %s", got[0], id)
	}
}

// crashingStore is a store whose controller is killed -9 halfway
// through booking an occurrence: from its 4th booking on, every booking
// and claim fails (a dead process makes none) until the scheduler's
// next tick (its first call, MissRuns: the controller that takes over).
type crashingStore struct {
	fleet.Store
	books   atomic.Int32
	dead    atomic.Bool
	crashed atomic.Bool
}

func (s *crashingStore) Book(ctx context.Context, r fleet.Run, horizon time.Time) (fleet.Run, error) {
	if s.books.Add(1) == 4 && s.crashed.CompareAndSwap(false, true) {
		s.dead.Store(true)
	}
	if s.dead.Load() {
		return fleet.Run{}, errors.New("killed (test)")
	}
	return s.Store.Book(ctx, r, horizon)
}

func (s *crashingStore) AdvanceSchedule(ctx context.Context, id string, from, next time.Time, enabled bool) (bool, error) {
	if s.dead.Load() {
		return false, errors.New("killed (test)")
	}
	return s.Store.AdvanceSchedule(ctx, id, from, next, enabled)
}

func (s *crashingStore) MissRuns(ctx context.Context, now time.Time) (int, error) {
	s.dead.Store(false)
	return s.Store.MissRuns(ctx, now)
}

// TestBookedThenClaimed: a mesh of three agents both ways whose
// scheduler is killed after booking 3 of its occurrence's 6 pairs gets
// the other 3 on the next tick, and none twice: each of the six pairs
// once, of that occurrence, which is claimed. (With the claim first, as
// before 2026-11-28, the kill lost the 3: TestScaleOut once counted 45
// runs for 23 occurrences of a pair both ways.)
func TestBookedThenClaimed(t *testing.T) {
	st := &crashingStore{Store: sqliteStore(t)}
	e := start(t, Config{Store: st})
	for _, n := range []string{"a", "b", "c"} {
		e.agent(n, map[string]string{"mesh": "yes"})
	}
	sc, err := e.admin.CreateSchedule(ctx(t), meshSchedule())
	if err != nil {
		t.Fatal(err)
	}
	rs := waitRuns(t, e, sc.ID, 6)
	n := e.ticks()
	if !poll(5*time.Second, func() bool { return e.ticks() >= n+2 }) {
		t.Fatalf("the scheduler ticked %d times in 5 s, want 2", e.ticks()-n)
	}
	if !st.crashed.Load() {
		t.Fatal("the scheduler was never killed")
	}
	got, err := e.admin.Schedule(ctx(t), sc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Enabled && !got.NextDue.After(sc.NextDue) { // a one-off schedule is disabled by the claim of its occurrence
		t.Errorf("the occurrence of %v was never claimed: next due %v, enabled", sc.NextDue, got.NextDue)
	}
	rs = waitRuns(t, e, sc.ID, 6)
	seen := map[string]bool{}
	for _, r := range rs {
		k := r.Source + "→" + r.Dest
		if seen[k] || !r.Occurrence.Equal(sc.NextDue) {
			t.Errorf("run %s of occurrence %v (the schedule's first: %v), seen before: %v", k, r.Occurrence, sc.NextDue, seen[k])
		}
		seen[k] = true
	}
}
