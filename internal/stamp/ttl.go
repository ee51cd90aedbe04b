package stamp

import (
	"encoding/binary"
	"net"

	"golang.org/x/sys/unix"
)

// ttlSpace is the control-message space of a received TTL or Hop Limit.
var ttlSpace = unix.CmsgSpace(4)

// enableTTL asks the kernel for each datagram's TTL (IPv4, and IPv4 on a
// dual-stack socket) and Hop Limit (IPv6). It reports whether either
// option was taken.
func enableTTL(c *net.UDPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	rc.Control(func(fd uintptr) {
		v4 := unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVTTL, 1) == nil
		v6 := unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_RECVHOPLIMIT, 1) == nil
		ok = v4 || v6
	})
	return ok
}

// parseTTL reads the TTL or Hop Limit from a datagram's control
// messages; false if there is none.
func parseTTL(oob []byte) (uint8, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		v4 := m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_TTL
		v6 := m.Header.Level == unix.IPPROTO_IPV6 && m.Header.Type == unix.IPV6_HOPLIMIT
		if (v4 || v6) && len(m.Data) >= 4 {
			return uint8(binary.NativeEndian.Uint32(m.Data)), true
		}
	}
	return 0, false
}
