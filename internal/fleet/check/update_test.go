package check

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/store"
)

// claimingStore is a real store whose first reads of a schedule are
// each followed by a scheduler's claim of its next occurrence: the race
// Update must not lose.
type claimingStore struct {
	*store.DB
	claims int // left to make
}

func (c *claimingStore) Schedule(ctx context.Context, id string) (fleet.Schedule, error) {
	s, err := c.DB.Schedule(ctx, id)
	if err == nil && c.claims > 0 {
		c.claims--
		if ok, err := c.DB.AdvanceSchedule(ctx, id, s.NextDue, s.NextDue.Add(time.Hour), true); err != nil || !ok {
			return s, errors.Join(err, errors.New("claim failed"))
		}
	}
	return s, err
}

// TestUpdate: an update prepared while a scheduler claims an occurrence
// is prepared again, keeping the claim; a scheduler that claims every
// time makes it give up (conflict); an absent schedule is not found.
func TestUpdate(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "fleet.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := valid()
	if err := NewSchedule(&s, t0); err != nil {
		t.Fatal(err)
	}
	if s, err = db.CreateSchedule(ctx, s); err != nil {
		t.Fatal(err)
	}
	st := &claimingStore{DB: db, claims: 1}
	in := s
	in.Name = "renamed"
	got, err := Update(ctx, st, in, t0.Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "renamed" || !got.NextDue.Equal(t0.Add(time.Hour)) {
		t.Errorf("updated during a claim: %q next due %v; want renamed, next due %v (the claim kept)", got.Name, got.NextDue, t0.Add(time.Hour))
	}
	st.claims = maxSwaps
	if _, err := Update(ctx, st, in, t0); !errors.Is(err, fleet.ErrConflict) {
		t.Errorf("claimed at every attempt: %v, want a conflict", err)
	}
	in.ID = "nope"
	if _, err := Update(ctx, st, in, t0); !errors.Is(err, fleet.ErrNotFound) {
		t.Errorf("an absent schedule: %v, want not found", err)
	}
}
