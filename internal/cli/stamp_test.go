package cli

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
)

// freeUDPPort is a UDP port on 127.0.0.1 free a moment ago (the kernel's
// pick for :0, released).
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// waitReflector waits until a reflector at addr answers one test packet,
// 5 s at most (50 tries of 100 ms).
func waitReflector(t *testing.T, addr string) {
	t.Helper()
	probeUntilUp(t, addr)
}

// runBackground runs the command args in-process until the test ends or
// stop is called: stop cancels its context and returns its exit status;
// the test fails if it is still running 10 s later. Its stderr is in the
// buffer, its stdout dropped.
func runBackground(t *testing.T, args ...string) (stderr *logBuffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr = newLogBuffer()
	done := make(chan int, 1)
	go func() { done <- Run(ctx, args, io.Discard, stderr) }()
	var once sync.Once
	exit := -1
	stop = func() int {
		once.Do(func() {
			cancel()
			select {
			case exit = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("%q still running 10 s after its context ended", args)
			}
		})
		return exit
	}
	t.Cleanup(func() { stop() })
	return stderr, stop
}

// stampJSON runs fullpipe stamp in-process with args and decodes its
// document.
func stampJSON(t *testing.T, args ...string) (int, *result.STAMP, string) {
	t.Helper()
	code, out, errs := run(t, context.Background(), append(append([]string{"stamp"}, args...), "--json")...)
	var d result.STAMP
	if out != "" {
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("stamp %q: %v in %q", args, err, out)
		}
	}
	return code, &d, errs
}

// TestServeStamp: serve --stamp runs the reflector beside the responder;
// fullpipe stamp measures against it (stateful: every packet numbered,
// no loss placed anywhere on loopback); Ctrl-C (the context) stops both
// and the reflector logs what it did. --stamp-* without --stamp is a
// usage error.
func TestServeStamp(t *testing.T) {
	port := freeUDPPort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	errb, stop := runBackground(t, "serve", "-l", "127.0.0.1:0", "--stamp", "--stamp-listen", addr, "--stamp-stateful")
	waitReflector(t, addr)
	code, d, errs := stampJSON(t, addr, "-n", "20", "-i", "5ms", "--stateful", "--timeout", "500ms")
	s := d.Summary
	if code != ExitOK || s.Sent != 20 || s.Received != 20 || !s.LossByDirection || s.RTT.Count != 20 || s.RTT.Side != result.STAMPSideTester {
		t.Fatalf("stamp: exit %d, stderr %q, summary %+v", code, errs, s)
	}
	if s.Forward != nil || !strings.Contains(s.OneWay, "not reported") || d.Config.Port != port || d.Test != "stamp" {
		t.Errorf("one-way figures without --clock-synced, or config wrong: %+v %+v", s, d.Config)
	}
	if exit := stop(); exit != ExitOK {
		t.Errorf("serve: exit %d on cancel; stderr %s", exit, errb.String())
	}
	if log := errb.String(); !strings.Contains(log, "stamp reflector listening") || !strings.Contains(log, "stamp reflector stopped") || !strings.Contains(log, "reflected=21") {
		t.Errorf("serve's log lacks the reflector's start, or its end with 21 reflected (1 wait probe + 20):\n%s", log)
	}
	if c, _, errs := run(t, context.Background(), "serve", "--stamp-stateful"); c != ExitUsage || !strings.Contains(errs, "--stamp-stateful needs --stamp") {
		t.Errorf("serve --stamp-stateful alone: exit %d, %q", c, errs)
	}
}

// TestStampAuthenticated: the standalone reflector with a key file
// answers fullpipe stamp with the same key (112-byte packets); a wrong
// key gets no reply it accepts (exit 3, the bad HMACs counted); a key
// file under 16 bytes is refused on the command line.
func TestStampAuthenticated(t *testing.T) {
	dir := t.TempDir()
	key, wrong, short := filepath.Join(dir, "k"), filepath.Join(dir, "w"), filepath.Join(dir, "s")
	for f, b := range map[string]string{key: "0123456789abcdef0123456789abcdef\n", wrong: "fedcba9876543210fedcba9876543210", short: "abc"} {
		if err := os.WriteFile(f, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr := "127.0.0.1:" + strconv.Itoa(freeUDPPort(t))
	// An authenticated reflector answers no unauthenticated probe, so
	// waitReflector cannot tell: its start line, logged once bound.
	if errb, _ := runBackground(t, "reflector", "--listen", addr, "--key-file", key); !errb.waitContains(5*time.Second, "stamp reflector listening") {
		t.Fatalf("no start line within 5 s: %q", errb.String())
	}
	code, d, _ := stampJSON(t, addr, "-n", "10", "-i", "5ms", "--key-file", key, "--timeout", "300ms")
	if code != ExitOK || d.Summary.Received != 10 || d.Config.Size != result.STAMPAuthSize {
		t.Fatalf("authenticated: exit %d, %+v", code, d.Summary)
	}
	code, d, errs := stampJSON(t, addr, "-n", "5", "-i", "5ms", "--key-file", wrong, "--timeout", "300ms")
	if code != ExitRefused || d.Summary.Received != 0 || !strings.Contains(errs, "same key") {
		t.Errorf("wrong key: exit %d, %+v, %q; want exit 3 and no reply", code, d.Summary, errs)
	}
	if c, _, errs := run(t, context.Background(), "stamp", addr, "--key-file", short); c != ExitUsage || !strings.Contains(errs, "16 bytes") {
		t.Errorf("short key: exit %d, %q", c, errs)
	}
}
