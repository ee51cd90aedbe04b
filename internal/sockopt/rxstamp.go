package sockopt

import (
	"encoding/binary"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// EnableRxTimestamps asks the kernel to stamp each datagram the socket
// receives with the time it arrived (SO_TIMESTAMPNS, CLOCK_REALTIME,
// nanoseconds), so a reader that is scheduled late still knows when each
// packet came: what a packet train's spacing needs.
func EnableRxTimestamps(rc syscall.RawConn) error {
	err := control(rc, func(fd int) error { return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) })
	if err != nil {
		return fmt.Errorf("receive timestamps (SO_TIMESTAMPNS): %w", err)
	}
	return nil
}

// RxTimestampSpace is the control-message space one receive stamp needs
// (the oob buffer of ReadMsgUDP).
var RxTimestampSpace = unix.CmsgSpace(16)

// RxTimestamp returns the kernel's receive time from a datagram's control
// messages; ok is false when there is none.
func RxTimestamp(oob []byte) (t time.Time, ok bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= 16 {
			// struct timespec on 64-bit Linux: two native int64s.
			sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
			return time.Unix(sec, nsec), true
		}
	}
	return time.Time{}, false
}
