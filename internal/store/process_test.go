package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// helperEnv, in a child of TestTwoProcesses, names the database the
// child opens and books in; helperN is how many attempts it makes.
const (
	helperEnv = "FULLPIPE_STORE_HELPER_DSN"
	helperN   = "FULLPIPE_STORE_HELPER_N"
)

// helperCounts is what a child reports on its stdout.
type helperCounts struct {
	Attempts, Booked, NoSlot int64
	Error                    string
}

// helper is the child's work: open the database (racing its sibling to
// migrate it) and hammer it with Books from 4 goroutines.
func helper(dsn string) int {
	n, _ := strconv.ParseInt(os.Getenv(helperN), 10, 64)
	var out helperCounts
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db, err := Open(ctx, dsn)
	if err == nil {
		defer db.Close()
		h := &hammer{dbs: []*DB{db}, workers: 4, n: n, budget: time.Minute, seed: uint64(os.Getpid())}
		_, err = h.run()
		out = helperCounts{Attempts: h.attempts.Load(), Booked: h.booked.Load(), NoSlot: h.noSlot.Load()}
	}
	if err != nil {
		out.Error = err.Error()
	}
	json.NewEncoder(os.Stdout).Encode(out)
	return 0
}

// TestTwoProcesses: two processes open one fresh database at once
// (both migrate it: one does, under the lock, and the other finds it
// done) and book in it concurrently; no exclusive runs overlap.
func TestTwoProcesses(t *testing.T) {
	n := 5000
	if testing.Short() {
		n = 500
	}
	for _, b := range dsns {
		t.Run(b.name, func(t *testing.T) {
			dsn := b.dsn(t)
			counts := make([]helperCounts, 2)
			var wg sync.WaitGroup
			for i := range counts {
				wg.Go(func() { counts[i] = child(t, dsn, n) })
			}
			wg.Wait()
			var booked int64
			for i, c := range counts {
				t.Logf("process %d: %+v", i, c)
				if c.Error != "" {
					t.Errorf("process %d: %s", i, c.Error)
				}
				booked += c.Booked
			}
			db := open(t, dsn)
			var versions int
			if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM goose_db_version WHERE version_id > 0`).Scan(&versions); err != nil {
				t.Fatal(err)
			}
			if known := knownMigrations(); versions != known {
				t.Errorf("%d migrations recorded, want %d (each applied once)", versions, known)
			}
			if bad, _ := overlaps(t, db); bad != 0 || booked == 0 {
				t.Errorf("%d overlaps, %d booked", bad, booked)
			}
		})
	}
}

// child runs this test binary as a helper on dsn and reads its counts.
func child(t *testing.T, dsn string, n int) helperCounts {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dsn, fmt.Sprintf("%s=%d", helperN, n))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	var c helperCounts
	if err == nil {
		err = json.Unmarshal(out, &c)
	}
	if err != nil {
		c.Error = fmt.Sprintf("helper process: %v: %s", err, out)
	}
	return c
}
