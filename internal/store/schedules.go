package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// CreateSchedule stores s with a new ID. A zero NextDue is due at once.
func (d *DB) CreateSchedule(ctx context.Context, s fleet.Schedule) (fleet.Schedule, error) {
	s.ID = newID()
	from, to, th := scheduleJSON(s)
	_, err := d.w.ExecContext(ctx, `INSERT INTO schedules (id, name, kind, config, from_sel, to_sel, both_ways, repeat,
		start, slip_ns, enabled, created, next_due, thresholds) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		s.ID, s.Name, s.Test.Kind, string(s.Test.Config), from, to, s.Both, s.Repeat,
		ms(s.Start), int64(s.Slip), s.Enabled, ms(s.Created), ms(s.NextDue), th)
	if err != nil {
		return fleet.Schedule{}, fmt.Errorf("store: creating schedule %q: %w", s.Name, err)
	}
	return d.schedule(ctx, d.w, s.ID)
}

// scheduleJSON is s's selectors and thresholds as stored: JSON, and
// "" for no thresholds.
func scheduleJSON(s fleet.Schedule) (from, to, thresholds string) {
	f, _ := json.Marshal(s.From)
	t, _ := json.Marshal(s.To)
	if s.Thresholds != nil {
		th, _ := json.Marshal(s.Thresholds)
		thresholds = string(th)
	}
	return string(f), string(t), thresholds
}

// UpdateSchedule replaces all of the schedule s.ID but its ID and
// Created.
func (d *DB) UpdateSchedule(ctx context.Context, s fleet.Schedule) (fleet.Schedule, error) {
	out, _, err := d.updateSchedule(ctx, s, nil)
	return out, err
}

// SwapSchedule is UpdateSchedule while the schedule's NextDue is still
// prev, in one UPDATE (compare and set); false when it moved.
func (d *DB) SwapSchedule(ctx context.Context, s fleet.Schedule, prev time.Time) (fleet.Schedule, bool, error) {
	return d.updateSchedule(ctx, s, &prev)
}

func (d *DB) updateSchedule(ctx context.Context, s fleet.Schedule, prev *time.Time) (fleet.Schedule, bool, error) {
	from, to, th := scheduleJSON(s)
	q, args := `UPDATE schedules SET name = $2, kind = $3, config = $4, from_sel = $5, to_sel = $6, both_ways = $7,
		repeat = $8, start = $9, slip_ns = $10, enabled = $11, next_due = $12, thresholds = $13 WHERE id = $1`,
		[]any{s.ID, s.Name, s.Test.Kind, string(s.Test.Config), from, to, s.Both, s.Repeat, ms(s.Start), int64(s.Slip), s.Enabled,
			ms(s.NextDue), th}
	if prev != nil {
		q, args = q+` AND next_due = $14`, append(args, ms(*prev))
	}
	n, err := affected(d.w.ExecContext(ctx, q, args...))
	if err != nil {
		return fleet.Schedule{}, false, fmt.Errorf("store: updating schedule %q: %w", s.ID, err)
	}
	out, err := d.schedule(ctx, d.w, s.ID) // ErrNotFound when there is none
	if err != nil {
		return fleet.Schedule{}, false, fmt.Errorf("store: updating: %w", err)
	}
	return out, n == 1, nil
}

const scheduleCols = `id, name, kind, config, from_sel, to_sel, both_ways, repeat, start, slip_ns, enabled, created, next_due,
	thresholds`

func scanSchedule(row interface{ Scan(...any) error }) (fleet.Schedule, error) {
	var (
		s                      fleet.Schedule
		config, from, to, th   string
		start, created, due, n int64
	)
	err := row.Scan(&s.ID, &s.Name, &s.Test.Kind, &config, &from, &to, &s.Both, &s.Repeat, &start, &n, &s.Enabled, &created, &due, &th)
	if err != nil {
		return s, err
	}
	if th != "" {
		s.Thresholds = new(fleet.Thresholds)
		if err := json.Unmarshal([]byte(th), s.Thresholds); err != nil {
			return s, fmt.Errorf("schedule %q thresholds: %w", s.ID, err)
		}
	}
	if config != "" {
		s.Test.Config = json.RawMessage(config)
	}
	s.Start, s.Slip, s.Created, s.NextDue = fromMS(start), time.Duration(n), fromMS(created), fromMS(due)
	return s, errors.Join(unmarshal(from, &s.From), unmarshal(to, &s.To))
}

// Schedule is the schedule of that ID.
func (d *DB) Schedule(ctx context.Context, id string) (fleet.Schedule, error) {
	return d.schedule(ctx, d.r, id)
}

func (d *DB) schedule(ctx context.Context, q *sql.DB, id string) (fleet.Schedule, error) {
	s, err := scanSchedule(q.QueryRowContext(ctx, `SELECT `+scheduleCols+` FROM schedules WHERE id = $1`, id))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fleet.Schedule{}, notFound("schedule", id)
	case err != nil:
		return fleet.Schedule{}, fmt.Errorf("store: schedule %q: %w", id, err)
	}
	return s, nil
}

// Schedules lists every schedule, oldest first.
func (d *DB) Schedules(ctx context.Context) ([]fleet.Schedule, error) {
	rows, err := d.r.QueryContext(ctx, `SELECT `+scheduleCols+` FROM schedules ORDER BY created, id`)
	if err != nil {
		return nil, fmt.Errorf("store: listing schedules: %w", err)
	}
	return collect(rows, scanSchedule)
}

// DeleteSchedule removes the schedule and cancels its scheduled runs
// (not those running: their agents are already at them).
func (d *DB) DeleteSchedule(ctx context.Context, id string, now time.Time) error {
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		n, err := affected(tx.ExecContext(ctx, `DELETE FROM schedules WHERE id = $1`, id))
		if err != nil {
			return err
		}
		if n == 0 {
			return notFound("schedule", id)
		}
		_, err = tx.ExecContext(ctx, `UPDATE runs SET state = $2, error = $3 WHERE schedule_id = $1 AND state = $4`,
			id, string(fleet.RunCancelled), "schedule deleted at "+fromMS(ms(now)).Format(time.RFC3339), string(fleet.RunScheduled))
		return err
	})
	if err != nil {
		return fmt.Errorf("store: deleting schedule: %w", err)
	}
	return nil
}

// DueSchedules are the enabled schedules whose NextDue is before until,
// most overdue first.
func (d *DB) DueSchedules(ctx context.Context, until time.Time) ([]fleet.Schedule, error) {
	rows, err := d.r.QueryContext(ctx, `SELECT `+scheduleCols+` FROM schedules WHERE enabled AND next_due < $1
		ORDER BY next_due, id`, ms(until))
	if err != nil {
		return nil, fmt.Errorf("store: due schedules: %w", err)
	}
	return collect(rows, scanSchedule)
}

// SetNextDue moves a schedule on, and enables or disables it.
func (d *DB) SetNextDue(ctx context.Context, id string, next time.Time, enabled bool) error {
	n, err := affected(d.w.ExecContext(ctx, `UPDATE schedules SET next_due = $2, enabled = $3 WHERE id = $1`, id, ms(next), enabled))
	switch {
	case err != nil:
		return fmt.Errorf("store: schedule %q next due: %w", id, err)
	case n == 0:
		return notFound("schedule", id)
	}
	return nil
}

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
