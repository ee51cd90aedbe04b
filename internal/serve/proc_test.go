package serve

// Second processes for the attack tests: the test binary re-runs itself
// with FULLPIPE_ROLE set, as a responder (with its own RLIMIT_NOFILE, so
// fd exhaustion and memory are measured in a process of their own) or as
// an attacker (so the attack crosses the kernel like a real one).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const roleEnv = "FULLPIPE_ROLE" // "responder" or "attack:<name>"; the argument is in roleArgEnv
const roleArgEnv = "FULLPIPE_ROLE_ARG"

func TestMain(m *testing.M) {
	switch role := os.Getenv(roleEnv); {
	case role == "responder":
		os.Exit(responderMain(os.Getenv(roleArgEnv)))
	case strings.HasPrefix(role, "attack:"):
		os.Exit(attackMain(strings.TrimPrefix(role, "attack:"), os.Getenv(roleArgEnv)))
	}
	if addr := os.Getenv(helperClientEnv); addr != "" { // record_test.go's vanishing client
		os.Exit(helperClientMain(addr))
	}
	os.Exit(m.Run())
}

// childConfig is what a responder child runs with.
type childConfig struct {
	NoFile int // RLIMIT_NOFILE soft and hard limit; 0: inherit
	Config Config
	Keys   []childKey // the responder's key ring, when set
}

// childKey is one key of a child's ring.
type childKey struct {
	ID         string
	Key        []byte
	Start, End time.Time
}

// responderMain runs a responder until its stdin closes, printing its
// address on the first line of stdout and its Stats as JSON on the last.
func responderMain(arg string) int {
	var cc childConfig
	if err := json.Unmarshal([]byte(arg), &cc); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if cc.NoFile > 0 {
		lim := unix.Rlimit{Cur: uint64(cc.NoFile), Max: uint64(cc.NoFile)}
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
			fmt.Fprintln(os.Stderr, "setrlimit:", err)
			return 2
		}
	}
	cc.Config.Listen = "127.0.0.1:0"
	if cc.Keys != nil {
		cc.Config.Keys = NewKeyRing()
		for _, k := range cc.Keys {
			if err := cc.Config.Keys.Add(k.ID, k.Key, k.Start, k.End); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
		}
	}
	cc.Config.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := Listen(cc.Config)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); cancel() }() // ends when the parent closes stdin
	fmt.Println(srv.Addr().String())
	err = srv.Serve(ctx)
	b, _ := json.Marshal(srv.Stats())
	fmt.Println(string(b))
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 1
	}
	return 0
}

// child is a second process of this test binary.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
	exit  chan error // receives the process's exit once
}

func startChild(t *testing.T, role string, arg any) *child {
	t.Helper()
	b, err := json.Marshal(arg)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"="+role, roleArgEnv+"="+string(b))
	cmd.Stderr = &prefixWriter{t: t, prefix: role + ": "}
	c := &child{cmd: cmd, exit: make(chan error, 1)}
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	// Not StdoutPipe: Wait would close it, racing the read of the last
	// line. The child writes into an OS pipe whose read end is ours:
	// the scanner sees EOF once the child has exited.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = pw
	c.out = bufio.NewScanner(pr)
	c.out.Buffer(make([]byte, 1<<20), 1<<20)
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		t.Fatal(err)
	}
	go func() { c.exit <- cmd.Wait() }()
	t.Cleanup(func() {
		defer pr.Close()
		c.stdin.Close()
		select {
		case <-c.exit:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-c.exit
			t.Errorf("%s did not end within 5 s of its stdin closing", role)
		}
	})
	return c
}

// line reads the child's next line of stdout, failing after d.
func (c *child) line(t *testing.T, d time.Duration) string {
	t.Helper()
	got := make(chan bool, 1)
	go func() { got <- c.out.Scan() }()
	select {
	case ok := <-got:
		if !ok {
			t.Fatalf("child ended without output: %v", c.out.Err())
		}
		return c.out.Text()
	case <-time.After(d):
		_ = c.cmd.Process.Kill()
		<-got
		t.Fatalf("no output from the child within %v", d)
	}
	return ""
}

// alive reports whether the child is still running.
func (c *child) alive() bool {
	select {
	case err := <-c.exit:
		c.exit <- err
		return false
	default:
		return true
	}
}

// stop closes the child's stdin and returns its last line of output
// (a responder's Stats).
func (c *child) stop(t *testing.T) string {
	t.Helper()
	c.stdin.Close()
	var last string
	for c.out.Scan() {
		last = c.out.Text()
	}
	select {
	case err := <-c.exit:
		c.exit <- err
		if err != nil {
			t.Errorf("child exited: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("child did not end within 5 s of its stdin closing")
	}
	return last
}

// startResponder runs a responder child and returns it with its address.
func startResponder(t *testing.T, cc childConfig) (*child, string) {
	t.Helper()
	c := startChild(t, "responder", cc)
	return c, c.line(t, 10*time.Second)
}

// rssKB is a process's resident set size in KiB (VmRSS).
func rssKB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// prefixWriter logs a child's stderr through the test.
type prefixWriter struct {
	t      *testing.T
	prefix string
}

func (w *prefixWriter) Write(b []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		w.t.Log(w.prefix + l)
	}
	return len(b), nil
}
