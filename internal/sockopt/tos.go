package sockopt

import (
	"encoding/binary"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fullpipe/fullpipe/internal/frame"
)

// TOSCmsg is the control message that marks one datagram sent with
// sendmsg with DSCP dscp (IP_TOS, or IPV6_TCLASS toward an IPv6
// address), for a socket shared by sessions of different code points
// (the responder's): a v4 destination takes IP_TOS even on an IPv6
// socket, as Linux sends to it through IPv4. nil for dscp 0.
func TOSCmsg(dscp int, v6 bool) []byte {
	if dscp <= 0 || dscp > frame.MaxDSCP {
		return nil
	}
	b := make([]byte, unix.CmsgSpace(4))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = unix.IPPROTO_IP, unix.IP_TOS
	if v6 {
		h.Level, h.Type = unix.IPPROTO_IPV6, unix.IPV6_TCLASS
	}
	h.SetLen(unix.CmsgLen(4))
	binary.NativeEndian.PutUint32(b[unix.CmsgLen(0):], uint32(dscp<<2))
	return b
}

// SetRecvTOS asks the kernel to pass each received datagram's TOS byte
// (IP_RECVTOS) or traffic class (IPV6_RECVTCLASS): what marking arrived.
func SetRecvTOS(rc syscall.RawConn, v6 bool) error {
	err := control(rc, func(fd int) error {
		if v6 {
			if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS, 1); err != nil {
				return err
			}
		}
		return unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_RECVTOS, 1)
	})
	if err != nil {
		return fmt.Errorf("IP_RECVTOS: %w", err)
	}
	return nil
}

// ParseDSCP reads the DSCP a datagram arrived with from its control
// messages (SetRecvTOS); ok is false when they carry none.
func ParseDSCP(oob []byte) (dscp int, ok bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		switch {
		case m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_TOS && len(m.Data) >= 1:
			return int(m.Data[0]) >> 2, true
		case m.Header.Level == unix.IPPROTO_IPV6 && m.Header.Type == unix.IPV6_TCLASS && len(m.Data) >= 4:
			return int(binary.NativeEndian.Uint32(m.Data[:4])) >> 2, true
		}
	}
	return 0, false
}

// SegmentCmsg is the control message that makes one sendmsg of a buffer
// many datagrams of size bytes each (UDP GSO, UDP_SEGMENT; the last may
// be shorter): the stack carries them as one packet down to the device
// or its software segmentation.
func SegmentCmsg(size int) []byte {
	b := make([]byte, unix.CmsgSpace(2))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	binary.NativeEndian.PutUint16(b[unix.CmsgLen(0):], uint16(size))
	return b
}
