package store

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/schedule"
)

// Book stores r in the earliest slot of its length at or after r.Start,
// starting before horizon, in which (when r is exclusive) no scheduled
// or running exclusive run of its source or destination overlaps. A
// non-exclusive run is stored at r.Start. Book assigns the ID, a key
// when r has none, and state scheduled when r has none.
//
// Atomicity: on SQLite the immediate transaction holds the database's
// one write lock from the read of the busy slots to the insert; on
// PostgreSQL the transaction first takes advisory transaction locks on
// the two agents, in a fixed order (so never deadlocking), and reads the
// busy slots only then, in a statement whose snapshot (read committed)
// includes every run booked by the locks' previous holders.
func (d *DB) Book(ctx context.Context, r fleet.Run, horizon time.Time) (fleet.Run, error) {
	length := time.Duration(ms(r.End)-ms(r.Start)) * time.Millisecond
	if length <= 0 {
		return fleet.Run{}, fmt.Errorf("store: booking %s→%s: the slot [%v, %v) is empty", r.Source, r.Dest, r.Start, r.End)
	}
	r.ID, r.Start = newID(), fromMS(ms(r.Start))
	r.Created, r.Started, r.Finished = fromMS(ms(r.Created)), fromMS(ms(r.Started)), fromMS(ms(r.Finished))
	r.Occurrence = fromMS(ms(r.Occurrence))
	if r.State == "" {
		r.State = fleet.RunScheduled
	}
	if len(r.Key) == 0 {
		r.Key = random(32)
	}
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		r.End = r.Start.Add(length)
		if !r.Exclusive {
			return insertRun(ctx, tx, r)
		}
		start, err := d.slotFor(ctx, tx, r, length, horizon)
		if err != nil {
			return err
		}
		r.Start, r.End = start, start.Add(length)
		return insertRun(ctx, tx, r)
	})
	if err != nil {
		return fleet.Run{}, fmt.Errorf("store: booking %s→%s at %v for %v: %w", r.Source, r.Dest, r.Start.Format(time.RFC3339), length, err)
	}
	return r, nil
}

// slotFor locks r's agents (PostgreSQL) and finds its slot among their
// busy ones.
func (d *DB) slotFor(ctx context.Context, tx *sql.Tx, r fleet.Run, length time.Duration, horizon time.Time) (time.Time, error) {
	if d.pg {
		// One round trip: the target list is evaluated left to right.
		ks := agentLocks(r.Source, r.Dest)
		q := `SELECT pg_advisory_xact_lock($1)`
		if len(ks) == 2 {
			q = `SELECT pg_advisory_xact_lock($1), pg_advisory_xact_lock($2)`
		}
		if _, err := tx.ExecContext(ctx, q, ks...); err != nil {
			return time.Time{}, err
		}
	}
	busy, err := busySlots(ctx, tx, r.Source, r.Dest, r.Start, horizon.Add(length))
	if err != nil {
		return time.Time{}, err
	}
	slot, ok := schedule.FirstFree(busy, r.Start, length, horizon)
	if !ok {
		return time.Time{}, fleet.ErrNoSlot
	}
	return slot.Start, nil
}

// agentLocks are the advisory lock keys of agents a and b, ascending
// and distinct.
func agentLocks(a, b string) []any {
	key := func(name string) int64 {
		h := fnv.New64a()
		h.Write([]byte("fullpipe/store/agent/" + name))
		return int64(h.Sum64())
	}
	ka, kb := key(a), key(b)
	switch {
	case ka == kb:
		return []any{ka}
	case ka > kb:
		ka, kb = kb, ka
	}
	return []any{ka, kb}
}

// busySlots are the exclusive scheduled or running runs of agents a or
// b that overlap [from, to) (a run of both, twice).
func busySlots(ctx context.Context, tx *sql.Tx, a, b string, from, to time.Time) ([]schedule.Interval, error) {
	rows, err := tx.QueryContext(ctx, liveRuns("start_ms, end_ms", "$1, $2", "$3", "$4", "$5", "$6", "TRUE"),
		a, b, ms(from), ms(to), string(fleet.RunScheduled), string(fleet.RunRunning))
	if err != nil {
		return nil, err
	}
	return collect(rows, func(row interface{ Scan(...any) error }) (schedule.Interval, error) {
		var s, e int64
		err := row.Scan(&s, &e)
		return schedule.Interval{Start: fromMS(s), End: fromMS(e)}, err
	})
}

// liveRuns is SQL selecting cols of the runs of the agents (a list of
// placeholders), as source or destination, in state sched or running,
// exclusive one of excl ("TRUE", or "FALSE, TRUE"), that overlap
// [from, to): a UNION ALL of one query per
// side and state, each one seek of the index runs_source_busy or
// runs_dest_busy, which SQLite (no statistics) would otherwise pass
// over for runs_source_start, a scan of the agent's history. A run of
// two of the agents comes twice.
func liveRuns(cols, agents, from, to, sched, running, excl string) string {
	var parts []string
	for _, side := range []string{"source", "dest"} {
		for _, state := range []string{sched, running} {
			parts = append(parts, fmt.Sprintf("SELECT %s FROM runs WHERE %s IN (%s) AND state = %s AND exclusive IN (%s) AND end_ms > %s AND start_ms < %s",
				cols, side, agents, state, excl, from, to))
		}
	}
	return strings.Join(parts, " UNION ALL ")
}

// insertRun inserts r; fleet.ErrBooked when r is of an occurrence whose
// run of r's pair is stored already (the unique index runs_occurrence:
// nothing is inserted).
func insertRun(ctx context.Context, tx *sql.Tx, r fleet.Run) error {
	n, err := affected(tx.ExecContext(ctx, `INSERT INTO runs (id, schedule_id, source, dest, kind, config, exclusive, start_ms, end_ms,
		state, error, created, started, finished, run_key, occurrence) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
		ON CONFLICT DO NOTHING`,
		r.ID, r.ScheduleID, r.Source, r.Dest, r.Test.Kind, string(r.Test.Config), r.Exclusive, ms(r.Start), ms(r.End),
		string(r.State), r.Error, ms(r.Created), ms(r.Started), ms(r.Finished), hex.EncodeToString(r.Key), ms(r.Occurrence)))
	if err == nil && n == 0 {
		return fleet.ErrBooked
	}
	return err
}

// errNoRun wraps sql.ErrNoRows as fleet.ErrNotFound.
func errNoRun(id string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("run", id)
	}
	return fmt.Errorf("store: run %q: %w", id, err)
}
