package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
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

// recorder is a testing.TB that records how a test ended.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Skip(args ...any)          { r.skipped = fmt.Sprint(args...); runtime.Goexit() }
func (r *recorder) Fatal(args ...any)         { r.failed = fmt.Sprint(args...); runtime.Goexit() }
func (r *recorder) Fatalf(f string, a ...any) { r.failed = fmt.Sprintf(f, a...); runtime.Goexit() }

// TestNotInstalled: without the binaries a test skips saying how to
// install them, or fails when FULLPIPE_REQUIRE_POSTGRES=1.
func TestNotInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	saved := installed
	installed = filepath.Join(t.TempDir(), "*", "bin")
	defer func() { installed = saved }()
	for _, require := range []string{"", "1"} {
		t.Setenv(RequireEnv, require)
		r := &recorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			s := New()
			defer s.Close()
			s.Database(r)
		}()
		<-done
		got := r.skipped
		if require == "1" {
			got = r.failed
		}
		if !strings.Contains(got, "apt-get install postgresql") {
			t.Errorf("%s=%q: skipped %q, failed %q: want the install hint", RequireEnv, require, r.skipped, r.failed)
		}
	}
}
