package testkit

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"syscall"

	"github.com/fullpipe/fullpipe/internal/frame"
)

// ForgeUDP sends payload to dst as an IPv4 UDP datagram from src,
// whatever address and port src is, as an attacker who forges its source
// would: it writes the IP header itself (IPPROTO_RAW implies IP_HDRINCL;
// the kernel fills in the header's checksum) and sends no UDP checksum
// (0: none, allowed in IPv4). It needs root (CAP_NET_RAW). Tests and
// benchmarks only, to loopback or a lab's own addresses.
func ForgeUDP(src, dst netip.AddrPort, payload []byte) error {
	if !src.Addr().Is4() || !dst.Addr().Is4() {
		return fmt.Errorf("forging %s → %s: IPv4 only", src, dst)
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_RAW)
	if err != nil {
		return fmt.Errorf("raw socket: %w", err)
	}
	defer syscall.Close(fd)
	pkt := make([]byte, frame.IPv4UDP+len(payload))
	pkt[0], pkt[8], pkt[9] = 0x45, 64, syscall.IPPROTO_UDP // version 4, a 20-byte header; TTL; protocol
	binary.BigEndian.PutUint16(pkt[2:], uint16(len(pkt)))
	s, d := src.Addr().As4(), dst.Addr().As4()
	copy(pkt[12:16], s[:])
	copy(pkt[16:20], d[:])
	binary.BigEndian.PutUint16(pkt[20:], src.Port())
	binary.BigEndian.PutUint16(pkt[22:], dst.Port())
	binary.BigEndian.PutUint16(pkt[24:], uint16(frame.UDPHeader+len(payload)))
	copy(pkt[frame.IPv4UDP:], payload)
	if err := syscall.Sendto(fd, pkt, 0, &syscall.SockaddrInet4{Addr: d}); err != nil {
		return fmt.Errorf("forged datagram to %s: %w", dst, err)
	}
	return nil
}
