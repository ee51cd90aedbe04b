package store

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// interval is a busy slot, [start, end).
type interval struct{ start, end time.Time }

// firstFree is the earliest start at or after notBefore, and before
// horizon, of a slot of length that overlaps none of busy (half-open
// intervals, in any order); false when there is none.
func firstFree(busy []interval, notBefore time.Time, length time.Duration, horizon time.Time) (time.Time, bool) {
	busy = slices.Clone(busy)
	slices.SortFunc(busy, func(a, b interval) int { return a.start.Compare(b.start) })
	t := notBefore
	for _, b := range busy {
		if !t.Add(length).After(b.start) {
			break // the gap before b fits; later ones start later still
		}
		if b.end.After(t) {
			t = b.end
		}
	}
	return t, t.Before(horizon)
}

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
		for _, k := range agentLocks(r.Source, r.Dest) {
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, k); err != nil {
				return time.Time{}, err
			}
		}
	}
	busy, err := busySlots(ctx, tx, r.Source, r.Dest, r.Start, horizon.Add(length))
	if err != nil {
		return time.Time{}, err
	}
	start, ok := firstFree(busy, r.Start, length, horizon)
	if !ok {
		return time.Time{}, fleet.ErrNoSlot
	}
	return start, nil
}

// agentLocks are the advisory lock keys of agents a and b, ascending
// and distinct.
func agentLocks(a, b string) []int64 {
	key := func(name string) int64 {
		h := fnv.New64a()
		h.Write([]byte("fullpipe/store/agent/" + name))
		return int64(h.Sum64())
	}
	ks := []int64{key(a), key(b)}
	slices.Sort(ks)
	return slices.Compact(ks)
}

// busySlots are the exclusive scheduled or running runs of agents a or
// b that overlap [from, to).
func busySlots(ctx context.Context, tx *sql.Tx, a, b string, from, to time.Time) ([]interval, error) {
	rows, err := tx.QueryContext(ctx, `SELECT start_ms, end_ms FROM runs
		WHERE (source = $1 OR dest = $1 OR source = $2 OR dest = $2)
		AND end_ms > $3 AND start_ms < $4 AND exclusive AND state IN ($5, $6)`,
		a, b, ms(from), ms(to), string(fleet.RunScheduled), string(fleet.RunRunning))
	if err != nil {
		return nil, err
	}
	return collect(rows, func(row interface{ Scan(...any) error }) (interval, error) {
		var s, e int64
		err := row.Scan(&s, &e)
		return interval{fromMS(s), fromMS(e)}, err
	})
}

func insertRun(ctx context.Context, tx *sql.Tx, r fleet.Run) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO runs (id, schedule_id, source, dest, kind, config, exclusive, start_ms, end_ms,
		state, error, created, started, finished, run_key) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		r.ID, r.ScheduleID, r.Source, r.Dest, r.Test.Kind, string(r.Test.Config), r.Exclusive, ms(r.Start), ms(r.End),
		string(r.State), r.Error, ms(r.Created), ms(r.Started), ms(r.Finished), hex.EncodeToString(r.Key))
	return err
}

// errNoRun wraps sql.ErrNoRows as fleet.ErrNotFound.
func errNoRun(id string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("run", id)
	}
	return fmt.Errorf("store: run %q: %w", id, err)
}
