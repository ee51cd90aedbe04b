package cli

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestUnreachLoopback: `fullpipe unreach` to a closed port of the
// loopback (exempt from Linux's ICMP rate limit) counts every datagram's
// port unreachable, exits 0, and writes its page; to an unresolvable
// host it exits 3, and a silent host (a port this test holds open: no error
// comes back) exits 1.
func TestUnreachLoopback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	page := filepath.Join(t.TempDir(), "unreach.html")
	code, out, errs := run(t, ctx, "unreach", "127.0.0.1", "--port", "33999", "-n", "10", "-i", "5ms", "--report", page)
	if code != 0 || !strings.Contains(out, "10 probes, 10 answered") || !strings.Contains(out, "no loss") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), "Single-ended test") {
		t.Errorf("page: %v", err)
	}
	if code, _, errs := run(t, ctx, "unreach", "nosuch.invalid", "-n", "1"); code != 3 {
		t.Errorf("unresolvable host: exit %d, want 3: %s", code, errs)
	}
	open, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	port := strconv.Itoa(open.LocalAddr().(*net.UDPAddr).Port)
	code, out, _ = run(t, ctx, "unreach", "127.0.0.1", "--port", port, "-n", "3", "-i", "5ms", "--wait", "100ms")
	if code != 1 || !strings.Contains(out, "no port unreachable came back") {
		t.Errorf("to a listening port: exit %d, want 1\n%s", code, out)
	}
}
