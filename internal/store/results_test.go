package store

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

func result(id, src, dst, kind string, at time.Time, doc string) fleet.Result {
	return fleet.Result{RunID: id, Source: src, Dest: dst, Kind: kind, Received: at,
		Figures: fleet.Figures{ThroughputBps: 9.4e8, RTTMs: 0.25, Verdict: "pass"}, Doc: json.RawMessage(doc)}
}

func TestResults(t *testing.T) {
	each(t, func(t *testing.T, db *DB) {
		r := result("r1", "a", "b", "tcp", t0, `{"x": 1, "y": [1, 2]}`)
		if stored := must[bool](t)(db.PutResult(ctx, r)); !stored {
			t.Error("first upload not stored")
		}
		if stored := must[bool](t)(db.PutResult(ctx, r)); stored {
			t.Error("second upload stored again")
		}
		same := r
		same.Doc = json.RawMessage(`{"x":1,"y":[1,2]}`) // the same document, spaced otherwise
		if stored := must[bool](t)(db.PutResult(ctx, same)); stored {
			t.Error("the same document, compacted, stored again")
		}
		other := r
		other.Doc = json.RawMessage(`{"x":2}`)
		_, err := db.PutResult(ctx, other)
		wantErr(t, err, fleet.ErrConflict)
		if _, err := db.PutResult(ctx, result("bad", "a", "b", "tcp", t0, `{`)); err == nil {
			t.Error("a document that is not JSON was stored")
		}

		got := must[fleet.Result](t)(db.Result(ctx, "r1"))
		if string(got.Doc) != `{"x":1,"y":[1,2]}` || got.Figures != r.Figures || !got.Received.Equal(t0) || got.Kind != "tcp" {
			t.Errorf("read back %+v", got)
		}
		_, err = db.Result(ctx, "nope")
		wantErr(t, err, fleet.ErrNotFound)

		for i, x := range []struct{ src, dst, kind string }{{"a", "b", "tcp"}, {"a", "b", "rtt"}, {"b", "a", "tcp"}, {"a", "b", "tcp"}} {
			must[bool](t)(db.PutResult(ctx, result(fmt.Sprintf("r%d", i+2), x.src, x.dst, x.kind, t0.Add(time.Duration(i+1)*time.Minute), `{}`)))
		}
		// A tie in received: the greater run ID is the latest.
		must[bool](t)(db.PutResult(ctx, result("r9", "b", "a", "tcp", t0.Add(3*time.Minute), `{}`)))
		ids := func(rs []fleet.Result) (out []string) {
			for _, r := range rs {
				out = append(out, r.RunID)
			}
			return out
		}
		if got := fmt.Sprint(ids(must[[]fleet.Result](t)(db.Latest(ctx, "")))); got != "[r3 r5 r9]" {
			t.Errorf("latest %s, want [r3 r5 r9] (a→b rtt, a→b tcp, b→a tcp)", got)
		}
		for _, c := range []struct {
			f    fleet.ResultFilter
			want string
		}{
			{fleet.ResultFilter{}, "[r5 r9 r4 r3 r2 r1]"},
			{fleet.ResultFilter{Source: "a", Kind: "tcp"}, "[r5 r2 r1]"},
			{fleet.ResultFilter{Dest: "a"}, "[r9 r4]"},
			{fleet.ResultFilter{Since: t0.Add(3 * time.Minute)}, "[r5 r9 r4]"},
			{fleet.ResultFilter{Limit: 2}, "[r5 r9]"},
		} {
			if got := fmt.Sprint(ids(must[[]fleet.Result](t)(db.Results(ctx, c.f)))); got != c.want {
				t.Errorf("results %+v: %s, want %s", c.f, got, c.want)
			}
		}
	})
}

// TestPutResultRace: two handles (two pools: two controller replicas)
// race to store the same results; each is stored once, and the other's
// upload is told so.
func TestPutResultRace(t *testing.T) {
	for _, b := range dsns {
		t.Run(b.name, func(t *testing.T) {
			dsn := b.dsn(t)
			dbs := []*DB{open(t, dsn), open(t, dsn)}
			const n = 200
			stored := make([][]bool, 2)
			var wg sync.WaitGroup
			for h, db := range dbs {
				stored[h] = make([]bool, n)
				wg.Go(func() {
					for i := range n {
						ok, err := db.PutResult(ctx, result(fmt.Sprint("run", i), "a", "b", "tcp", t0, `{"i":1}`))
						if err != nil {
							t.Error(err)
							return
						}
						stored[h][i] = ok
					}
				})
			}
			wg.Wait()
			for i := range n {
				if stored[0][i] == stored[1][i] {
					t.Errorf("run%d stored by both or neither: %v %v", i, stored[0][i], stored[1][i])
				}
			}
			if rs := must[[]fleet.Result](t)(dbs[0].Results(ctx, fleet.ResultFilter{Limit: 1000})); len(rs) != n {
				t.Errorf("%d results, want %d", len(rs), n)
			}
		})
	}
}

