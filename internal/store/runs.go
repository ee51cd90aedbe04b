package store

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

const runCols = `id, schedule_id, source, dest, kind, config, exclusive, start_ms, end_ms, state, error, created, started, finished, run_key, occurrence`

func scanRun(row interface{ Scan(...any) error }) (fleet.Run, error) {
	var (
		r                       fleet.Run
		config, state, key      string
		start, end, cr, st, fin int64
		occ                     int64
	)
	err := row.Scan(&r.ID, &r.ScheduleID, &r.Source, &r.Dest, &r.Test.Kind, &config, &r.Exclusive, &start, &end,
		&state, &r.Error, &cr, &st, &fin, &key, &occ)
	if err != nil {
		return r, err
	}
	if config != "" {
		r.Test.Config = json.RawMessage(config)
	}
	r.State, r.Start, r.End = fleet.RunState(state), fromMS(start), fromMS(end)
	r.Created, r.Started, r.Finished, r.Occurrence = fromMS(cr), fromMS(st), fromMS(fin), fromMS(occ)
	r.Key, err = hex.DecodeString(key)
	return r, err
}

// Run is the run of that ID, its key included.
func (d *DB) Run(ctx context.Context, id string) (fleet.Run, error) {
	r, err := scanRun(d.r.QueryRowContext(ctx, `SELECT `+runCols+` FROM runs WHERE id = $1`, id))
	if err != nil {
		return fleet.Run{}, errNoRun(id, err)
	}
	return r, nil
}

// Default and largest Limit of Runs and Results.
const (
	defaultLimit = 100
	maxLimit     = 10000
)

func limit(n int) int {
	switch {
	case n <= 0:
		return defaultLimit
	case n > maxLimit:
		return maxLimit
	}
	return n
}

// where builds a WHERE clause of AND-ed conditions, numbering the
// placeholders ("$?" in a condition) as it goes.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, args ...any) {
	for _, a := range args {
		w.args = append(w.args, a)
		cond = strings.Replace(cond, "$?", fmt.Sprintf("$%d", len(w.args)), 1)
	}
	w.conds = append(w.conds, cond)
}

func (w *where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// Runs lists runs matching f, newest slot first.
func (d *DB) Runs(ctx context.Context, f fleet.RunFilter) ([]fleet.Run, error) {
	var w where
	if f.Agent != "" {
		w.add("(source = $? OR dest = $?)", f.Agent, f.Agent)
	}
	if f.Schedule != "" {
		w.add("schedule_id = $?", f.Schedule)
	}
	if len(f.States) > 0 {
		args := make([]any, len(f.States))
		for i, s := range f.States {
			args[i] = string(s)
		}
		w.add("state IN ("+strings.TrimSuffix(strings.Repeat("$?, ", len(args)), ", ")+")", args...)
	}
	if !f.From.IsZero() {
		w.add("start_ms >= $?", ms(f.From))
	}
	if !f.To.IsZero() {
		w.add("start_ms < $?", ms(f.To))
	}
	q := `SELECT ` + runCols + ` FROM runs` + w.String() + fmt.Sprintf(` ORDER BY start_ms DESC, id DESC LIMIT %d`, limit(f.Limit))
	rows, err := d.r.QueryContext(ctx, q, w.args...)
	if err != nil {
		return nil, fmt.Errorf("store: listing runs: %w", err)
	}
	return collect(rows, scanRun)
}

// SetRunState moves the run from one of from to to, stamping Started
// (running) or Finished (finished, failed) with now and setting its
// error text; false when it was in none of from, fleet.ErrNotFound when
// there is no such run.
func (d *DB) SetRunState(ctx context.Context, id string, from []fleet.RunState, to fleet.RunState, errText string, now time.Time) (bool, error) {
	if len(from) == 0 {
		return false, nil
	}
	set, args := "state = $2, error = $3", []any{id, string(to), errText}
	switch to {
	case fleet.RunRunning:
		set, args = set+", started = $4", append(args, ms(now))
	case fleet.RunFinished, fleet.RunFailed:
		set, args = set+", finished = $4", append(args, ms(now))
	}
	first := len(args) + 1
	for _, s := range from {
		args = append(args, string(s))
	}
	q := `UPDATE runs SET ` + set + ` WHERE id = $1 AND state IN (` + placeholders(first, len(from)) + `)`
	n, err := affected(d.w.ExecContext(ctx, q, args...))
	if err != nil {
		return false, fmt.Errorf("store: run %q to %s: %w", id, to, err)
	}
	if n == 0 {
		if _, err := d.Run(ctx, id); err != nil {
			return false, err
		}
	}
	return n == 1, nil
}

// MissRuns marks missed the scheduled runs whose slot ended before now.
func (d *DB) MissRuns(ctx context.Context, now time.Time) (int, error) {
	n, err := affected(d.w.ExecContext(ctx, `UPDATE runs SET state = $1 WHERE state = $2 AND end_ms < $3`,
		string(fleet.RunMissed), string(fleet.RunScheduled), ms(now)))
	if err != nil {
		return 0, fmt.Errorf("store: missing runs: %w", err)
	}
	return int(n), nil
}

// Slots are the agent's scheduled and running runs (exclusive or not)
// that overlap [from, to), by start (a run from the agent to itself,
// which liveRuns finds twice, once).
func (d *DB) Slots(ctx context.Context, agent string, from, to time.Time) ([]fleet.Slot, error) {
	rows, err := d.r.QueryContext(ctx, liveRuns("id, start_ms, end_ms, exclusive", "$1", "$2", "$3", "$4", "$5", "FALSE, TRUE"),
		agent, ms(from), ms(to), string(fleet.RunScheduled), string(fleet.RunRunning))
	if err != nil {
		return nil, fmt.Errorf("store: slots of %q: %w", agent, err)
	}
	slots, err := collect(rows, func(row interface{ Scan(...any) error }) (fleet.Slot, error) {
		var (
			s    fleet.Slot
			a, b int64
		)
		err := row.Scan(&s.RunID, &a, &b, &s.Exclusive)
		s.Start, s.End = fromMS(a), fromMS(b)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: slots of %q: %w", agent, err)
	}
	slices.SortFunc(slots, func(a, b fleet.Slot) int {
		return cmp.Or(a.Start.Compare(b.Start), strings.Compare(a.RunID, b.RunID))
	})
	return slices.CompactFunc(slots, func(a, b fleet.Slot) bool { return a.RunID == b.RunID }), nil
}
