package store

import (
	"bytes"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

func TestRuns(t *testing.T) {
	each(t, func(t *testing.T, db *DB) {
		h := t0.Add(time.Hour)
		r1 := must[fleet.Run](t)(db.Book(ctx, run("a", "b", t0, 10*time.Minute, true, "s1"), h))
		if len(r1.ID) != 32 || len(r1.Key) != 32 || r1.State != fleet.RunScheduled || !r1.Start.Equal(t0) {
			t.Errorf("booked %+v", r1)
		}
		// b as source, busy as r1's destination: after r1.
		r2 := must[fleet.Run](t)(db.Book(ctx, run("b", "c", t0.Add(time.Minute), 5*time.Minute, true, "s2"), h))
		if !r2.Start.Equal(t0.Add(10*time.Minute)) || !r2.End.Equal(t0.Add(15*time.Minute)) {
			t.Errorf("b→c booked at [%v, %v), want after a→b", r2.Start, r2.End)
		}
		// A non-exclusive run goes where asked, over the others.
		r3 := must[fleet.Run](t)(db.Book(ctx, run("a", "c", t0.Add(2*time.Minute), time.Minute, false, "s1"), h))
		if !r3.Start.Equal(t0.Add(2 * time.Minute)) {
			t.Errorf("non-exclusive booked at %v, want as asked", r3.Start)
		}
		// No room before the horizon.
		_, err := db.Book(ctx, run("a", "c", t0, 50*time.Minute, true, ""), t0.Add(15*time.Minute))
		wantErr(t, err, fleet.ErrNoSlot)
		// A key given is kept.
		withKey := run("d", "e", t0, time.Minute, true, "")
		withKey.Key = []byte("0123456789abcdef")
		if r := must[fleet.Run](t)(db.Book(ctx, withKey, h)); !bytes.Equal(r.Key, withKey.Key) {
			t.Errorf("key %x, want %x", r.Key, withKey.Key)
		}

		got := must[fleet.Run](t)(db.Run(ctx, r1.ID))
		if got.ID != r1.ID || !bytes.Equal(got.Key, r1.Key) || got.Source != "a" || !got.Created.Equal(t0) || got.ScheduleID != "s1" {
			t.Errorf("read back %+v, want %+v", got, r1)
		}
		_, err = db.Run(ctx, "nope")
		wantErr(t, err, fleet.ErrNotFound)

		slots := must[[]fleet.Slot](t)(db.Slots(ctx, "a", t0, h))
		if len(slots) != 2 || slots[0].RunID != r1.ID || slots[1].RunID != r3.ID || slots[1].Exclusive {
			t.Errorf("slots of a: %+v", slots)
		}
		if slots := must[[]fleet.Slot](t)(db.Slots(ctx, "a", t0.Add(10*time.Minute), h)); len(slots) != 0 {
			t.Errorf("slots of a from r1's end: %+v, want none (half-open)", slots)
		}
		testRunStates(t, db, r1, r2)
		testRunFilters(t, db, r1, r2, r3)
	})
}

// testRunStates: compare-and-set moves, stamps, unknown runs, and a
// finished run frees its slot.
func testRunStates(t *testing.T, db *DB, r1, r2 fleet.Run) {
	sched := []fleet.RunState{fleet.RunScheduled}
	if ok := must[bool](t)(db.SetRunState(ctx, r1.ID, sched, fleet.RunRunning, "", t0.Add(time.Second))); !ok {
		t.Error("scheduled → running refused")
	}
	if ok := must[bool](t)(db.SetRunState(ctx, r1.ID, sched, fleet.RunRunning, "", t0)); ok {
		t.Error("running run moved from scheduled again")
	}
	if ok := must[bool](t)(db.SetRunState(ctx, r1.ID, []fleet.RunState{fleet.RunScheduled, fleet.RunRunning}, fleet.RunFailed, "boom", t0.Add(2*time.Second))); !ok {
		t.Error("running → failed refused")
	}
	got := must[fleet.Run](t)(db.Run(ctx, r1.ID))
	if got.State != fleet.RunFailed || got.Error != "boom" || !got.Started.Equal(t0.Add(time.Second)) || !got.Finished.Equal(t0.Add(2*time.Second)) {
		t.Errorf("after running and failing: %+v", got)
	}
	_, err := db.SetRunState(ctx, "nope", sched, fleet.RunRunning, "", t0)
	wantErr(t, err, fleet.ErrNotFound)
	// r1 failed: its slot is free again.
	r := must[fleet.Run](t)(db.Book(ctx, run("a", "x", t0, 5*time.Minute, true, ""), t0.Add(time.Hour)))
	if !r.Start.Equal(t0) {
		t.Errorf("booked at %v over a failed run, want %v", r.Start, t0)
	}
	// Missing: the scheduled runs end at +1m (d→e), +3m (a→c), +5m (r)
	// and +15m (r2).
	if n := must[int](t)(db.MissRuns(ctx, t0.Add(time.Minute))); n != 0 {
		t.Errorf("missed at d→e's end: %d, want 0 (ended before now only)", n)
	}
	if n := must[int](t)(db.MissRuns(ctx, t0.Add(16*time.Minute))); n != 4 {
		t.Errorf("missed %d, want 4", n)
	}
	if got := must[fleet.Run](t)(db.Run(ctx, r2.ID)); got.State != fleet.RunMissed {
		t.Errorf("r2 %s, want missed", got.State)
	}
}

func testRunFilters(t *testing.T, db *DB, r1, r2, r3 fleet.Run) {
	ids := func(f fleet.RunFilter) []string {
		var out []string
		for _, r := range must[[]fleet.Run](t)(db.Runs(ctx, f)) {
			out = append(out, r.ID)
		}
		return out
	}
	all := ids(fleet.RunFilter{})
	if len(all) != 5 {
		t.Fatalf("%d runs, want 5", len(all))
	}
	for _, c := range []struct {
		name string
		f    fleet.RunFilter
		want []string
	}{
		{"agent c, newest first", fleet.RunFilter{Agent: "c"}, []string{r2.ID, r3.ID}},
		{"schedule", fleet.RunFilter{Schedule: "s1"}, []string{r3.ID, r1.ID}},
		{"states", fleet.RunFilter{States: []fleet.RunState{fleet.RunFailed, fleet.RunCancelled}}, []string{r1.ID}},
		{"from", fleet.RunFilter{Agent: "b", From: t0.Add(time.Minute)}, []string{r2.ID}},
		{"to", fleet.RunFilter{Agent: "b", To: t0.Add(10 * time.Minute)}, []string{r1.ID}},
		{"limit", fleet.RunFilter{Agent: "a", Limit: 1}, []string{r3.ID}},
	} {
		if got := ids(c.f); len(got) != len(c.want) || len(got) > 0 && (got[0] != c.want[0] || got[len(got)-1] != c.want[len(c.want)-1]) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
