package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
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
	figs, _ := json.Marshal(r.Figures)
	n, err := affected(d.w.ExecContext(ctx, `INSERT INTO results (run_id, source, dest, kind, received, figures, doc)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (run_id) DO NOTHING`,
		r.RunID, r.Source, r.Dest, r.Kind, ms(r.Received), string(figs), doc.String()))
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

const resultCols = `run_id, source, dest, kind, received, figures, doc`

func scanResult(row interface{ Scan(...any) error }) (fleet.Result, error) {
	var (
		r         fleet.Result
		figs, doc string
		received  int64
	)
	if err := row.Scan(&r.RunID, &r.Source, &r.Dest, &r.Kind, &received, &figs, &doc); err != nil {
		return r, err
	}
	r.Received, r.Doc = fromMS(received), json.RawMessage(doc)
	return r, unmarshal(figs, &r.Figures)
}

// Result is the result of that run.
func (d *DB) Result(ctx context.Context, runID string) (fleet.Result, error) {
	r, err := scanResult(d.r.QueryRowContext(ctx, `SELECT `+resultCols+` FROM results WHERE run_id = $1`, runID))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fleet.Result{}, notFound("result of run", runID)
	case err != nil:
		return fleet.Result{}, fmt.Errorf("store: result of run %q: %w", runID, err)
	}
	return r, nil
}

// Results lists results matching f, newest first.
func (d *DB) Results(ctx context.Context, f fleet.ResultFilter) ([]fleet.Result, error) {
	var w where
	if f.Source != "" {
		w.add("source = $?", f.Source)
	}
	if f.Dest != "" {
		w.add("dest = $?", f.Dest)
	}
	if f.Kind != "" {
		w.add("kind = $?", f.Kind)
	}
	if !f.Since.IsZero() {
		w.add("received >= $?", ms(f.Since))
	}
	q := `SELECT ` + resultCols + ` FROM results` + w.String() + fmt.Sprintf(` ORDER BY received DESC, run_id DESC LIMIT %d`, limit(f.Limit))
	rows, err := d.r.QueryContext(ctx, q, w.args...)
	if err != nil {
		return nil, fmt.Errorf("store: listing results: %w", err)
	}
	return collect(rows, scanResult)
}

// Latest is the newest result of each (source, dest, kind), by source,
// dest and kind: the newest time of each group read from the index
// results_latest, then its row (of two received in one millisecond, the
// greater run ID).
func (d *DB) Latest(ctx context.Context) ([]fleet.Result, error) {
	rows, err := d.r.QueryContext(ctx, `SELECT r.run_id, r.source, r.dest, r.kind, r.received, r.figures, r.doc
		FROM results r JOIN (SELECT source, dest, kind, MAX(received) AS received FROM results GROUP BY source, dest, kind) n
		ON r.source = n.source AND r.dest = n.dest AND r.kind = n.kind AND r.received = n.received
		ORDER BY r.source, r.dest, r.kind, r.run_id DESC`)
	if err != nil {
		return nil, fmt.Errorf("store: latest results: %w", err)
	}
	all, err := collect(rows, scanResult)
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

// Events are the run's events after afterSeq, in order.
func (d *DB) Events(ctx context.Context, runID string, afterSeq int) ([]fleet.Event, error) {
	rows, err := d.r.QueryContext(ctx, `SELECT run_id, seq, time_ms, event FROM events WHERE run_id = $1 AND seq > $2
		ORDER BY seq`, runID, afterSeq)
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
