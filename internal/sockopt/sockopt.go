// Package sockopt sets and reads the Linux socket options fullpipe needs.
// Every function takes a syscall.RawConn so it works before connect (from
// a net.Dialer or net.ListenConfig Control hook) and after.
package sockopt

import (
	"errors"
	"fmt"

	"syscall"

	"golang.org/x/sys/unix"

	"github.com/fullpipe/fullpipe/internal/frame"
)

func control(rc syscall.RawConn, f func(fd int) error) error {
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = f(int(fd)) }); err != nil {
		return err
	}
	return serr
}

// SetCongestion selects the TCP congestion control algorithm by name.
func SetCongestion(rc syscall.RawConn, name string) error {
	err := control(rc, func(fd int) error {
		return unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, name)
	})
	if err != nil {
		return fmt.Errorf("congestion control %q: %w (see /proc/sys/net/ipv4/tcp_available_congestion_control)", name, err)
	}
	return nil
}

// Congestion returns the socket's congestion control algorithm.
func Congestion(rc syscall.RawConn) (string, error) {
	var s string
	err := control(rc, func(fd int) error {
		var err error
		s, err = unix.GetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION)
		return err
	})
	return s, err
}

// SetWindowClamp sets TCP_WINDOW_CLAMP (bytes). See kernel-notes: on its
// own it does not give an exact window on this kernel.
func SetWindowClamp(rc syscall.RawConn, n int) error {
	return control(rc, func(fd int) error {
		return unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_WINDOW_CLAMP, n)
	})
}

// SetMaxSeg sets TCP_MAXSEG (bytes); it must be set before connect to be
// announced in the SYN.
func SetMaxSeg(rc syscall.RawConn, n int) error {
	err := control(rc, func(fd int) error {
		return unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_MAXSEG, n)
	})
	if err != nil {
		return fmt.Errorf("MSS %d bytes: %w", n, err)
	}
	return nil
}

// SetMaxPacingRate caps the socket's pacing rate at bps bits per second
// (SO_MAX_PACING_RATE takes bytes per second).
func SetMaxPacingRate(rc syscall.RawConn, bps int64) error {
	bytesPerSec := uint64(bps / 8)
	if bytesPerSec == 0 {
		bytesPerSec = 1
	}
	return control(rc, func(fd int) error {
		// The kernel accepts a 64-bit value since 4.13 and a 32-bit one
		// before; try the wide form first.
		if err := unix.SetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, bytesPerSec); err == nil {
			return nil
		}
		return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, int(min(bytesPerSec, 1<<32-1)))
	})
}

// SetDSCP marks outgoing packets with the DSCP value (0..63).
func SetDSCP(rc syscall.RawConn, dscp int, ipv6 bool) error {
	if dscp < 0 || dscp > frame.MaxDSCP {
		return fmt.Errorf("DSCP %d out of range 0..63", dscp)
	}
	tos := dscp << 2
	return control(rc, func(fd int) error {
		if ipv6 {
			return unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_TCLASS, tos)
		}
		return unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TOS, tos)
	})
}

// SetSendBuffer asks for an n-byte send buffer, with SO_SNDBUFFORCE when
// allowed (root) so net.core.wmem_max does not cap it, and returns what the
// kernel granted (which Linux reports doubled: the bookkeeping overhead is
// included).
func SetSendBuffer(rc syscall.RawConn, n int) (int, error) {
	return setBuf(rc, n, unix.SO_SNDBUFFORCE, unix.SO_SNDBUF)
}

// SetSendBufferCapped is SetSendBuffer without forcing: net.core.wmem_max
// caps what the kernel grants.
func SetSendBufferCapped(rc syscall.RawConn, n int) (int, error) {
	return setBuf(rc, n, unix.SO_SNDBUF, unix.SO_SNDBUF)
}

// SetRecvBuffer is SetSendBuffer for the receive buffer.
func SetRecvBuffer(rc syscall.RawConn, n int) (int, error) {
	return setBuf(rc, n, unix.SO_RCVBUFFORCE, unix.SO_RCVBUF)
}

func setBuf(rc syscall.RawConn, n, force, plain int) (int, error) {
	var got int
	err := control(rc, func(fd int) error {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, force, n); err != nil {
			if !errors.Is(err, unix.EPERM) {
				return err
			}
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, plain, n); err != nil {
				return err
			}
		}
		var err error
		got, err = unix.GetsockoptInt(fd, unix.SOL_SOCKET, plain)
		return err
	})
	return got, err
}

func ioctlInt(rc syscall.RawConn, req uint) (int, error) {
	var v int
	err := control(rc, func(fd int) error {
		var err error
		v, err = unix.IoctlGetInt(fd, req)
		return err
	})
	return v, err
}

// OutQ is SIOCOUTQ: bytes in the send queue, unacknowledged plus not yet
// sent.
func OutQ(rc syscall.RawConn) (int, error) { return ioctlInt(rc, unix.SIOCOUTQ) }

// NotSent is SIOCOUTQNSD: bytes in the send queue not yet sent. OutQ −
// NotSent is the bytes in flight.
func NotSent(rc syscall.RawConn) (int, error) { return ioctlInt(rc, unix.SIOCOUTQNSD) }

// InQ is SIOCINQ: bytes received and not yet read.
func InQ(rc syscall.RawConn) (int, error) { return ioctlInt(rc, unix.SIOCINQ) }

// SetDontFragment sets IP_MTU_DISCOVER to IP_PMTUDISC_PROBE (DF set,
// local MTU enforced, no PMTU cache updates), for MTU probing.
func SetDontFragment(rc syscall.RawConn, ipv6 bool) error {
	return control(rc, func(fd int) error {
		if ipv6 {
			return unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, unix.IPV6_PMTUDISC_PROBE)
		}
		return unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_PROBE)
	})
}

// PathMTU is IP_MTU of a connected socket.
func PathMTU(rc syscall.RawConn, ipv6 bool) (int, error) {
	var v int
	err := control(rc, func(fd int) error {
		var err error
		if ipv6 {
			v, err = unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MTU)
		} else {
			v, err = unix.GetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU)
		}
		return err
	})
	return v, err
}
