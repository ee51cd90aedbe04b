package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/pressly/goose/v3"
)

// Migration 5 moves each result's figures out of the JSON text of
// column figures into columns of their own, one a figure, named as its
// JSON key was. It is Go, not SQL, for two reasons. Reading JSON in SQL
// is json_extract on SQLite and ->> on PostgreSQL (after a cast to
// json): no one statement serves both. And encoding/json reads each
// row's text exactly as the store read it until now, so every figure
// comes out the same to the last bit on both backends, where each
// database's own text-to-number conversion would be another's.
//
// What it does is frozen here, with its own list of columns: a later
// change to fleet.Figures (and figureCols) comes with a migration of its
// own and must not change what this one does to a database at version 4.

// migration5Version is migration 5's version: the next after the SQL
// files 00001 to 00004.
const migration5Version = 5

// figuresV5 are the columns migration 5 makes, in fleet.Figures' order
// as of version 5 (which is the order of the JSON keys it wrote), each
// with the value an omitted key stood for.
var figuresV5 = []struct {
	col  string
	zero any
}{
	{"throughput_bps", 0.0}, {"ideal_bps", 0.0}, {"rtt_ms", 0.0}, {"rtt_loaded_ms", 0.0}, {"loss_pct", 0.0},
	{"buffer_delay_pct", 0.0}, {"verdict", ""}, {"partial", false}, {"implausible", ""}, {"down_throughput_bps", 0.0},
	{"down_ideal_bps", 0.0}, {"down_rtt_loaded_ms", 0.0}, {"down_loss_pct", 0.0}, {"down_buffer_delay_pct", 0.0},
}

// migrationPage is how many results a migration reads at once: the
// rows of one page are read, then updated (a PostgreSQL connection
// cannot do both at once).
const migrationPage = 1000

// goMigrations are the migrations written in Go, beside the SQL files.
func goMigrations() []*goose.Migration {
	return []*goose.Migration{
		goose.NewGoMigration(migration5Version, &goose.GoFunc{RunTx: figuresToColumns}, &goose.GoFunc{RunTx: figuresToJSON}),
	}
}

// columnType is the SQL type of a figure's column, portable between
// SQLite and PostgreSQL (DOUBLE PRECISION: SQLite's REAL), by its zero.
func columnType(zero any) string {
	switch zero.(type) {
	case float64:
		return "DOUBLE PRECISION NOT NULL DEFAULT 0"
	case bool:
		return "BOOLEAN NOT NULL DEFAULT FALSE"
	}
	return "TEXT NOT NULL DEFAULT ''"
}

// figuresToColumns is migration 5's up: add the columns, fill them from
// each row's JSON, drop the JSON.
func figuresToColumns(ctx context.Context, tx *sql.Tx) error {
	sets := make([]string, len(figuresV5))
	for i, c := range figuresV5 {
		if _, err := tx.ExecContext(ctx, `ALTER TABLE results ADD COLUMN `+c.col+` `+columnType(c.zero)); err != nil {
			return err
		}
		sets[i] = fmt.Sprintf("%s = $%d", c.col, i+2)
	}
	update, err := tx.PrepareContext(ctx, `UPDATE results SET `+strings.Join(sets, ", ")+` WHERE run_id = $1`)
	if err != nil {
		return err
	}
	defer update.Close()
	err = eachResult(ctx, tx, "figures", []any{""}, func(runID string, text []any) error {
		vs, err := figuresFromJSON(text[0].(string))
		if err != nil {
			return fmt.Errorf("result of run %q: its figures %q are not JSON (mend or delete the row, then open again): %w", runID, text[0], err)
		}
		if figuresJSON(vs) == "{}" {
			return nil // none: the columns' defaults
		}
		_, err = update.ExecContext(ctx, append([]any{runID}, vs...)...)
		return err
	})
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `ALTER TABLE results DROP COLUMN figures`)
	return err
}

