package check

import (
	"context"
	"fmt"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// maxSwaps bounds Update's attempts against schedulers that move the
// schedule on meanwhile (one per occurrence claimed: a few at most).
const maxSwaps = 5

// Update stores in as the new version of schedule in.ID, prepared by
// ScheduleUpdate from the schedule as stored: by compare and set on
// NextDue (SwapSchedule), so that an occurrence a scheduler claims
// between the read and the write is not undone (the update is prepared
// again from the schedule as it is then). Refusals are
// *fleet.FieldError; an absent schedule fleet.ErrNotFound.
func Update(ctx context.Context, st fleet.Store, in fleet.Schedule, now time.Time) (fleet.Schedule, error) {
	for range maxSwaps {
		old, err := st.Schedule(ctx, in.ID)
		if err != nil {
			return fleet.Schedule{}, err
		}
		s := in
		if err := ScheduleUpdate(&s, old, now); err != nil {
			return fleet.Schedule{}, err
		}
		out, ok, err := st.SwapSchedule(ctx, s, old.NextDue)
		if err != nil || ok {
			return out, err
		}
	}
	return fleet.Schedule{}, fmt.Errorf("schedule %q moved on %d times while being updated: %w", in.ID, maxSwaps, fleet.ErrConflict)
}
