package store

import (
	"context"
	"fmt"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

var _ fleet.Advancer = (*DB)(nil)

// AdvanceSchedule moves a schedule's NextDue from from to next (and sets
// Enabled) only when it is still from: a compare and set in one UPDATE,
// atomic on both backends. False when another moved it first;
// ErrNotFound when there is no such schedule.
func (d *DB) AdvanceSchedule(ctx context.Context, id string, from, next time.Time, enabled bool) (bool, error) {
	n, err := affected(d.w.ExecContext(ctx, `UPDATE schedules SET next_due = $3, enabled = $4 WHERE id = $1 AND next_due = $2`,
		id, ms(from), ms(next), enabled))
	if err != nil {
		return false, fmt.Errorf("store: schedule %q advance: %w", id, err)
	}
	if n == 0 {
		if _, err := d.Schedule(ctx, id); err != nil {
			return false, err
		}
	}
	return n == 1, nil
}
