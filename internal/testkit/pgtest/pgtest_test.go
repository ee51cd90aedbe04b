package pgtest

import (
	"context"
	"database/sql"
	"os"
	"strconv"
	"testing"
)

// TestServer: two fresh databases on one server, each answering and
// distinct; Close stops the server and removes its directory.
func TestServer(t *testing.T) {
	s := New()
	defer s.Close()
	a, b := s.Database(t), s.Database(t)
	if a == b {
		t.Fatalf("one database twice: %s", a)
	}
	for _, dsn := range []string{a, b} {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		var name string
		if err := db.QueryRowContext(context.Background(), "SELECT current_database()").Scan(&name); err != nil {
			t.Fatalf("%s: %v", dsn, err)
		}
		db.Close()
		t.Logf("%s: %s", dsn, name)
	}
	dir, pid := s.dir, s.cmd.Process.Pid
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s left behind: %v", dir, err)
	}
	if _, err := os.Stat("/proc/" + itoa(pid)); !os.IsNotExist(err) {
		t.Errorf("postgres (pid %d) still running", pid)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
