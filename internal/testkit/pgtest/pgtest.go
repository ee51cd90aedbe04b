// Package pgtest runs a throwaway PostgreSQL server for tests: Debian's
// binaries (initdb, postgres) on a cluster in a temporary directory, with
// trust authentication, listening only on 127.0.0.1 on a free port and on
// a unix socket in that directory, stopped (immediate shutdown) and
// removed at the end. Each test takes a fresh database of its own on the
// one server, which is much faster than a cluster per test.
//
// PostgreSQL refuses to run as root: as root, the cluster belongs to and
// runs as the system user postgres (else nobody). The server gets
// SIGKILL when the test binary dies (Pdeathsig), so a killed test leaves
// no postgres behind; the directory it leaves, the next start removes.
//
// When the binaries are missing the tests that ask for a database skip,
// saying how to install them, unless FULLPIPE_REQUIRE_POSTGRES=1, when
// they fail.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// RequireEnv, set to 1, turns a missing PostgreSQL from a skip into a
// failure (CI sets it).
const RequireEnv = "FULLPIPE_REQUIRE_POSTGRES"

// ErrNotInstalled says PostgreSQL's server binaries were not found.
var ErrNotInstalled = errors.New("PostgreSQL not installed: apt-get install postgresql (initdb and postgres not in PATH nor in /usr/lib/postgresql/*/bin)")

// startTimeout bounds initdb plus the server's start.
const startTimeout = 60 * time.Second

// Server is one PostgreSQL server, started at the first Database. Its
// methods are safe for concurrent use.
type Server struct {
	once     sync.Once
	err      error    // of the start, kept for every later Database
	settings []string // after the defaults

	mu    sync.Mutex // guards n and admin's use for CREATE DATABASE
	n     int        // databases made
	admin *sql.DB    // to the postgres database, as the superuser

	dir  string    // the cluster's temporary directory
	lock *os.File  // dir's lock file, held (flock) while the server lives
	port int       // on 127.0.0.1
	cmd  *exec.Cmd // the postmaster
	done chan struct{}
}

// New returns a server that starts when a test first asks for a
// database; Close stops it. Settings ("name=value") override the
// defaults, which trade durability for speed (fsync=off, ...): a
// benchmark of commits passes "fsync=on", "synchronous_commit=on". For
// a TestMain:
//
//	srv := pgtest.New()
//	code := m.Run()
//	srv.Close()
//	os.Exit(code)
func New(settings ...string) *Server { return &Server{settings: settings} }

// Start is a fresh database on a server of the test's own (stopped at
// its end): its DSN, or the test skipped or failed as Database says.
func Start(t testing.TB) string {
	t.Helper()
	s := New()
	t.Cleanup(func() { s.Close() })
	return s.Database(t)
}

// Database creates a fresh database for t and returns its DSN
// ("postgres://postgres@127.0.0.1:PORT/NAME?sslmode=disable"). It skips
// t when PostgreSQL is not installed (fails it when FULLPIPE_REQUIRE_POSTGRES=1)
// and fails t when the server cannot start.
func (s *Server) Database(t testing.TB) string {
	t.Helper()
	s.once.Do(func() { s.err = s.start() })
	switch {
	case errors.Is(s.err, ErrNotInstalled) && os.Getenv(RequireEnv) != "1":
		t.Skip(s.err)
	case s.err != nil:
		t.Fatal(s.err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	name := fmt.Sprintf("t%d", s.n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: creating database %s: %v", name, err)
	}
	return s.dsn(name)
}

// dsn is the URL of database name.
func (s *Server) dsn(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, name)
}

// Close stops the server (immediate shutdown) and removes its directory.
func (s *Server) Close() error {
	s.once.Do(func() { s.err = errors.New("pgtest: closed") })
	return s.stop()
}

// stop ends what start began.
func (s *Server) stop() error {
	if s.admin != nil {
		s.admin.Close()
	}
	var err error
	if s.cmd != nil {
		s.cmd.Process.Signal(syscall.SIGQUIT) // postgres: immediate shutdown
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
			err = errors.New("pgtest: postgres did not stop in 10 s: killed")
		}
		s.cmd = nil
	}
	if s.dir != "" {
		err = errors.Join(err, os.RemoveAll(s.dir))
		s.dir = ""
	}
	if s.lock != nil {
		s.lock.Close()
		s.lock = nil
	}
	return err
}

// installed is where Debian's postgresql packages put their binaries
// (a variable for the tests).
var installed = "/usr/lib/postgresql/*/bin"

// binDir is where initdb and postgres are: PATH, else the newest
// /usr/lib/postgresql/N/bin.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("postgres"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob(installed)
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", ErrNotInstalled
}

// version is N of /usr/lib/postgresql/N/bin.
func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// runAs is the credential to run PostgreSQL with: nil unless root, then
// the postgres user's, else nobody's.
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
	}
	return nil, errors.New("pgtest: running as root, and neither user postgres nor nobody exists to run PostgreSQL as")
}

// freePort is a port free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// command is bin/name args run as cred, in dir, killed with the test
// binary.
func command(dir, bin string, cred *syscall.Credential, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(bin, name), args...)
	cmd.Dir = dir
	cmd.Env = []string{"LANG=C", "LC_ALL=C", "PATH=/usr/bin:/bin", "TZ=UTC"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// tail is the end of a log file, for an error.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = "..." + s[len(s)-2000:]
	}
	return s
}
