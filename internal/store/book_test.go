package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// overlaps counts, independently of Book, the pairs of exclusive
// scheduled or running runs that share an agent and overlap: per agent
// (as source or destination), runs by start, one whose start is before
// the latest end of those before it. It also returns how many runs it
// looked at.
func overlaps(t testing.TB, db *DB) (bad, runs int) {
	t.Helper()
	const q = `WITH a AS (
		SELECT id, source AS agent, start_ms, end_ms FROM runs WHERE exclusive AND state IN ('scheduled', 'running')
		UNION ALL
		SELECT id, dest, start_ms, end_ms FROM runs WHERE exclusive AND state IN ('scheduled', 'running') AND dest <> source
	), w AS (
		SELECT start_ms, MAX(end_ms) OVER (PARTITION BY agent ORDER BY start_ms, id
			ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_end FROM a
	)
	SELECT (SELECT COUNT(*) FROM w WHERE before_end > start_ms),
		(SELECT COUNT(*) FROM runs WHERE exclusive AND state IN ('scheduled', 'running'))`
	if err := db.r.QueryRowContext(context.Background(), q).Scan(&bad, &runs); err != nil {
		t.Fatal(err)
	}
	return bad, runs
}

// TestOverlapsQuery: the check finds an overlap stored behind Book's
// back, and not a run that ends where the next starts.
func TestOverlapsQuery(t *testing.T) {
	each(t, func(t *testing.T, db *DB) {
		ins := func(src, dst string, from, to int) {
			r := run(src, dst, t0.Add(time.Duration(from)*time.Minute), time.Duration(to-from)*time.Minute, true, "")
			r.ID, r.State = newID(), fleet.RunScheduled
			check(t, db.inTx(ctx, func(tx *sql.Tx) error { return insertRun(ctx, tx, r) }))
		}
		ins("a", "b", 0, 10)
		ins("c", "a", 10, 20) // touches, half-open: fine
		if bad, n := overlaps(t, db); bad != 0 || n != 2 {
			t.Fatalf("%d overlaps in %d runs, want 0 in 2", bad, n)
		}
		ins("d", "b", 5, 6) // inside a→b, by b
		if bad, _ := overlaps(t, db); bad != 1 {
			t.Fatalf("%d overlaps, want 1", bad)
		}
	})
}

// hammer is one property run: workers goroutines, spread over dbs, make
// up to n Book attempts between random pairs of agents, for at most
// budget; 10 % of the exclusive runs booked are cancelled at once,
// opening holes for the others.
type hammer struct {
	dbs     []*DB
	workers int
	n       int64
	budget  time.Duration
	seed    uint64

	attempts, booked, noSlot, cancelled atomic.Int64
}

const (
	hammerAgents = 20
	dayMS        = 24 * 3600 * 1000
)

