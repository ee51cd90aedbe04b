package sockopt

import (
	"encoding/binary"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// EnableRxStamps asks the kernel to stamp each datagram the socket
// receives with the time it arrived (SO_TIMESTAMPNS, CLOCK_REALTIME, ns),
// so a reader scheduled late still knows when each packet came, and with
// the count of datagrams the socket itself dropped so far (SO_RXQ_OVFL),
// so losses of this host are not taken for losses of the network. Both
// are what a packet train's reading needs.
func EnableRxStamps(rc syscall.RawConn) error {
	err := control(rc, func(fd int) error {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
			return fmt.Errorf("SO_TIMESTAMPNS: %w", err)
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 1); err != nil {
			return fmt.Errorf("SO_RXQ_OVFL: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("receive stamps: %w", err)
	}
	return nil
}

// RxStampSpace is the control-message space a datagram's stamp and drop
// count need (the oob buffer of ReadMsgUDP).
var RxStampSpace = unix.CmsgSpace(16) + unix.CmsgSpace(4) + unix.CmsgSpace(4)

// RxStamp is what the kernel said of one received datagram.
type RxStamp struct {
	At      time.Time // when it arrived (Stamped)
	Stamped bool
	Drops   uint32 // datagrams this socket dropped for want of buffer so far (Counted; sent only once there is one)
	Counted bool
	// GSOSize, on a socket with SetUDPGRO, is the size of each of the
	// datagrams the buffer holds (the last may be shorter): the kernel
	// coalesced them; 0 for one datagram.
	GSOSize int
}

// ParseRxStamp reads a datagram's control messages.
func ParseRxStamp(oob []byte) RxStamp {
	var r RxStamp
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return r
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_UDP && m.Header.Type == unix.UDP_GRO && len(m.Data) >= 4 {
			r.GSOSize = int(binary.NativeEndian.Uint32(m.Data[0:4]))
		}
		if m.Header.Level != unix.SOL_SOCKET {
			continue
		}
		switch {
		case m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= 16:
			// struct timespec on 64-bit Linux: two native int64s.
			sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
			r.At, r.Stamped = time.Unix(sec, nsec), true
		case m.Header.Type == unix.SO_RXQ_OVFL && len(m.Data) >= 4:
			r.Drops, r.Counted = binary.NativeEndian.Uint32(m.Data[0:4]), true
		}
	}
	return r
}

// SetRecvErr makes a UDP socket report errors of its own sends (IP_RECVERR,
// IPV6_RECVERR): without it Linux drops a datagram the device queue has no
// room for and reports success, so a train's sender would take its own
// drop for the network's.
func SetRecvErr(rc syscall.RawConn, v6 bool) error {
	err := control(rc, func(fd int) error {
		if v6 {
			return unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_RECVERR, 1)
		}
		return unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_RECVERR, 1)
	})
	if err != nil {
		return fmt.Errorf("IP_RECVERR: %w", err)
	}
	return nil
}

// SetUDPGRO turns UDP receive coalescing on or off (UDP_GRO): with it,
// datagrams of one flow and one size that arrive together (or were sent
// as one GSO buffer) come up as one buffer, read in one call, with their
// size in a control message (RxStamp.GSOSize) and one receive stamp for
// all: what a reader of a fast stream wants, and what a reader of a
// train's arrival times must not have.
func SetUDPGRO(rc syscall.RawConn, on bool) error {
	v := 0
	if on {
		v = 1
	}
	return control(rc, func(fd int) error { return unix.SetsockoptInt(fd, unix.SOL_UDP, unix.UDP_GRO, v) })
}
