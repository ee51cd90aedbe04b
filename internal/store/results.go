package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// PutResult stores a run's result once: one INSERT ... ON CONFLICT DO
// NOTHING; only when the run already has one is it read back and
// compared. The same document again (compared as compact JSON) is
// (false, nil), a different one fleet.ErrConflict.
func (d *DB) PutResult(ctx context.Context, r fleet.Result) (bool, error) {
	var doc bytes.Buffer
	if err := json.Compact(&doc, r.Doc); err != nil {
		return false, fmt.Errorf("store: result of run %q: the document is not JSON: %w", r.RunID, err)
	}
	args := append([]any{r.RunID, r.ScheduleID, r.Source, r.Dest, r.Kind, ms(r.Received), string(r.Health), string(r.PreviousHealth),
		doc.String()}, figureValues(r.Figures)...)
	n, err := affected(d.w.ExecContext(ctx, `INSERT INTO results (run_id, schedule_id, source, dest, kind, received, health,
		previous_health, doc, `+figureCols+`) VALUES (`+placeholders(1, len(args))+`) ON CONFLICT (run_id) DO NOTHING`, args...))
	if err != nil {
		return false, fmt.Errorf("store: result of run %q: %w", r.RunID, err)
	}
	if n == 1 {
		return true, nil
	}
	var have string
	if err := d.w.QueryRowContext(ctx, `SELECT doc FROM results WHERE run_id = $1`, r.RunID).Scan(&have); err != nil {
		return false, fmt.Errorf("store: result of run %q: %w", r.RunID, err)
	}
	if have != doc.String() {
		return false, fmt.Errorf("store: result of run %q: a different document is stored: %w", r.RunID, fleet.ErrConflict)
	}
	return false, nil
}

// resultCols are a result's columns but the document, which is read
// only when asked (withDoc).
const resultCols = `run_id, schedule_id, source, dest, kind, received, health, previous_health, ` + figureCols

// resultSelect is the SELECT list of results (of table alias a, when
// not ""), with the document or without.
func resultSelect(alias string, withDoc bool) string {
	cols := resultCols
	if withDoc {
		cols += ", doc"
	}
	if alias == "" {
		return cols
	}
	return alias + "." + strings.ReplaceAll(cols, ", ", ", "+alias+".")
}

// scanResult scans the columns of resultSelect(_, withDoc).
func scanResult(withDoc bool) func(row interface{ Scan(...any) error }) (fleet.Result, error) {
	return func(row interface{ Scan(...any) error }) (fleet.Result, error) {
		var (
			r                 fleet.Result
			health, prev, doc string
			received          int64
		)
		dest := append([]any{&r.RunID, &r.ScheduleID, &r.Source, &r.Dest, &r.Kind, &received, &health, &prev}, figureFields(&r.Figures)...)
		if withDoc {
			dest = append(dest, &doc)
		}
		if err := row.Scan(dest...); err != nil {
			return r, err
		}
		r.Received, r.Health, r.PreviousHealth = fromMS(received), fleet.Health(health), fleet.Health(prev)
		if withDoc {
			r.Doc = json.RawMessage(doc)
		}
		return r, nil
	}
}

// Result is the result of that run.
func (d *DB) Result(ctx context.Context, runID string) (fleet.Result, error) {
	r, err := scanResult(true)(d.r.QueryRowContext(ctx, `SELECT `+resultSelect("", true)+` FROM results WHERE run_id = $1`, runID))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fleet.Result{}, notFound("result of run", runID)
	case err != nil:
		return fleet.Result{}, fmt.Errorf("store: result of run %q: %w", runID, err)
	}
	return r, nil
}

// Results lists results matching f, newest first. Source, dest, kind
// and a received range are served by the index results_latest, a
// schedule's by results_schedule.
func (d *DB) Results(ctx context.Context, f fleet.ResultFilter) ([]fleet.Result, error) {
	var w where
	for _, c := range []struct{ col, v string }{{"schedule_id", f.Schedule}, {"source", f.Source}, {"dest", f.Dest}, {"kind", f.Kind}} {
		if c.v != "" {
			w.add(c.col+" = $?", c.v)
		}
	}
	if !f.Since.IsZero() {
		w.add("received >= $?", ms(f.Since))
	}
	if !f.Until.IsZero() {
		w.add("received < $?", ms(f.Until))
	}
	q := `SELECT ` + resultSelect("", !f.NoDoc) + ` FROM results` + w.String() +
		fmt.Sprintf(` ORDER BY received DESC, run_id DESC LIMIT %d`, limit(f.Limit))
	rows, err := d.r.QueryContext(ctx, q, w.args...)
	if err != nil {
		return nil, fmt.Errorf("store: listing results: %w", err)
	}
	return collect(rows, scanResult(!f.NoDoc))
}

