package store

import (
	"sync"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// TestAdvanceSchedule: the compare and set moves NextDue only from the
// value given; of eight racing claims of one occurrence exactly one
// takes it; an unknown schedule is ErrNotFound.
func TestAdvanceSchedule(t *testing.T) {
	each(t, func(t *testing.T, db *DB) {
		due := t0.Add(time.Minute)
		s := must[fleet.Schedule](t)(db.CreateSchedule(ctx, fleet.Schedule{Name: "s", Test: fleet.Test{Kind: "rtt"},
			Enabled: true, Created: t0, NextDue: due}))
		var wg sync.WaitGroup
		var mu sync.Mutex
		won := 0
		for range 8 {
			wg.Go(func() {
				ok, err := db.AdvanceSchedule(ctx, s.ID, due, due.Add(time.Hour), true)
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					won++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if won != 1 {
			t.Fatalf("%d claims of one occurrence took it, want 1", won)
		}
		if ok := must[bool](t)(db.AdvanceSchedule(ctx, s.ID, due, due.Add(2*time.Hour), true)); ok {
			t.Error("a claim from a NextDue no longer stored took it")
		}
		ok := must[bool](t)(db.AdvanceSchedule(ctx, s.ID, due.Add(time.Hour), due.Add(2*time.Hour), false))
		got := must[fleet.Schedule](t)(db.Schedule(ctx, s.ID))
		if !ok || !got.NextDue.Equal(due.Add(2*time.Hour)) || got.Enabled {
			t.Errorf("after the last claim: %v, next due %v, enabled %v", ok, got.NextDue, got.Enabled)
		}
		_, err := db.AdvanceSchedule(ctx, "nope", due, due, true)
		wantErr(t, err, fleet.ErrNotFound)
	})
}