func (h *hammer) run() (time.Duration, error) {
	start := time.Now()
	var (
		mu    sync.Mutex
		first error
	)
	ctx, cancel := context.WithTimeout(context.Background(), h.budget+30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for w := range h.workers {
		db := h.dbs[w%len(h.dbs)]
		rng := rand.New(rand.NewPCG(h.seed, uint64(w)))
		wg.Go(func() {
			for time.Since(start) < h.budget && h.attempts.Add(1) <= h.n {
				if err := h.attempt(ctx, db, rng); err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if a := h.attempts.Load(); a > h.n {
		h.attempts.Store(h.n)
	}
	return time.Since(start), first
}

func (h *hammer) attempt(ctx context.Context, db *DB, rng *rand.Rand) error {
	src := rng.IntN(hammerAgents)
	dst := (src + 1 + rng.IntN(hammerAgents-1)) % hammerAgents
	length := time.Second + time.Duration(rng.Int64N(int64(10*time.Minute-time.Second)))
	at := t0.Add(time.Duration(rng.Int64N(dayMS)) * time.Millisecond)
	r := run(fmt.Sprintf("a%02d", src), fmt.Sprintf("a%02d", dst), at, length, rng.IntN(10) < 8, "")
	got, err := db.Book(ctx, r, at.Add(time.Hour))
	switch {
	case errors.Is(err, fleet.ErrNoSlot):
		h.noSlot.Add(1)
		return nil
	case err != nil:
		return err
	}
	h.booked.Add(1)
	if got.Exclusive && rng.IntN(10) == 0 {
		if _, err := db.SetRunState(ctx, got.ID, []fleet.RunState{fleet.RunScheduled}, fleet.RunCancelled, "", t0); err != nil {
			return err
		}
		h.cancelled.Add(1)
	}
	return nil
}

// TestBookNeverOverlaps is the scheduler's property: randomized
// concurrent Books (8 goroutines, random pairs of 20 agents, lengths
// 1 s–10 min, desired starts over a day, 80 % exclusive, an hour's
// horizon) never store two overlapping exclusive runs of one agent, as
// the overlaps query checks over every stored run. 100,000 attempts on
// SQLite; on PostgreSQL as many as fit in 60 s, from one handle and
// then from two (two pools, as two controllers). Fewer under -short.
func TestBookNeverOverlaps(t *testing.T) {
	full, budget := int64(100_000), 60*time.Second
	if testing.Short() {
		full, budget = 3_000, 10*time.Second
	}
	for _, c := range []struct {
		backend string
		handles int
		n       int64
		budget  time.Duration
	}{
		{"sqlite", 1, full, 10 * budget},
		{"sqlite", 2, full / 10, budget},
		{"postgres", 1, full, budget},
		{"postgres", 2, full, budget},
	} {
		t.Run(fmt.Sprintf("%s/%d-handles", c.backend, c.handles), func(t *testing.T) {
			dsn := dsnOf(t, c.backend)
			h := &hammer{workers: 8, n: c.n, budget: c.budget, seed: uint64(time.Now().UnixNano())}
			for range c.handles {
				h.dbs = append(h.dbs, open(t, dsn))
			}
			took, err := h.run()
			if err != nil {
				t.Error(err)
			}
			bad, runs := overlaps(t, h.dbs[0])
			t.Logf("seed %d: %d attempts in %v (%.0f/s): %d booked (%d exclusive live, %d cancelled), %d no slot; %d overlaps",
				h.seed, h.attempts.Load(), took.Round(time.Millisecond), float64(h.attempts.Load())/took.Seconds(),
				h.booked.Load(), runs, h.cancelled.Load(), h.noSlot.Load(), bad)
			if bad != 0 {
				t.Errorf("%d overlapping exclusive runs", bad)
			}
			if h.booked.Load() == 0 || h.attempts.Load() >= 2000 && h.noSlot.Load() == 0 {
				t.Errorf("booked %d, no slot %d: the test should see both", h.booked.Load(), h.noSlot.Load())
			}
		})
	}
}

// dsnOf is a fresh database of the named backend.
func dsnOf(t *testing.T, backend string) string {
	for _, b := range dsns {
		if b.name == backend {
			return b.dsn(t)
		}
	}
	t.Fatalf("no backend %q", backend)
	return ""
}

// TestBookOccurrenceOnce: an occurrence of a schedule is booked once per
// pair, exclusive or not, whatever slot the second booking would take
// (a scheduler that books again after a crash draws another slip): the
// second is ErrBooked and stores nothing. The other direction, another
// occurrence, another schedule and runs of no occurrence are booked.
func TestBookOccurrenceOnce(t *testing.T) {
	each(t, func(t *testing.T, db *DB) {
		occ := t0.Add(time.Hour)
		book := func(src, dst string, start time.Time, exclusive bool, schedule string, occ time.Time) error {
			r := run(src, dst, start, time.Minute, exclusive, schedule)
			r.Occurrence = occ
			got, err := db.Book(ctx, r, start.Add(time.Hour))
			if err == nil && !got.Occurrence.Equal(occ) {
				t.Errorf("booked occurrence %v, want %v", got.Occurrence, occ)
			}
			return err
		}
		for _, exclusive := range []bool{true, false} {
			s := fmt.Sprintf("s%v", exclusive)
			check(t, book("a", "b", occ, exclusive, s, occ))
			wantErr(t, book("a", "b", occ.Add(7*time.Second), exclusive, s, occ), fleet.ErrBooked)
			check(t, book("b", "a", occ.Add(2*time.Minute), exclusive, s, occ))
			check(t, book("a", "b", occ.Add(5*time.Minute), exclusive, s, occ.Add(time.Minute)))
			check(t, book("a", "b", occ.Add(10*time.Minute), exclusive, s+"other", occ))
			check(t, book("a", "b", occ.Add(20*time.Minute), exclusive, "", time.Time{}))
			check(t, book("a", "b", occ.Add(30*time.Minute), exclusive, "", time.Time{}))
		}
		runs, err := db.Runs(ctx, fleet.RunFilter{Limit: 100})
		check(t, err)
		if len(runs) != 12 {
			t.Errorf("%d runs stored, want 12 (6 of each kind, the second booking of an occurrence not)", len(runs))
		}
	})
}
