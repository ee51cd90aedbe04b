package doctest

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/result/resulttest"
	"github.com/fullpipe/fullpipe/internal/testkit"
)

// bin is the fullpipe binary TestMain built ("" with -short).
var bin string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	testkit.MainWithBinary(m, &bin)
}

// TestEmittedValidate: the --json document of every command but rfc6349
// validates against its schema and decodes, each test kept to a second or
// two on loopback (about 20 s in all). Every kind of document is covered.
func TestEmittedValidate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary for about 20 s")
	}
	target := startResponder(t)
	seen := map[string]bool{"rfc6349": true} // the lab's TestRFC6349* validate it
	for _, tc := range []struct {
		name    string
		args    []string
		verdict bool // exit 1 is a verdict here, with a whole document (y1564: HOST-LIMITED when the busy host could not send the stream)
	}{
		{"tcp", []string{"tcp", target, "-t", "1s"}, false},
		{"tcp reverse", []string{"tcp", target, "-t", "1s", "-R"}, false},
		{"tcp bidir", []string{"tcp", target, "-t", "1s", "--bidir"}, false},
		{"tcp latency", []string{"tcp", target, "-t", "1s", "--latency"}, false},
		{"udp", []string{"udp", target, "-t", "1s"}, false},
		{"rtt", []string{"rtt", target, "-n", "5", "-i", "10ms"}, false},
		{"mtu", []string{"mtu", target}, false},
		{"trains", []string{"trains", target, "--rate", "100M", "--rtt", "1ms"}, false},
		{"sweep window", []string{"sweep", "window", target, "--from", "4mss", "--to", "8mss", "--step", "4mss", "-t", "1s", "--baseline-probes", "3"}, false},
		{"sweep msglen", []string{"sweep", "msglen", target, "--sizes", "1024,8192", "-t", "1s"}, false},
		{"unreach", []string{"unreach", "127.0.0.1", "-n", "5", "-i", "10ms"}, false},
		{"unreach rate search", []string{"unreach", "127.0.0.1", "--rate-search", "--max-rate", "500", "--trial", "200ms", "--wait", "200ms"}, false},
		{"stamp", []string{"stamp", startReflector(t), "-n", "5", "-i", "10ms", "--stateful"}, false},
		{"rfc2544", []string{"rfc2544", target, "--rate", "100M", "--sizes", "1518", "--direction", "up", "--trial", "200ms", "--resolution", "10", "--tests", "throughput,loss"}, false},
		{"y1564", []string{"y1564", target, "--service", "name=data,cir=10M,eir=5M", "--skip-config", "--perf-time", "2s", "--direction", "up"}, true}, // loopback polices nothing: its configuration test would FAIL (exit 1), so it is skipped; the lab's TestY1564Policer validates one
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := run(t, tc.verdict, tc.args...)
			var head struct {
				Test string `json:"test"`
			}
			if err := json.Unmarshal(doc, &head); err != nil {
				t.Fatalf("%v\n%s", err, doc)
			}
			seen[head.Test] = true
			resulttest.Validate(t, doc)
		})
	}
	for _, k := range result.Kinds() {
		if !seen[k.Test] {
			t.Errorf("no command here emitted a %q document: add one", k.Test)
		}
	}
}

// run runs the binary with args and --json, at most 60 s, and returns its
// stdout; a failed command fails the test with its stderr, but for exit
// status 1 when verdict says that is the test's verdict (its document is
// judged as any other).
func run(t *testing.T, verdict bool, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, "--json")...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if verdict && errors.As(err, &ee) && ee.ExitCode() == 1 && len(out) > 0 {
		t.Logf("fullpipe %s: exit 1, a verdict: %s", strings.Join(args, " "), strings.TrimSpace(stderr.String()))
		return out
	}
	if err != nil {
		t.Fatalf("fullpipe %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// startResponder runs `fullpipe serve` on a free loopback port until the
// test ends and returns its address once it accepts connections (polled
// every 20 ms for at most 5 s).
func startResponder(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	srv := exec.Command(bin, "serve", "-q", "-l", addr)
	var stderr strings.Builder
	srv.Stderr = &stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	t.Cleanup(func() {
		_ = srv.Process.Kill()
		<-exited
	})
	for deadline := time.Now().Add(5 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			return addr
		}
		select {
		case err := <-exited:
			t.Fatalf("responder exited: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("responder at %s not listening after 5 s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond) // real time: waits for a responder process to listen on a real socket
	}
}

// startReflector runs `fullpipe reflector --stateful` on a free loopback
// UDP port until the test ends and returns its address once it logged
// that it listens (polled every 20 ms for at most 5 s).
func startReflector(t *testing.T) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := c.LocalAddr().String()
	c.Close()
	cmd := exec.Command(bin, "reflector", "--stateful", "--listen", addr)
	var stderr syncBuilder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	for range 250 {
		if strings.Contains(stderr.String(), "stamp reflector listening") {
			return addr
		}
		select {
		case err := <-exited:
			t.Fatalf("reflector exited: %v\n%s", err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("reflector not listening after 5 s:\n%s", stderr.String())
	return ""
}

// syncBuilder is a strings.Builder a process writes while the test reads.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
