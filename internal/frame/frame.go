// Package frame is the arithmetic of packets and frames, defined once:
// the IP and UDP header sizes, what an Ethernet frame adds around its IP
// packet and what the line adds around the frame, RFC 2544's frame
// sizes, and the mapping between a UDP payload, its IP packet and the
// Ethernet frame that carries it. RFC 2544, Y.1564, the bit-error
// model, RFC 6349's framing, the lab's emulator and the scripted
// network all count bytes with it.
package frame

// Header and framing sizes, bytes.
const (
	IPv4Header = 20
	IPv6Header = 40
	UDPHeader  = 8
	// IPv4UDP and IPv6UDP are a UDP datagram's bytes beyond its payload
	// in its IP packet.
	IPv4UDP = IPv4Header + UDPHeader
	IPv6UDP = IPv6Header + UDPHeader
	// EthernetHeaderFCS is what an Ethernet frame adds around its IP
	// packet: the header (14) and the FCS (4). RFC 2544's frame sizes
	// include both.
	EthernetHeaderFCS = 18
	// EthernetGap is what the line adds around each frame: the preamble
	// and start delimiter (8) and the least inter-frame gap (12).
	EthernetGap = 20
	// EthernetWire is what an IP packet costs an Ethernet line beyond
	// its own bytes (RFC 6349 §4.1.1's 38): EthernetHeaderFCS and
	// EthernetGap.
	EthernetWire = EthernetHeaderFCS + EthernetGap
	// Jumbo is the jumbo frame size RFC 2544 tests add where the path's
	// MTU (9000) allows.
	Jumbo = 9018
	// MaxDSCP is the largest Differentiated Services code point: the
	// field is 6 bits of the IP header's traffic class (RFC 2474).
	MaxDSCP = 63
)

// RFC2544Sizes are RFC 2544 §9.1's Ethernet frame sizes, bytes; a new
// slice each call.
func RFC2544Sizes() []int { return []int{64, 128, 256, 512, 1024, 1280, 1518} }

// IPUDP is a UDP datagram's header bytes in its IP packet: IPv4UDP or
// IPv6UDP.
func IPUDP(ipv6 bool) int {
	if ipv6 {
		return IPv6UDP
	}
	return IPv4UDP
}

// UDPPayload is the UDP payload an Ethernet frame of frame bytes carries:
// frame − 46 over IPv4 (64 → 18), frame − 66 over IPv6 (84 → 18).
func UDPPayload(frame int, ipv6 bool) int { return frame - EthernetHeaderFCS - IPUDP(ipv6) }

// OfUDPPayload is the Ethernet frame a UDP payload of payload bytes makes
// (UDPPayload's inverse).
func OfUDPPayload(payload int, ipv6 bool) int { return payload + IPUDP(ipv6) + EthernetHeaderFCS }

// IPPacket is the IP packet an Ethernet frame of frame bytes carries:
// frame − 18.
func IPPacket(frame int) int { return frame - EthernetHeaderFCS }
