package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenDSNs: a path, sqlite:PATH and a file: URI open one database.
func TestOpenDSNs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a dir?#", "fleet.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	db := open(t, path)
	check(t, db.Enrol(ctx, "a1", t0))
	db.Close()
	for _, dsn := range []string{"sqlite:" + path, "file:" + strings.NewReplacer("?", "%3f", "#", "%23").Replace(path) + "?cache=private"} {
		db := open(t, dsn)
		if _, err := db.Agent(ctx, "a1"); err != nil {
			t.Errorf("%s: %v", dsn, err)
		}
		if db.Dialect() != "sqlite" {
			t.Errorf("%s: dialect %s", dsn, db.Dialect())
		}
	}
}

// TestOpenErrors: each failure to open says why, on one line.
func TestOpenErrors(t *testing.T) {
	for _, c := range []struct{ name, dsn, want string }{
		{"sqlite, no such directory", filepath.Join(t.TempDir(), "missing", "fleet.db"), "cannot open SQLite database"},
		{"sqlite, no path", "sqlite:", "needs a file path"},
		{"postgres unreachable", "postgres://postgres@127.0.0.1:1/fleet?sslmode=disable&connect_timeout=2", "cannot reach PostgreSQL at 127.0.0.1:1/fleet"},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, err := Open(ctx, c.dsn)
			if err == nil {
				db.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q: want one line saying %q", err, c.want)
			}
			t.Log(err)
		})
	}
}

// TestNewerSchema: a database migrated by a newer build is refused, and
// left as it is.
func TestNewerSchema(t *testing.T) {
	for _, b := range dsns {
		t.Run(b.name, func(t *testing.T) {
			dsn := b.dsn(t)
			db := open(t, dsn)
			if _, err := db.w.ExecContext(ctx, `INSERT INTO goose_db_version (version_id, is_applied) VALUES (99, TRUE)`); err != nil {
				t.Fatal(err)
			}
			db.Close()
			db, err := Open(ctx, dsn)
			if err == nil {
				db.Close()
				t.Fatal("opened a database of schema version 99")
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("schema version 99, newer than this build knows (%d)", knownMigrations())) {
				t.Errorf("error %q", err)
			}
			t.Log(err)
		})
	}
}

// TestSQLiteSynchronousFull: the writer syncs every commit (synchronous
// FULL, 2), so a result acknowledged to its agent, who then deletes its
// spooled copy, survives a power loss; a DSN that asks for NORMAL (1)
// gets it.
func TestSQLiteSynchronousFull(t *testing.T) {
	for _, c := range []struct {
		dsn  func(dir string) string
		want int
	}{
		{func(dir string) string { return dir + "/a.db" }, 2},
		{func(dir string) string { return "file:" + dir + "/b.db?_synchronous=NORMAL" }, 1},
	} {
		db := open(t, c.dsn(t.TempDir()))
		var got int
		if err := db.w.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&got); err != nil || got != c.want {
			t.Errorf("%s: synchronous %d (%v), want %d", c.dsn("DIR"), got, err, c.want)
		}
	}
}
