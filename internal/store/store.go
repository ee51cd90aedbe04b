// Package store keeps the fleet (fleet.Store) in SQLite, one file, the
// default, or in PostgreSQL, which several controllers can share.
//
// One set of SQL serves both: portable types (TEXT, BIGINT, BOOLEAN,
// DOUBLE PRECISION), times as integer milliseconds (UTC; 0 is unset),
// IDs made here (16 random bytes, hex), $N placeholders (which the
// SQLite driver binds by number). The schema is one set of goose
// migrations (the SQL of migrations/, and migration 5 in Go), applied by
// Open under a lock, so two processes opening one database at once
// migrate it once.
//
// Concurrency: on SQLite every write goes through one connection (w) in
// immediate transactions, so the writers of this process queue in Go and
// those of other processes wait on SQLite's busy timeout; readers (r)
// have a pool of their own and, in WAL mode, do not block the writer. On
// PostgreSQL w and r are one pool; Book serialises on per-agent advisory
// transaction locks taken in a fixed order, and transactions are retried
// a bounded number of times on serialization failures and deadlocks.
package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// DB is a fleet.Store on SQLite or PostgreSQL. It is safe for concurrent
// use; Close it when done.
type DB struct {
	w, r *sql.DB // writes and reads; one pool on PostgreSQL
	pg   bool    // PostgreSQL, else SQLite
	name string  // the database as errors name it: a path, or host/db
}

var _ fleet.Store = (*DB)(nil)

// Open opens the database dsn names and brings its schema up to date:
// a file path, "sqlite:PATH" or a "file:" URI for SQLite (created when
// missing), "postgres://..." or "postgresql://..." (or a key=value
// string with host=) for PostgreSQL.
func Open(ctx context.Context, dsn string) (*DB, error) {
	if isPostgres(dsn) {
		return openPostgres(ctx, dsn)
	}
	return openSQLite(ctx, dsn)
}

// isPostgres says whether dsn names a PostgreSQL database.
func isPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") ||
		strings.HasPrefix(dsn, "host=") || strings.Contains(dsn, " host=")
}

// Close closes the database's connections.
func (d *DB) Close() error {
	err := d.w.Close()
	if d.r != d.w {
		err = errors.Join(err, d.r.Close())
	}
	return err
}

// Dialect is "sqlite" or "postgres".
func (d *DB) Dialect() string {
	if d.pg {
		return "postgres"
	}
	return "sqlite"
}

// maxRetries bounds the attempts of one transaction that fails in a way
// worth retrying (retryable).
const maxRetries = 10

// inTx runs fn in a write transaction (immediate on SQLite) and commits
// it, retrying it whole when the database asks to.
func (d *DB) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	var err error
	for attempt := 0; attempt < maxRetries; attempt++ {
		err = d.tryTx(ctx, fn)
		if !retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(time.Duration(attempt+1) * time.Millisecond):
		}
	}
	return fmt.Errorf("store: gave up after %d attempts: %w", maxRetries, err)
}

func (d *DB) tryTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	return tx.Commit()
}

// retryable: PostgreSQL's serialization_failure and deadlock_detected,
// and SQLite's SQLITE_BUSY (another process held the write lock past the
// busy timeout).
func retryable(err error) bool {
	var (
		pe *pgconn.PgError
		se *sqlite.Error
	)
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01") ||
		errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// newID is 16 random bytes in hex.
func newID() string {
	return hex.EncodeToString(random(16))
}

func random(n int) []byte {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand panics rather)
	return b
}

// ms is t in integer milliseconds since the epoch; 0 for the zero time.
func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// fromMS is ms's inverse, in UTC.
func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// placeholders is "$first, $first+1, ..." for n values.
func placeholders(first, n int) string {
	p := make([]string, n)
	for i := range p {
		p[i] = fmt.Sprintf("$%d", first+i)
	}
	return strings.Join(p, ", ")
}

// affected is how many rows res changed.
func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// notFound wraps fleet.ErrNotFound with what was asked.
func notFound(what, id string) error {
	return fmt.Errorf("%s %q: %w", what, id, fleet.ErrNotFound)
}
