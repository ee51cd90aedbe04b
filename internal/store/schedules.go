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
	from, _ := json.Marshal(s.From)
	to, _ := json.Marshal(s.To)
	_, err := d.w.ExecContext(ctx, `INSERT INTO schedules (id, name, kind, config, from_sel, to_sel, both_ways, repeat,
		start, slip_ns, enabled, created, next_due) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		s.ID, s.Name, s.Test.Kind, string(s.Test.Config), string(from), string(to), s.Both, s.Repeat,
		ms(s.Start), int64(s.Slip), s.Enabled, ms(s.Created), ms(s.NextDue))
	if err != nil {
		return fleet.Schedule{}, fmt.Errorf("store: creating schedule %q: %w", s.Name, err)
	}
	return d.schedule(ctx, d.w, s.ID)
}

const scheduleCols = `id, name, kind, config, from_sel, to_sel, both_ways, repeat, start, slip_ns, enabled, created, next_due`

func scanSchedule(row interface{ Scan(...any) error }) (fleet.Schedule, error) {
	var (
		s                      fleet.Schedule
		config, from, to       string
		start, created, due, n int64
	)
	err := row.Scan(&s.ID, &s.Name, &s.Test.Kind, &config, &from, &to, &s.Both, &s.Repeat, &start, &n, &s.Enabled, &created, &due)
	if err != nil {
		return s, err
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
