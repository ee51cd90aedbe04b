package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // database/sql driver "sqlite"
)

//go:embed migrations/*.sql
var migrations embed.FS

// busyTimeout is how long a SQLite write waits for another process's
// write to end before failing with SQLITE_BUSY.
const busyTimeout = 10 * time.Second

// connectTimeout bounds reaching PostgreSQL when Open's context has no
// deadline of its own.
const connectTimeout = 10 * time.Second

// sqlitePath is the file a SQLite DSN names, and the SQLite URI
// parameters (mode, cache, ...) it carries.
func sqlitePath(dsn string) (path string, query url.Values, err error) {
	dsn = strings.TrimPrefix(dsn, "sqlite:")
	if !strings.HasPrefix(dsn, "file:") {
		return dsn, url.Values{}, nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", nil, fmt.Errorf("store: SQLite URI %q: %w", dsn, err)
	}
	path = u.Path
	if u.Opaque != "" { // file:relative/path, not decoded by url.Parse
		if path, err = url.PathUnescape(u.Opaque); err != nil {
			return "", nil, fmt.Errorf("store: SQLite URI %q: %w", dsn, err)
		}
	}
	return path, u.Query(), nil
}

// sqliteURI is the driver's DSN for path with the given parameters.
func sqliteURI(path string, q url.Values) string {
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	return "file:" + esc + "?" + q.Encode()
}

// openSQLite opens (creating) the SQLite database dsn names: a writer
// of one connection and a pool of readers.
func openSQLite(ctx context.Context, dsn string) (*DB, error) {
	path, q, err := sqlitePath(dsn)
	if err != nil {
		return nil, err
	}
	if path == "" || path == ":memory:" {
		return nil, fmt.Errorf("store: SQLite needs a file path (got %q): the controller's state must outlive it", dsn)
	}
	q.Set("_busy_timeout", fmt.Sprint(busyTimeout.Milliseconds()))
	q.Set("_foreign_keys", "1")
	// FULL: WAL mode syncs the log at every commit, so a result the
	// controller acknowledged (and the agent then deleted from its
	// spool) survives a power loss; NORMAL syncs only at checkpoints
	// and may lose the last commits. Its cost is in docs/controller.md;
	// a DSN that names _synchronous keeps its own.
	if q.Get("_synchronous") == "" {
		q.Set("_synchronous", "FULL")
	}
	wq, rq := cloneValues(q), cloneValues(q)
	wq.Set("_journal_mode", "WAL")
	wq.Set("_txlock", "immediate")
	rq.Set("_query_only", "1")
	w, err := sql.Open("sqlite", sqliteURI(path, wq))
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	d := &DB{w: w, name: path}
	if err := d.migrateSQLite(ctx, path); err != nil {
		w.Close()
		return nil, err
	}
	if d.r, err = sql.Open("sqlite", sqliteURI(path, rq)); err != nil {
		w.Close()
		return nil, err
	}
	d.r.SetMaxOpenConns(8)
	d.r.SetMaxIdleConns(8)
	return d, nil
}

func cloneValues(v url.Values) url.Values {
	c := url.Values{}
	for k, vs := range v {
		c[k] = append([]string(nil), vs...)
	}
	return c
}

// migrateSQLite opens the writer's connection and migrates under an
// exclusive flock(2) on PATH-lock, a file beside the database that
// stays: SQLite's own locks cannot cover goose's several transactions,
// nor a new database's first switch to WAL, which two processes opening
// it at once would race (the loser's PRAGMA journal_mode fails with
// SQLITE_BUSY at once, without waiting out the busy timeout: CI saw
// it in TestTwoProcesses).
func (d *DB) migrateSQLite(ctx context.Context, path string) error {
	lockPath := path + "-lock"
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("store: cannot open SQLite database %s: %w (is its directory writable?)", path, err)
	}
	defer f.Close()
	if err := flock(ctx, f); err != nil {
		return fmt.Errorf("store: locking %s to migrate: %w", lockPath, err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	if err := d.w.PingContext(ctx); err != nil {
		return fmt.Errorf("store: cannot open SQLite database %s: %w (is it writable, its directory too?)", path, err)
	}
	return d.migrate(ctx, goose.DialectSQLite3)
}

// flock takes an exclusive lock on f, polling so that ctx can cancel.
func flock(ctx context.Context, f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// openPostgres connects to PostgreSQL and migrates under a session
// advisory lock.
func openPostgres(ctx context.Context, dsn string) (*DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: PostgreSQL DSN: %w", err)
	}
	name := fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(32)
	db.SetConnMaxIdleTime(5 * time.Minute)
	d := &DB{w: db, r: db, pg: true, name: name}
	if err := d.migratePostgres(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return d, nil
}

// migrationLock is the session advisory lock's key: FNV-64a of a name
// of ours, so as not to share goose's default.
func migrationLock() int64 {
	h := fnv.New64a()
	h.Write([]byte("fullpipe/store/migrate"))
	return int64(h.Sum64())
}

func (d *DB) migratePostgres(ctx context.Context) error {
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if _, ok := ctx.Deadline(); !ok {
		cctx, cancel = context.WithTimeout(ctx, connectTimeout)
	}
	conn, err := d.w.Conn(cctx)
	cancel()
	if err != nil {
		return fmt.Errorf("store: cannot reach PostgreSQL at %s: %w", d.name, err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", migrationLock()); err != nil {
		return fmt.Errorf("store: PostgreSQL at %s: locking to migrate: %w", d.name, err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrationLock())
	return d.migrate(ctx, goose.DialectPostgres)
}

// newProvider is goose over db with this build's migrations: the SQL
// files and goMigrations.
func newProvider(dialect goose.Dialect, db *sql.DB) (*goose.Provider, error) {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	p, err := goose.NewProvider(dialect, db, sub, goose.WithDisableGlobalRegistry(true), goose.WithGoMigrations(goMigrations()...))
	if err != nil {
		return nil, fmt.Errorf("store: migrations: %w", err)
	}
	return p, nil
}

// migrate refuses a schema newer than this build's migrations, then
// applies those pending.
func (d *DB) migrate(ctx context.Context, dialect goose.Dialect) error {
	p, err := newProvider(dialect, d.w)
	if err != nil {
		return err
	}
	have, err := p.GetDBVersion(ctx)
	if err != nil {
		return fmt.Errorf("store: %s: reading the schema version: %w", d.name, err)
	}
	srcs := p.ListSources()
	if know := srcs[len(srcs)-1].Version; have > know {
		return fmt.Errorf("store: %s has schema version %d, newer than this build knows (%d): run a newer fullpipe", d.name, have, know)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("store: %s: migrating: %w", d.name, err)
	}
	return nil
}
