// Package frame is the arithmetic of packets and frames, defined once:
// the IP, UDP, ICMP and TCP header sizes, what an Ethernet frame adds
// around its IP packet and what the line adds around the frame, the
// framings a bottleneck may count (Ethernet, 802.1Q and 802.1ad tags,
// PPP, ATM cells), RFC 2544's frame sizes, and the mapping between a
// UDP payload, its IP packet, the Ethernet frame that carries it and
// the bytes that frame costs the line. RFC 2544, Y.1564, the bit-error
// model, RFC 6349's framing, the lab's emulator and the scripted
// network all count bytes with it.
package frame

// Header sizes, bytes.
const (
	IPv4Header = 20 // without options
	IPv6Header = 40
	UDPHeader  = 8
	// ICMPHeader is an ICMP message's fixed part: type, code, checksum
	// and four bytes its type defines (an echo's identifier and
	// sequence number, a frag-needed's next-hop MTU).
	ICMPHeader = 8
	// TCPHeader is a TCP segment's header without options.
	TCPHeader = 20
	// TCPTimestamps is the timestamp option (RFC 7323) as Linux puts it
	// on every segment: 10 bytes and two NOPs that align it.
	TCPTimestamps = 12
	// IPv4UDP and IPv6UDP are a UDP datagram's bytes beyond its payload
	// in its IP packet.
	IPv4UDP = IPv4Header + UDPHeader
	IPv6UDP = IPv6Header + UDPHeader
	// IPv4TCP is a TCP segment's headers in its IPv4 packet, options
	// left out: what an MSS is below the MTU (RFC 879).
	IPv4TCP = IPv4Header + TCPHeader
)

// Ethernet, bytes.
const (
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
	// EthernetMTU is the largest IP packet a standard frame carries:
	// 1518 − 18.
	EthernetMTU = 1500
	// MinFrame is the shortest Ethernet frame (header and FCS counted):
	// a shorter one is padded to it, so a small packet costs the line
	// as much as a 46-byte one.
	MinFrame = 64
	// Jumbo is the jumbo frame size RFC 2544 tests add where the path's
	// MTU (9000) allows.
	Jumbo = 9018
	// MaxDSCP is the largest Differentiated Services code point: the
	// field is 6 bits of the IP header's traffic class (RFC 2474).
	MaxDSCP = 63
)

// Framings: what other links cost per IP packet beyond its bytes.
const (
	// VLANTag is one 802.1Q tag, inside the Ethernet header.
	VLANTag = 4
	// VLANWire and QinQWire are EthernetWire with one tag (802.1Q) and
	// with two (802.1ad).
	VLANWire = EthernetWire + VLANTag
	QinQWire = EthernetWire + 2*VLANTag
	// PPPWire is PPP in HDLC-like framing (RFC 1662), as on a T1 or
	// T3: 4 bytes of address, control and protocol, 2 flags and a
	// 16-bit FCS.
	PPPWire = 8
	// ATMCell is an ATM cell on the line, ATMCellPayload what of it
	// carries data; AAL5Trailer is what AAL5 adds to each packet
	// before cutting it into cells (the last one padded).
	ATMCell        = 53
	ATMCellPayload = 48
	AAL5Trailer    = 8
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

// OfIPPacket is the Ethernet frame an IP packet of ip bytes makes:
// ip + 18 (IPPacket's inverse; no padding to MinFrame).
func OfIPPacket(ip int) int { return ip + EthernetHeaderFCS }

// Wire is what an Ethernet frame of frame bytes costs the line: the
// frame, its preamble and the gap after it (frame + 20). A line of R
// bit/s carries R / (8 × Wire(frame)) such frames a second.
func Wire(frame int) int { return frame + EthernetGap }

// MSS is the maximum segment size a host announces for an IPv4 path of
// mtu bytes: mtu − 40 (RFC 879; the kernel takes options off itself).
func MSS(mtu int) int { return mtu - IPv4TCP }

// Segment is the TCP payload of a full-sized segment on an IPv4 path
// of mtu bytes, sent with timestamps as Linux sends by default:
// mtu − 52 (1500 → 1448).
func Segment(mtu int) int { return MSS(mtu) - TCPTimestamps }

// ATMCells is how many ATM cells carry an IP packet of ip bytes in
// AAL5: the packet and its trailer, padded to whole cell payloads.
func ATMCells(ip int) int { return (ip + AAL5Trailer + ATMCellPayload - 1) / ATMCellPayload }
