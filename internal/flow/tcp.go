// Package flow moves bytes: TCP senders and receivers, paced UDP senders and
// receivers. It knows nothing of the control protocol; callers own the
// sockets' lifetimes and pass a Clock so that every timestamp of a test is on
// one monotonic time base.
package flow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fullpipe/fullpipe/internal/sockopt"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// DefaultWriteSize is the size of one write on a TCP stream when the test
// does not set one: large writes keep the per-byte syscall cost low. On
// loopback 1 MiB writes gave 1.33 × the goodput of 128 KiB ones (iperf3's
// size) at 0.76 × the CPU per Gbit; 512 KiB was 3 % slower, 2 and 4 MiB
// no faster (2026-11-24, 5-6 alternated rounds each). The sender counts
// bytes as each system call takes them, so a large write does not make
// its counter coarse.
const DefaultWriteSize = 1 << 20

// Clock is a monotonic time base: the offset since the test's start.
type Clock struct{ start time.Time }

// NewClock starts a clock now.
func NewClock() Clock { return Clock{start: time.Now()} }

// Since returns the monotonic time elapsed since the clock started.
func (c Clock) Since() time.Duration { return time.Since(c.start) }

// Start returns the wall-clock start (for labels only).
func (c Clock) Start() time.Time { return c.start }

// Counter holds one stream's live figures. Writers are the stream's single
// goroutine; readers (interval samplers) use the atomic loads.
type Counter struct {
	Bytes       atomic.Int64 // payload bytes moved (written or read)
	FirstNs     atomic.Int64 // first byte read, ns on the Clock; 0 = none yet
	LastNs      atomic.Int64 // last byte read, ns on the Clock
	InflightMax atomic.Int64 // sender with a window: most bytes in flight seen
	Writes      atomic.Int64 // sender: write calls made
	Series      *Series      // receiver: when set, bytes per 10 ms bin; set before the stream starts
}

// SendSpec says how much a TCP sender sends.
type SendSpec struct {
	// Bytes to send in total; 0 sends until ctx ends.
	Bytes int64
	// Window, when > 0, bounds the bytes in flight (unacknowledged plus
	// queued in the kernel) to exactly this many: the sender writes only
	// while SIOCOUTQ is below it. RFC 6349 defines the window as
	// min(send buffer, receive window), so bounding the sender is the
	// exact, kernel-independent way to set it (see docs/protocol.md).
	Window int
	// Test, when set, is the whole test's context: after the sender stops
	// (ctx ends or Bytes are written) it waits for the last bytes to be
	// acknowledged until Test ends, so its final TCP_INFO is complete.
	Test context.Context
	// WriteSize is the bytes of each write call; 0 means DefaultWriteSize.
	WriteSize int
}

func (s SendSpec) bufSize() int {
	if s.WriteSize > 0 {
		return s.WriteSize
	}
	return DefaultWriteSize
}

// SendTCP writes to c until spec is met or ctx ends, counting into ctr, then
// half-closes the connection (FIN) so the receiver sees the end. A ctx that
// ends is not an error; a failing write is.
func SendTCP(ctx context.Context, c *net.TCPConn, spec SendSpec, ctr *Counter) error {
	stop := context.AfterFunc(ctx, func() { _ = c.SetWriteDeadline(time.Unix(1, 0)) })
	defer stop()
	var err error
	if spec.Window > 0 {
		err = sendWindowed(ctx, c, spec, ctr)
	} else {
		err = sendPlain(c, spec, ctr)
	}
	if ctx.Err() != nil && isDeadline(err) {
		err = nil
	}
	if err == nil {
		_ = c.SetWriteDeadline(time.Time{})
		err = c.CloseWrite()
	}
	if err == nil && spec.Test != nil {
		drain(spec.Test, c)
	}
	return err
}

// drain waits until everything written has been acknowledged (SIOCOUTQ
// is 0), so that the TCP_INFO sampled after the sender returns counts
// every byte sent and retransmitted. It gives up after wire.DrainMax,
// when ctx ends, or when the socket fails.
func drain(ctx context.Context, c *net.TCPConn) {
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	deadline := time.Now().Add(wire.DrainMax)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if q, err := sockopt.OutQ(rc); err != nil || q == 0 {
			return
		}
		time.Sleep(time.Millisecond) // not a hot path: once per stream at its end
	}
}

func isDeadline(err error) bool {
	return err != nil && errors.Is(err, os.ErrDeadlineExceeded)
}

func sendPlain(c *net.TCPConn, spec SendSpec, ctr *Counter) error {
	w, err := newWriter(c, spec.bufSize())
	if err != nil {
		return err
	}
	for spec.Bytes == 0 || ctr.Bytes.Load() < spec.Bytes {
		if err := w.writeCounted(len(w.buf), spec, ctr); err != nil {
			return err
		}
	}
	return nil
}

// writer makes a sender's write calls on its socket's file descriptor.
// Used by one goroutine.
type writer struct {
	c   *net.TCPConn
	rc  syscall.RawConn
	buf []byte
}

func newWriter(c *net.TCPConn, size int) (*writer, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	return &writer{c: c, rc: rc, buf: make([]byte, size)}, nil
}

