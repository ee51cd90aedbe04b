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

// migrationPage is how many results a migration reads at once: a
// page is read, then updated (a PostgreSQL connection cannot do both
// at once).
const migrationPage = 500

// setBatch is how many results one statement updates, prepared once.
// Of a year of ten pairs' results (87,600, 2 kB documents), one a
// statement took 20 s on PostgreSQL, 50 take 9 s; SQLite takes 12 s
// either way (but a statement of a page, 7,500 parameters, prepared
// anew each time, took it 90 s: its parser and its binding look each
// $N up by name in a list of all the statement's).
const setBatch = 50

// goMigrations are the migrations written in Go, beside the SQL files.
func goMigrations() []*goose.Migration {
	return []*goose.Migration{
		goose.NewGoMigration(migration5Version, &goose.GoFunc{RunTx: figuresToColumns}, &goose.GoFunc{RunTx: figuresToJSON}),
	}
}

// sqlType is the SQL type of a column of values of zero's type and its
// default, zero, portable between SQLite and PostgreSQL (DOUBLE
// PRECISION: SQLite's REAL).
func sqlType(zero any) (typ, def string) {
	switch zero.(type) {
	case float64:
		return "DOUBLE PRECISION", "0"
	case bool:
		return "BOOLEAN", "FALSE"
	}
	return "TEXT", "''"
}

// figuresV5Cols are figuresV5's columns and their zeros.
func figuresV5Cols() (cols []string, zeros []any) {
	for _, c := range figuresV5 {
		cols, zeros = append(cols, c.col), append(zeros, c.zero)
	}
	return cols, zeros
}

// figuresToColumns is migration 5's up: add the columns, fill them from
// each row's JSON (but for rows of no figures, which the defaults
// fill), drop the JSON.
func figuresToColumns(ctx context.Context, tx *sql.Tx) error {
	cols, zeros := figuresV5Cols()
	for i, c := range cols {
		typ, def := sqlType(zeros[i])
		if _, err := tx.ExecContext(ctx, `ALTER TABLE results ADD COLUMN `+c+` `+typ+` NOT NULL DEFAULT `+def); err != nil {
			return err
		}
	}
	set, err := newSetter(ctx, tx, cols, zeros)
	if err != nil {
		return err
	}
	defer set.full.Close()
	err = eachPage(ctx, tx, "figures", []any{""}, func(ids []string, texts [][]any) error {
		var some []string
		var rows [][]any
		for i, id := range ids {
			vs, err := figuresFromJSON(texts[i][0].(string))
			if err != nil {
				return fmt.Errorf("result of run %q: its figures %q are not JSON (mend or delete the row, then open again): %w", id, texts[i][0], err)
			}
			if figuresJSON(vs) != "{}" {
				some, rows = append(some, id), append(rows, vs)
			}
		}
		return set.set(ctx, some, rows)
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
	cols, zeros := figuresV5Cols()
	set, err := newSetter(ctx, tx, []string{"figures"}, []any{""})
	if err != nil {
		return err
	}
	defer set.full.Close()
	err = eachPage(ctx, tx, strings.Join(cols, ", "), zeros, func(ids []string, rows [][]any) error {
		texts := make([][]any, len(rows))
		for i, vs := range rows {
			texts[i] = []any{figuresJSON(vs)}
		}
		return set.set(ctx, ids, texts)
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

// eachPage calls fn with the run IDs and the columns cols of every
// result, by run ID, a page (migrationPage) at a time; zeros are the
// columns' zero values, of the types they are read as.
func eachPage(ctx context.Context, tx *sql.Tx, cols string, zeros []any, fn func(ids []string, rows [][]any) error) error {
	after := ""
	for {
		ids, rows, err := resultsPage(ctx, tx, cols, zeros, after)
		if err != nil {
			return err
		}
		if err := fn(ids, rows); err != nil {
			return err
		}
		if len(ids) < migrationPage {
			return nil
		}
		after = ids[len(ids)-1]
	}
}

// setter sets columns of results, setBatch rows a statement: a
// statement of that many, prepared once, and one made for the rest.
type setter struct {
	tx    *sql.Tx
	cols  []string // the columns set
	zeros []any    // their zeros, of the types of their values
	full  *sql.Stmt
}

// newSetter prepares tx's setter of the columns cols, of zeros' types.
func newSetter(ctx context.Context, tx *sql.Tx, cols []string, zeros []any) (*setter, error) {
	s := &setter{tx: tx, cols: cols, zeros: zeros}
	var err error
	s.full, err = tx.PrepareContext(ctx, s.query(setBatch))
	return s, err
}

// query is the statement that sets the columns of n results: its
// parameters are each result's run ID and values, in turn.
func (s *setter) query(n int) string {
	tuples, sets := make([]string, n), make([]string, len(s.cols))
	for r := range tuples {
		ps := []string{fmt.Sprintf("CAST($%d AS TEXT)", r*(len(s.cols)+1)+1)}
		for i, z := range s.zeros {
			typ, _ := sqlType(z)
			ps = append(ps, fmt.Sprintf("CAST($%d AS %s)", r*(len(s.cols)+1)+i+2, typ))
		}
		tuples[r] = "(" + strings.Join(ps, ", ") + ")"
	}
	for i, c := range s.cols {
		sets[i] = c + " = v." + c
	}
	return `WITH v (run_id, ` + strings.Join(s.cols, ", ") + `) AS (VALUES ` + strings.Join(tuples, ", ") + `)
		UPDATE results SET ` + strings.Join(sets, ", ") + ` FROM v WHERE results.run_id = v.run_id`
}

// set sets the columns of the results ids to rows' values.
func (s *setter) set(ctx context.Context, ids []string, rows [][]any) error {
	for len(ids) > 0 {
		n := min(len(ids), setBatch)
		var args []any
		for r, id := range ids[:n] {
			args = append(append(args, id), rows[r]...)
		}
		var err error
		if n == setBatch {
			_, err = s.full.ExecContext(ctx, args...)
		} else {
			_, err = s.tx.ExecContext(ctx, s.query(n), args...)
		}
		if err != nil {
			return err
		}
		ids, rows = ids[n:], rows[n:]
	}
	return nil
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
