package store

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// TestYearHistory: a year of hourly results of 10 pairs (87,600 rows,
// as the web page's history reads), one pair's year read figure-only
// (NoDoc) with Since and Until. The query must be served by an index
// (the plan is checked, not only the clock, which a loaded machine
// makes noisy); the time is logged.
func TestYearHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("inserts 87,600 rows; not with -short")
	}
	const pairs, hours = 10, 365 * 24
	each(t, func(t *testing.T, db *DB) {
		start := time.Now()
		fillHistory(t, db, pairs, hours)
		t.Logf("%s: inserted %d rows in %v", db.Dialect(), pairs*hours, time.Since(start).Round(time.Millisecond))

		f := fleet.ResultFilter{Source: "a3", Dest: "b3", Kind: "tcp", Since: t0, Until: t0.Add(hours * time.Hour), Limit: 10000, NoDoc: true}
		start = time.Now()
		rs := must[[]fleet.Result](t)(db.Results(ctx, f))
		took := time.Since(start)
		t.Logf("%s: one pair's year, figure-only: %d results in %v", db.Dialect(), len(rs), took.Round(time.Microsecond))
		if len(rs) != hours || rs[0].Doc != nil || rs[0].Figures.ThroughputBps == 0 || !rs[len(rs)-1].Received.Equal(t0) {
			t.Fatalf("%d results, first %+v; want %d, no doc, oldest at %v", len(rs), rs[0], hours, t0)
		}
		// Generous: the read is tens of milliseconds here; seconds mean a
		// table scan, or the documents read after all.
		if took > 5*time.Second {
			t.Errorf("a year of one pair took %v", took)
		}
		half := f
		half.Until = t0.Add(hours / 2 * time.Hour)
		if n := len(must[[]fleet.Result](t)(db.Results(ctx, half))); n != hours/2 {
			t.Errorf("half a year: %d results, want %d", n, hours/2)
		}
		plan := explain(t, db, `SELECT `+resultSelect("", false)+` FROM results WHERE source = $1 AND dest = $2 AND kind = $3
			AND received >= $4 AND received < $5 ORDER BY received DESC, run_id DESC LIMIT 10000`,
			"a3", "b3", "tcp", ms(f.Since), ms(f.Until))
		if !strings.Contains(plan, "results_latest") {
			t.Errorf("%s: the history query is not served by results_latest:\n%s", db.Dialect(), plan)
		}
		if strings.Contains(plan, "TEMP B-TREE") || strings.Contains(plan, "Sort") {
			t.Errorf("%s: the history query sorts its rows, not read in the index's order:\n%s", db.Dialect(), plan)
		}
		// The controller's question at each upload: the pair's previous
		// result of its schedule.
		prev := explain(t, db, `SELECT `+resultSelect("", false)+` FROM results WHERE schedule_id = $1 AND source = $2
			AND dest = $3 AND kind = $4 AND received < $5 ORDER BY received DESC, run_id DESC LIMIT 2`,
			"", "a3", "b3", "tcp", ms(f.Until))
		if !strings.Contains(prev, "results_schedule") && !strings.Contains(prev, "results_latest") {
			t.Errorf("%s: the previous result's query is served by no index:\n%s", db.Dialect(), prev)
		}
		start = time.Now()
		one := must[[]fleet.Result](t)(db.Results(ctx, fleet.ResultFilter{Source: "a3", Dest: "b3", Kind: "tcp", Until: f.Until, Limit: 2, NoDoc: true}))
		t.Logf("%s: the previous result: %d in %v", db.Dialect(), len(one), time.Since(start).Round(time.Microsecond))
	})
}

// fillHistory inserts hours hourly results of each of pairs pairs
// (a0→b0, ...) from t0, in batches of multi-row INSERTs, and analyses
// the table so that PostgreSQL plans with its statistics.
func fillHistory(t *testing.T, db *DB, pairs, hours int) {
	t.Helper()
	const batch = 50
	doc := `{"kind":"tcp","summary":{"throughput_bps":9.4e8},"pad":"` + strings.Repeat("x", 200) + `"}`
	check(t, db.inTx(ctx, func(tx *sql.Tx) error {
		for p := range pairs {
			for h0 := 0; h0 < hours; h0 += batch {
				var (
					vals []string
					args []any
				)
				for h := h0; h < min(h0+batch, hours); h++ {
					vals = append(vals, "("+placeholders(len(args)+1, 8)+")")
					args = append(args, fmt.Sprintf("p%d-h%d", p, h), fmt.Sprint("a", p), fmt.Sprint("b", p), "tcp",
						ms(t0.Add(time.Duration(h)*time.Hour)), 9.4e8, 0.25, doc)
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO results (run_id, source, dest, kind, received, throughput_bps, rtt_ms, doc) VALUES `+
					strings.Join(vals, ", "), args...); err != nil {
					return err
				}
			}
		}
		return nil
	}))
	if _, err := db.w.ExecContext(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
}

// explain is the database's plan of query.
func explain(t *testing.T, db *DB, query string, args ...any) string {
	t.Helper()
	prefix := "EXPLAIN QUERY PLAN "
	if db.pg {
		prefix = "EXPLAIN "
	}
	rows, err := db.r.QueryContext(ctx, prefix+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var b strings.Builder
	for rows.Next() {
		vs := make([]any, len(cols))
		ps := make([]any, len(cols))
		for i := range vs {
			ps[i] = &vs[i]
		}
		if err := rows.Scan(ps...); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(&b, vs...)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