func TestEvents(t *testing.T) {
	each(t, func(t *testing.T, db *DB) {
		ev := func(seq int) fleet.Event {
			return fleet.Event{RunID: "r1", Seq: seq, Time: t0.Add(time.Duration(seq) * time.Second), Event: json.RawMessage(fmt.Sprintf(`{"n":%d}`, seq))}
		}
		check(t, db.AddEvents(ctx, []fleet.Event{ev(1), ev(2), ev(3)}))
		again := ev(2)
		again.Event = json.RawMessage(`{"n":"changed"}`)
		check(t, db.AddEvents(ctx, []fleet.Event{again, ev(4)})) // a retried batch: 2 is kept as first stored
		check(t, db.AddEvents(ctx, nil))
		es := must[[]fleet.Event](t)(db.Events(ctx, "r1", 1, 100))
		if len(es) != 3 || es[0].Seq != 2 || string(es[0].Event) != `{"n":2}` || es[2].Seq != 4 || !es[2].Time.Equal(t0.Add(4*time.Second)) {
			t.Errorf("events after 1: %+v", es)
		}
		if es := must[[]fleet.Event](t)(db.Events(ctx, "r1", 1, 2)); len(es) != 2 || es[1].Seq != 3 {
			t.Errorf("2 events after 1: %+v", es)
		}
		if es := must[[]fleet.Event](t)(db.Events(ctx, "r2", 0, 100)); len(es) != 0 {
			t.Errorf("events of another run: %+v", es)
		}
		n, chars, err := db.EventsSize(ctx, "r1")
		if err != nil || n != 4 || chars != 4*int64(len(`{"n":1}`)) {
			t.Errorf("r1's events: %d, %d characters (%v), want 4 of 7", n, chars, err)
		}
		if n, chars, err := db.EventsSize(ctx, "r2"); err != nil || n != 0 || chars != 0 {
			t.Errorf("r2's events: %d, %d characters (%v), want none", n, chars, err)
		}
	})
}

func TestLease(t *testing.T) {
	each(t, func(t *testing.T, db *DB) {
		take := func(holder string, at time.Duration) bool {
			return must[bool](t)(db.Lease(ctx, "scheduler", holder, 10*time.Second, t0.Add(at)))
		}
		if !take("c1", 0) {
			t.Error("free lease refused")
		}
		if take("c2", 5*time.Second) {
			t.Error("held lease taken by another")
		}
		if !take("c1", 8*time.Second) {
			t.Error("own lease not renewed")
		}
		if take("c2", 17*time.Second) {
			t.Error("renewed lease (to +18s) taken at +17s")
		}
		if !take("c2", 18*time.Second) {
			t.Error("expired lease not taken over")
		}
		if take("c1", 19*time.Second) {
			t.Error("the former holder took it back")
		}
		if !must[bool](t)(db.Lease(ctx, "other", "c1", time.Second, t0)) {
			t.Error("a second lease name refused")
		}
	})
}

// TestResultHealth: a result's schedule and health round trip; NoDoc,
// Until and Schedule filter; Latest is per schedule and never reads the
// document.
func TestResultHealth(t *testing.T) {
	each(t, func(t *testing.T, db *DB) {
		put := func(id, sched, src string, at time.Duration, h, prev fleet.Health) {
			r := result(id, src, "b", "tcp", t0.Add(at), `{"id":"`+id+`"}`)
			r.ScheduleID, r.Health, r.PreviousHealth = sched, h, prev
			must[bool](t)(db.PutResult(ctx, r))
		}
		put("r1", "s1", "a", 0, fleet.HealthOK, "")
		put("r2", "s1", "a", time.Minute, fleet.HealthAlert, fleet.HealthOK)
		put("r3", "s2", "a", 2*time.Minute, "", "")
		put("r4", "s1", "c", 3*time.Minute, fleet.HealthOK, "")
		put("r5", "", "a", 4*time.Minute, "", "")

		got := must[fleet.Result](t)(db.Result(ctx, "r2"))
		if got.ScheduleID != "s1" || got.Health != fleet.HealthAlert || got.PreviousHealth != fleet.HealthOK || string(got.Doc) != `{"id":"r2"}` {
			t.Errorf("read back %+v", got)
		}
		ids := func(rs []fleet.Result) (out []string) {
			for _, r := range rs {
				out = append(out, r.RunID)
			}
			return out
		}
		for _, c := range []struct {
			f    fleet.ResultFilter
			want string
		}{
			{fleet.ResultFilter{Schedule: "s1"}, "[r4 r2 r1]"},
			{fleet.ResultFilter{Schedule: "s1", Source: "a", Dest: "b", Kind: "tcp", Limit: 1}, "[r2]"},
			{fleet.ResultFilter{Until: t0.Add(time.Minute)}, "[r1]"},
			{fleet.ResultFilter{Since: t0.Add(time.Minute), Until: t0.Add(3 * time.Minute)}, "[r3 r2]"},
			{fleet.ResultFilter{NoDoc: true, Source: "a"}, "[r5 r3 r2 r1]"},
		} {
			rs := must[[]fleet.Result](t)(db.Results(ctx, c.f))
			if got := fmt.Sprint(ids(rs)); got != c.want {
				t.Errorf("results %+v: %s, want %s", c.f, got, c.want)
			}
			for _, r := range rs {
				if c.f.NoDoc == (r.Doc != nil) || r.Figures.ThroughputBps == 0 {
					t.Errorf("results %+v: %s has doc %q, figures %+v", c.f, r.RunID, r.Doc, r.Figures)
				}
			}
		}
		for _, c := range []struct{ schedule, want string }{{"s1", "[r2 r4]"}, {"s2", "[r3]"}, {"", "[r5 r4]"}, {"none", "[]"}} {
			rs := must[[]fleet.Result](t)(db.Latest(ctx, c.schedule))
			if got := fmt.Sprint(ids(rs)); got != c.want {
				t.Errorf("latest of schedule %q: %s, want %s", c.schedule, got, c.want)
			}
			for _, r := range rs {
				if r.Doc != nil || (r.RunID == "r2" && r.Health != fleet.HealthAlert) {
					t.Errorf("latest %+v: want no document, health kept", r)
				}
			}
		}
	})
}
