package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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

// childEnv makes the test binary a child of TestKilledParent: it starts
// a server, prints the postmaster's pid and directory, and waits to be
// killed.
const childEnv = "PGTEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		s := New()
		s.Database(&recorder{TB: nil})
		fmt.Println(s.cmd.Process.Pid, s.dir)
		time.Sleep(time.Minute) // real time: this child process only waits for its parent to SIGKILL it
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// TestKilledParent: a test binary killed outright takes its postgres
// with it (Pdeathsig).
func TestKilledParent(t *testing.T) {
	if _, err := binDir(); err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	var (
		pid int
		dir string
	)
	if _, err := fmt.Fscan(out, &pid, &dir); err != nil {
		t.Fatalf("reading the child's postgres: %v", err)
	}
	defer os.RemoveAll(dir) // a killed test cannot clean up
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("postgres (pid %d) outlived its killed parent by 10 s", pid)
		}
		time.Sleep(20 * time.Millisecond) // real time: waits for the kernel to end a postgres process (Pdeathsig)
	}
}

// alive: pid runs and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !strings.Contains(string(b), ") Z ")
}
