package flow

import (
	"errors"
	"io"
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// RecvSize is the most bytes one read takes from a TCP stream; a read
// returns what the socket holds, up to this. With MSG_TRUNC the buffer is
// never touched, but reads of 1 MiB measured no better than 128 KiB on
// loopback (2026-11-24: goodput × 0.99, CPU per Gbit × 0.96, 6 rounds),
// so the buffer stays small for the copying fallback's sake.
const RecvSize = 128 << 10

// recvFunc makes one non-blocking receive on fd into b: the bytes taken
// (0 at EOF) or the errno.
type recvFunc func(fd uintptr, b []byte) (int, error)

// recvTrunc receives with MSG_TRUNC: on a TCP socket Linux drops up to
// len(b) queued bytes without copying them and returns how many it
// dropped (tcp(7)), which is all a receiver that only counts needs
// (iperf3's --skip-rx-copy does the same).
func recvTrunc(fd uintptr, b []byte) (int, error) {
	for {
		n, _, e := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), unix.MSG_TRUNC, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(n), nil
	}
}

// discarder reads a TCP stream's bytes to count them, without copying
// them where the kernel allows. Used by one goroutine.
type discarder struct {
	c    *net.TCPConn
	rc   syscall.RawConn // nil: read by copying
	recv recvFunc
	buf  []byte
}

func newDiscarder(c *net.TCPConn) *discarder {
	d := &discarder{c: c, recv: recvTrunc, buf: make([]byte, RecvSize)}
	if rc, err := c.SyscallConn(); err == nil {
		d.rc = rc
	}
	return d
}

// read takes the next bytes from the stream and returns how many; io.EOF
// when the peer has closed. Deadlines set on c apply. If the kernel
// refuses MSG_TRUNC on the socket (EINVAL, EOPNOTSUPP: not Linux's TCP),
// it reads by copying from then on.
func (d *discarder) read() (int, error) {
	if d.rc == nil {
		return d.c.Read(d.buf)
	}
	var n int
	var errno error
	err := d.rc.Read(func(fd uintptr) bool {
		n, errno = d.recv(fd, d.buf)
		return !errors.Is(errno, unix.EAGAIN)
	})
	switch {
	case err != nil:
		return 0, err
	case errors.Is(errno, unix.EINVAL) || errors.Is(errno, unix.EOPNOTSUPP):
		d.rc = nil
		return d.c.Read(d.buf)
	case errno != nil:
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: d.c.LocalAddr(), Addr: d.c.RemoteAddr(), Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}
