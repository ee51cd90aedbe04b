package sockopt

import (
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func pair(t *testing.T) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() { c, _ := ln.Accept(); ch <- c }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-ch
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

func raw(t *testing.T, c *net.TCPConn) syscall.RawConn {
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

func TestCongestionRoundTrip(t *testing.T) {
	c, _ := pair(t)
	rc := raw(t, c)
	avail, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if !strings.Contains(string(avail), "reno") {
		t.Skip("reno not available")
	}
	if err := SetCongestion(rc, "reno"); err != nil {
		t.Fatal(err)
	}
	got, err := Congestion(rc)
	if err != nil || strings.TrimRight(got, "\x00") != "reno" {
		t.Fatalf("congestion = %q, %v", got, err)
	}
	if err := SetCongestion(rc, "no-such-cc"); err == nil {
		t.Fatal("unknown algorithm accepted")
	}
}

func TestBuffersReportGranted(t *testing.T) {
	c, _ := pair(t)
	got, err := SetSendBuffer(raw(t, c), 256<<10)
	if err != nil {
		t.Fatal(err)
	}
	// Linux doubles the request (bookkeeping); it must be at least what
	// was asked when below wmem_max.
	if got < 256<<10 {
		t.Fatalf("send buffer %d < requested", got)
	}
}

func TestQueues(t *testing.T) {
	c, s := pair(t)
	if _, err := c.Write(make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	// Readable only once all 1000 bytes are queued (SO_RCVLOWAT): the
	// kernel says when, 2 s at most.
	if !readable(t, raw(t, s), 1000, 2*time.Second) {
		t.Fatal("1000 bytes not queued within 2 s")
	}
	if n, err := InQ(raw(t, s)); err != nil || n != 1000 {
		t.Fatalf("SIOCINQ = %d, %v, want 1000", n, err)
	}
	if q, err := OutQ(raw(t, c)); err != nil || q != 0 {
		t.Fatalf("SIOCOUTQ after ack = %d, %v", q, err)
	}
}

// readable waits until at least lowat bytes are queued on rc's TCP
// socket (SO_RCVLOWAT, then poll), d at most, and reports whether they
// are.
func readable(t *testing.T, rc syscall.RawConn, lowat int, d time.Duration) bool {
	t.Helper()
	var n int
	var err error
	cerr := rc.Control(func(fd uintptr) {
		if err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT, lowat); err != nil {
			return
		}
		n, err = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(d/time.Millisecond))
	})
	if err = errors.Join(cerr, err); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func TestDSCPRange(t *testing.T) {
	c, _ := pair(t)
	if err := SetDSCP(raw(t, c), 64, false); err == nil {
		t.Fatal("DSCP 64 accepted")
	}
	if err := SetDSCP(raw(t, c), 46, false); err != nil {
		t.Fatal(err)
	}
	if err := SetMaxPacingRate(raw(t, c), 100_000_000); err != nil {
		t.Fatal(err)
	}
}