// Latest is the newest result of each (source, dest, kind), by source,
// dest and kind, of one schedule's results or, with schedule "", of all;
// without the document: the newest time of each group read from the
// index results_schedule or results_latest, then its row (of two
// received in one millisecond, the greater run ID).
func (d *DB) Latest(ctx context.Context, schedule string) ([]fleet.Result, error) {
	var (
		inner, outer string
		args         []any
	)
	if schedule != "" {
		inner, outer, args = ` WHERE schedule_id = $1`, ` WHERE r.schedule_id = $1`, []any{schedule}
	}
	rows, err := d.r.QueryContext(ctx, `SELECT `+resultSelect("r", false)+`
		FROM results r JOIN (SELECT source, dest, kind, MAX(received) AS received FROM results`+inner+`
		GROUP BY source, dest, kind) n
		ON r.source = n.source AND r.dest = n.dest AND r.kind = n.kind AND r.received = n.received`+outer+`
		ORDER BY r.source, r.dest, r.kind, r.run_id DESC`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: latest results: %w", err)
	}
	all, err := collect(rows, scanResult(false))
	if err != nil {
		return nil, fmt.Errorf("store: latest results: %w", err)
	}
	var out []fleet.Result
	for _, r := range all {
		if n := len(out); n > 0 && out[n-1].Source == r.Source && out[n-1].Dest == r.Dest && out[n-1].Kind == r.Kind {
			continue // a tie in received: the greater run ID came first
		}
		out = append(out, r)
	}
	return out, nil
}

// AddEvents appends a run's progress, skipping events already stored
// (same run and Seq), in one transaction.
func (d *DB) AddEvents(ctx context.Context, es []fleet.Event) error {
	if len(es) == 0 {
		return nil
	}
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		for _, e := range es {
			ev := string(e.Event)
			if ev == "" {
				ev = "null" // so that the event reads back as JSON
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO events (run_id, seq, time_ms, event) VALUES ($1, $2, $3, $4)
				ON CONFLICT (run_id, seq) DO NOTHING`, e.RunID, e.Seq, ms(e.Time), ev); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: adding %d events: %w", len(es), err)
	}
	return nil
}

// Events are the run's events after afterSeq, in order, at most limit
// of them (limit > 0).
func (d *DB) Events(ctx context.Context, runID string, afterSeq, limit int) ([]fleet.Event, error) {
	rows, err := d.r.QueryContext(ctx, `SELECT run_id, seq, time_ms, event FROM events WHERE run_id = $1 AND seq > $2
		ORDER BY seq LIMIT $3`, runID, afterSeq, limit)
	if err != nil {
		return nil, fmt.Errorf("store: events of run %q: %w", runID, err)
	}
	return collect(rows, func(row interface{ Scan(...any) error }) (fleet.Event, error) {
		var (
			e  fleet.Event
			t  int64
			ev string
		)
		err := row.Scan(&e.RunID, &e.Seq, &t, &ev)
		e.Time, e.Event = fromMS(t), json.RawMessage(ev)
		return e, err
	})
}

// EventsSize is how many events the run has stored and their length
// (characters of their JSON: the bytes of ASCII, which events are but
// for the names in them).
func (d *DB) EventsSize(ctx context.Context, runID string) (n int, chars int64, err error) {
	err = d.r.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(LENGTH(event)), 0) FROM events WHERE run_id = $1`, runID).Scan(&n, &chars)
	if err != nil {
		return 0, 0, fmt.Errorf("store: size of run %q's events: %w", runID, err)
	}
	return n, chars, nil
}

// Lease takes or renews the named lease for holder until now+ttl, in one
// compare-and-set statement: insert it, or take it over when it is
// holder's or expired (expires <= now); false when another holds it.
func (d *DB) Lease(ctx context.Context, name, holder string, ttl time.Duration, now time.Time) (bool, error) {
	n, err := affected(d.w.ExecContext(ctx, `INSERT INTO leases (name, holder, expires) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires = excluded.expires
		WHERE leases.holder = excluded.holder OR leases.expires <= $4`,
		name, holder, ms(now.Add(ttl)), ms(now)))
	if err != nil {
		return false, fmt.Errorf("store: lease %q for %q: %w", name, holder, err)
	}
	return n == 1, nil
}
