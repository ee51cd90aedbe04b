package store

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// knownMigrations is how many migrations this build knows: the SQL
// files and those in Go.
func knownMigrations() int {
	sqls, _ := fs.Glob(migrations, "migrations/*.sql")
	return len(sqls) + len(goMigrations())
}

// TestMigrateFigures: a database at version 4 whose results hold their
// figures as JSON text (as encoding/json wrote them, or "" for figures
// it could not write) migrates to the figures' columns and reads every
// figure back the same, to the bit; migrating down writes the same text
// again, and up again reads the same figures. 2,500 results: more than
// two of the migration's pages.
func TestMigrateFigures(t *testing.T) {
	want := oldFigures(2500)
	for _, b := range dsns {
		t.Run(b.name, func(t *testing.T) {
			dsn := b.dsn(t)
			texts := atVersion4(t, dsn, want)

			readBack(t, dsn, want)
			raw, p := rawProvider(t, dsn)
			if _, err := p.DownTo(ctx, 4); err != nil {
				t.Fatal(err)
			}
			rows, err := raw.QueryContext(ctx, `SELECT run_id, figures FROM results`)
			check(t, err)
			got := map[string]string{}
			for rows.Next() {
				var id, text string
				check(t, rows.Scan(&id, &text))
				got[id] = text
			}
			check(t, rows.Err())
			for id, text := range texts {
				if text == "" {
					text = "{}" // figures not stored read as none, and go down as none
				}
				if got[id] != text {
					t.Fatalf("run %s: migrated down to %q, want %q as stored at version 4", id, got[id], text)
				}
			}
			check(t, raw.Close())
			readBack(t, dsn, want)
		})
	}
}

// oldFigures are n figures of every kind of value: zeros, whole rates,
// percentages, tiny and huge numbers, strings that JSON escapes, and
// (the last) a NaN, which JSON cannot hold.
func oldFigures(n int) []fleet.Figures {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func() float64 {
		switch rng.IntN(5) {
		case 0:
			return 0
		case 1:
			return math.Round(rng.Float64() * 1e9)
		case 2:
			return rng.Float64() * 100
		case 3:
			return rng.ExpFloat64() * 1e300
		}
		return rng.ExpFloat64() * 1e-7
	}
	words := []string{"", "pass", "fail", "partial", `a "quoted" <word> & µs`, "minimum RTT 1e+09 ms: no path's is outside 0 to 2s"}
	out := make([]fleet.Figures, n)
	for i := range out {
		out[i] = fleet.Figures{ThroughputBps: pick(), IdealBps: pick(), RTTMs: pick(), RTTLoadedMs: pick(), LossPct: pick(),
			BufferDelayPct: pick(), Verdict: words[rng.IntN(len(words))], Partial: rng.IntN(2) == 0, Implausible: words[rng.IntN(len(words))],
			DownThroughputBps: pick(), DownIdealBps: pick(), DownRTTLoadedMs: pick(), DownLossPct: pick(), DownBufferDelayPct: pick()}
	}
	out[0] = fleet.Figures{}
	out[n-1].RTTMs = math.NaN()
	return out
}

// atVersion4 migrates a fresh database dsn to version 4 and stores a
// result of each of figs there as that version's store did (run i
// holds figs[i]); it returns each run's figures text.
func atVersion4(t *testing.T, dsn string, figs []fleet.Figures) map[string]string {
	t.Helper()
	raw, p := rawProvider(t, dsn)
	defer raw.Close()
	if _, err := p.UpTo(ctx, 4); err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{}
	check(t, inRawTx(raw, func(tx *sql.Tx) error {
		for i, f := range figs {
			text, _ := json.Marshal(f) // nil for a NaN: stored as "", as PutResult did
			id := fmt.Sprintf("r%05d", i)
			texts[id] = string(text)
			if _, err := tx.ExecContext(ctx, `INSERT INTO results (run_id, schedule_id, source, dest, kind, received, figures, health,
				previous_health, doc) VALUES ($1, 's', 'a', 'b', 'tcp', $2, $3, 'ok', '', '{}')`, id, ms(t0)+int64(i), string(text)); err != nil {
				return err
			}
		}
		return nil
	}))
	return texts
}

// readBack opens dsn (migrating it) and checks that run i's figures are
// want[i] (none for a NaN), listed and one by one.
func readBack(t *testing.T, dsn string, want []fleet.Figures) {
	t.Helper()
	db, err := Open(ctx, dsn)
	check(t, err)
	defer db.Close()
	rs := must[[]fleet.Result](t)(db.Results(ctx, fleet.ResultFilter{Limit: 10_000, NoDoc: true}))
	if len(rs) != len(want) {
		t.Fatalf("%d results, want %d", len(rs), len(want))
	}
	for _, r := range rs {
		var i int
		fmt.Sscanf(r.RunID, "r%d", &i)
		w := want[i]
		if math.IsNaN(w.RTTMs) {
			w = fleet.Figures{}
		}
		if r.Figures != w {
			t.Fatalf("run %s: figures %+v, want %+v", r.RunID, r.Figures, w)
		}
	}
	if r := must[fleet.Result](t)(db.Result(ctx, "r00001")); r.Figures != want[1] || r.Health != fleet.HealthOK || string(r.Doc) != "{}" {
		t.Errorf("result r00001 read back %+v, want figures %+v", r, want[1])
	}
}

// rawProvider is dsn opened without the store, and goose over it.
func rawProvider(t *testing.T, dsn string) (*sql.DB, *goose.Provider) {
	t.Helper()
	driver, dialect := "sqlite", goose.DialectSQLite3
	if isPostgres(dsn) {
		driver, dialect = "pgx", goose.DialectPostgres
	}
	raw, err := sql.Open(driver, dsn)
	check(t, err)
	p, err := newProvider(dialect, raw)
	check(t, err)
	return raw, p
}

// inRawTx runs fn in a transaction of db and commits it.
func inRawTx(db *sql.DB, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}