// writeCounted writes one message of n bytes (at most len(w.buf)), cut to
// what spec.Bytes has left, and counts the call. Bytes are counted as
// each system call takes them, so a large message that the socket takes
// in parts shows in the counter as it goes, not only once complete.
// Deadlines set on the connection apply.
func (w *writer) writeCounted(n int, spec SendSpec, ctr *Counter) error {
	defer ctr.Writes.Add(1)
	b := w.buf[:n]
	if spec.Bytes > 0 {
		b = b[:min(int64(n), spec.Bytes-ctr.Bytes.Load())]
	}
	for len(b) > 0 {
		var m int
		var errno error
		err := w.rc.Write(func(fd uintptr) bool {
			m, errno = writeFD(fd, b)
			return !errors.Is(errno, unix.EAGAIN)
		})
		if err == nil && errno != nil {
			err = &net.OpError{Op: "write", Net: "tcp", Source: w.c.LocalAddr(), Addr: w.c.RemoteAddr(), Err: errno}
		}
		if err != nil {
			return err
		}
		ctr.Bytes.Add(int64(m))
		b = b[m:]
	}
	return nil
}

// writeFD makes one non-blocking write of b on fd.
func writeFD(fd uintptr, b []byte) (int, error) {
	for {
		n, err := unix.Write(int(fd), b)
		if err != unix.EINTR {
			return max(n, 0), err
		}
	}
}

// windowPoll is how often a window-limited sender looks at SIOCOUTQ while
// the window is full. nanosleep on a locked thread overshoots by ~50-100 µs
// here (kernel-notes), so this keeps the window's refill lag well below a
// millisecond, small against the RTTs where a window matters.
const windowPoll = 100 * time.Microsecond

func sendWindowed(ctx context.Context, c *net.TCPConn, spec SendSpec, ctr *Counter) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	defer lockPaced()()
	w := &writer{c: c, rc: rc, buf: make([]byte, spec.bufSize())}
	ts := unix.NsecToTimespec(int64(windowPoll))
	for spec.Bytes == 0 || ctr.Bytes.Load() < spec.Bytes {
		if ctx.Err() != nil {
			return nil
		}
		outq, err := sockopt.OutQ(rc)
		if err != nil {
			return err
		}
		if notsent, err := sockopt.NotSent(rc); err == nil {
			if f := int64(outq - notsent); f > ctr.InflightMax.Load() {
				ctr.InflightMax.Store(f)
			}
		}
		room := spec.Window - outq
		if room <= 0 {
			_ = unix.Nanosleep(&ts, nil)
			continue
		}
		if err := w.writeCounted(min(room, len(w.buf)), spec, ctr); err != nil {
			return err
		}
	}
	return nil
}

// RecvTCP reads c until EOF or ctx ends, counting into ctr with receive
// timestamps on clk. EOF is the normal end; a ctx that ends returns nil too
// (the caller knows it stopped early). The bytes are counted, never looked
// at: where Linux allows it they are dropped in the kernel without being
// copied (see discarder).
func RecvTCP(ctx context.Context, c *net.TCPConn, clk Clock, ctr *Counter) error {
	return recvCounted(ctx, newDiscarder(c), clk, ctr)
}

func recvCounted(ctx context.Context, d *discarder, clk Clock, ctr *Counter) error {
	c := d.c
	stop := context.AfterFunc(ctx, func() { _ = c.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	for {
		n, err := d.read()
		if n > 0 {
			now := int64(clk.Since())
			if ctr.FirstNs.Load() == 0 {
				ctr.FirstNs.Store(max(now, 1))
			}
			ctr.LastNs.Store(now)
			ctr.Bytes.Add(int64(n))
			if ctr.Series != nil {
				ctr.Series.Add(time.Duration(now), n)
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) || (ctx.Err() != nil && isDeadline(err)) {
				return nil
			}
			return err
		}
	}
}

// SizeSendBuffer makes sure a sender's buffer can hold window bytes in
// flight. Linux autotunes the send buffer up to tcp_wmem's maximum (4 MiB
// here), so only a window above 1 MiB gets an explicit buffer: twice the
// window, forced past wmem_max when force is set and the process is root.
func SizeSendBuffer(rc syscall.RawConn, window int, force bool) error {
	const autotuneSafe = 1 << 20
	if window <= autotuneSafe {
		return nil
	}
	set := sockopt.SetSendBufferCapped
	if force {
		set = sockopt.SetSendBuffer
	}
	got, err := set(rc, 2*window)
	if err != nil {
		return fmt.Errorf("send buffer for a %d-byte window: %w", window, err)
	}
	if got < window {
		return fmt.Errorf("send buffer is %d bytes, below the %d-byte window: run as root or raise net.core.wmem_max", got, window)
	}
	return nil
}

// DefaultCC is the kernel's default congestion control, "" if unknown.
func DefaultCC() string {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Share is stream i's part of total bytes over n streams (the remainder
// goes to stream 0); 0 when total is 0.
func Share(total int64, n, i int) int64 {
	if total <= 0 || n <= 0 {
		return 0
	}
	s := total / int64(n)
	if i == 0 {
		s += total % int64(n)
	}
	return s
}
