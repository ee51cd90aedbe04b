package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// settings make a test server fast (no durability: a crash loses the
// cluster, which is thrown away anyway) and roomy for concurrent tests.
var settings = []string{
	"fsync=off", "synchronous_commit=off", "full_page_writes=off",
	"max_connections=300", "shared_buffers=64MB", "log_min_messages=warning",
}

// start makes the cluster, starts the server and connects to it. On
// error what was made is removed.
func (s *Server) start() (err error) {
	bin, err := binDir()
	if err != nil {
		return err
	}
	cred, err := runAs()
	if err != nil {
		return err
	}
	sweep()
	if s.dir, err = os.MkdirTemp("", "pgtest-"); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer func() {
		if err != nil {
			s.stop()
		}
	}()
	if s.lock, err = os.Create(filepath.Join(s.dir, lockName)); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	if err := syscall.Flock(int(s.lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	if cred != nil {
		if err := os.Chown(s.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
	}
	data := filepath.Join(s.dir, "data")
	initdb := command(s.dir, bin, cred, "initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: initdb: %w: %s", err, out)
	}
	for attempt := 0; ; attempt++ {
		err = s.serve(bin, cred, data)
		if err == nil || attempt == 2 {
			return err
		}
	}
}

// serve starts postgres on a free port and waits until it answers; an
// error when it exits or stays silent for startTimeout.
func (s *Server) serve(bin string, cred *syscall.Credential, data string) error {
	port, err := freePort()
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	logPath := filepath.Join(s.dir, "postgres.log")
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer log.Close()
	args := []string{"-D", data, "-h", "127.0.0.1", "-p", fmt.Sprint(port), "-k", s.dir}
	for _, kv := range append(slices.Clone(settings), s.settings...) {
		args = append(args, "-c", kv)
	}
	cmd := command(s.dir, bin, cred, "postgres", args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: starting postgres: %w", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	s.cmd, s.done, s.port = cmd, done, port
	if err := s.connect(); err != nil {
		cmd.Process.Kill()
		<-done
		s.cmd = nil
		return fmt.Errorf("%w\n%s", err, tail(logPath))
	}
	return nil
}

// connect waits for the server to accept connections and keeps one
// pool to its postgres database.
func (s *Server) connect() error {
	db, err := sql.Open("pgx", s.dsn("postgres"))
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(2)
	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = db.PingContext(ctx)
		cancel()
		if err == nil {
			s.admin = db
			return nil
		}
		select {
		case <-s.done:
			db.Close()
			return errors.New("pgtest: postgres exited at start")
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			db.Close()
			return fmt.Errorf("pgtest: postgres not ready in %v: %w", startTimeout, err)
		}
	}
}

// lockName is the file in a server's directory that its process holds
// locked (flock) while it lives.
const lockName = "pgtest.lock"

// sweep removes the directories of servers whose test binaries were
// killed outright (their postgres died with them, Pdeathsig, but the
// files stay): those of pgtest-* older than a minute whose lock no
// process holds.
func sweep() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "pgtest-*"))
	for _, dir := range dirs {
		fi, err := os.Stat(dir)
		if err != nil || time.Since(fi.ModTime()) < time.Minute {
			continue
		}
		f, err := os.Open(filepath.Join(dir, lockName))
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.RemoveAll(dir)
		}
		f.Close()
	}
}