// figuresFromJSON are the column values of figures' JSON text, in
// figuresV5's order: its keys' values (numbers as encoding/json reads
// them into float64), the zero of each key absent or null. "" (figures
// that were not stored) reads as none.
func figuresFromJSON(text string) ([]any, error) {
	var m map[string]any
	if text != "" {
		if err := json.Unmarshal([]byte(text), &m); err != nil {
			return nil, err
		}
	}
	vs := make([]any, len(figuresV5))
	for i, c := range figuresV5 {
		vs[i] = c.zero
		v, ok := m[c.col]
		if !ok || v == nil {
			continue
		}
		if reflect.TypeOf(v) != reflect.TypeOf(c.zero) {
			return nil, fmt.Errorf("%s is %v, not a %T", c.col, v, c.zero)
		}
		vs[i] = v
	}
	return vs, nil
}

// figuresToJSON is migration 5's down: the JSON column again, written
// as the store wrote it (encoding/json's compact text of fleet.Figures:
// its keys in order, zeros omitted), and the figures' columns dropped.
func figuresToJSON(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `ALTER TABLE results ADD COLUMN figures TEXT NOT NULL DEFAULT ''`); err != nil {
		return err
	}
	update, err := tx.PrepareContext(ctx, `UPDATE results SET figures = $2 WHERE run_id = $1`)
	if err != nil {
		return err
	}
	defer update.Close()
	cols, zeros := make([]string, len(figuresV5)), make([]any, len(figuresV5))
	for i, c := range figuresV5 {
		cols[i], zeros[i] = c.col, c.zero
	}
	err = eachResult(ctx, tx, strings.Join(cols, ", "), zeros, func(runID string, vs []any) error {
		_, err := update.ExecContext(ctx, runID, figuresJSON(vs))
		return err
	})
	if err != nil {
		return err
	}
	for _, c := range cols {
		if _, err := tx.ExecContext(ctx, `ALTER TABLE results DROP COLUMN `+c); err != nil {
			return err
		}
	}
	return nil
}

// figuresJSON is the JSON text of figures' column values vs (in
// figuresV5's order) as encoding/json wrote fleet.Figures: each key
// whose value is not its zero, in order.
func figuresJSON(vs []any) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, c := range figuresV5 {
		if vs[i] == c.zero {
			continue
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		v, _ := json.Marshal(vs[i]) // a float64 read back is finite, as it was stored
		fmt.Fprintf(&b, "%q:%s", c.col, v)
	}
	b.WriteByte('}')
	return b.String()
}

// eachResult calls fn with the run ID and the columns cols of every
// result, by run ID, read a page (migrationPage) at a time; zeros are
// the columns' zero values, of the types they are read as.
func eachResult(ctx context.Context, tx *sql.Tx, cols string, zeros []any, fn func(runID string, vs []any) error) error {
	after := ""
	for {
		ids, rows, err := resultsPage(ctx, tx, cols, zeros, after)
		if err != nil {
			return err
		}
		for i, id := range ids {
			if err := fn(id, rows[i]); err != nil {
				return err
			}
		}
		if len(ids) < migrationPage {
			return nil
		}
		after = ids[len(ids)-1]
	}
}

// resultsPage reads the run IDs and columns cols of the results after
// run ID after, at most migrationPage of them.
func resultsPage(ctx context.Context, tx *sql.Tx, cols string, zeros []any, after string) (ids []string, vals [][]any, err error) {
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(`SELECT run_id, %s FROM results WHERE run_id > $1 ORDER BY run_id LIMIT %d`,
		cols, migrationPage), after)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		dest := []any{&id}
		for _, z := range zeros {
			dest = append(dest, reflect.New(reflect.TypeOf(z)).Interface())
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, nil, err
		}
		vs := make([]any, len(zeros))
		for i, d := range dest[1:] {
			vs[i] = reflect.ValueOf(d).Elem().Interface()
		}
		ids, vals = append(ids, id), append(vals, vs)
	}
	return ids, vals, rows.Err()
}
