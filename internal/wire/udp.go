package wire

import (
	"encoding/binary"
	"errors"
)

// UDP packets (data and RTT probes) share one header:
//
//	0   4  magic "FPUD"
//	4   1  type (UDPData, UDPEcho, UDPEchoReply, UDPHello)
//	5  16  session cookie
//	21  8  sequence number, from 0
//	29  8  sender timestamp, ns on the sender's monotonic clock
//	37  1  echo mode (echo only): 0 mirror, 1 reply with the header only,
//	       2 reply padded to the size in bytes 38-39, with DF set,
//	       3 mirror with the receive time, 4 mirror with the hold
//	38  2  reply size in bytes for echo mode 2 (UDP payload), big endian
//	40  …  padding to the requested size; in an echo reply of mode 3,
//	       bytes 40-47 are the responder's receive time (EchoStampLen),
//	       of mode 4 the time it held the probe (EchoHeld)
const (
	UDPMagic     = "FPUD"
	UDPHeaderLen = 40
)

// UDP packet types.
const (
	UDPData      byte = 1 // load; counted by the receiver
	UDPEcho      byte = 2 // RTT probe; the responder sends it back as UDPEchoReply
	UDPEchoReply byte = 3
	UDPHello     byte = 4 // tells the responder the client's UDP address
)

// Echo modes: how the responder answers a UDPEcho. Path MTU probing uses
// EchoSmall to test the client → responder direction alone (a small reply
// always gets back) and EchoSized to test the other direction alone (a
// small probe asks for a large reply).
const (
	EchoMirror byte = 0 // the datagram comes back as it was
	EchoSmall  byte = 1 // only the header comes back
	EchoSized  byte = 2 // the reply is EchoSize bytes of UDP payload
	// EchoStamped: the datagram comes back (at least EchoStampLen bytes)
	// with the responder's monotonic receive time, int64 ns since the
	// responder started, big endian at bytes 40-47. With the sender's
	// send time (bytes 29-36) and the reply's arrival time, a tester splits
	// a round trip into its two one-way parts, each up to a constant clock
	// offset that cancels against an unloaded baseline (one-way delay
	// increments need no synchronised clocks).
	EchoStamped byte = 3
	// EchoHeld: the datagram comes back (at least EchoStampLen bytes)
	// with how long the responder held it, int64 ns big endian at bytes
	// 40-47: from its kernel's receive stamp (its read, without one) to
	// the reply's build. A tester takes it out of the round trip, so a
	// responder scheduled late does not lengthen the path (a timed
	// reflector's turnaround, as STAMP's T3 − T2). The tester sends
	// NoHold there: a responder older than this mode mirrors the
	// datagram as it came, and the round trip is taken whole.
	EchoHeld byte = 4
)

// NoHold is what a tester writes at bytes 40-47 of an EchoHeld probe:
// a reply that still carries it came from a responder that mirrors
// unknown modes, and says nothing of its hold.
const NoHold int64 = -1

// EchoStampLen is the shortest reply to a stamped echo: the header and
// the 8-byte receive time.
const EchoStampLen = UDPHeaderLen + 8

// PutEchoStamp writes the responder's receive time into a reply b of at
// least EchoStampLen bytes.
func PutEchoStamp(b []byte, recvNs int64) {
	binary.BigEndian.PutUint64(b[UDPHeaderLen:EchoStampLen], uint64(recvNs))
}

// EchoStamp reads the responder's receive time from a stamped reply; ok is
// false when b is too short to carry one.
func EchoStamp(b []byte) (recvNs int64, ok bool) {
	if len(b) < EchoStampLen {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(b[UDPHeaderLen:EchoStampLen])), true
}

// PutEchoHold writes into a reply (or NoHold into a probe) b of at least
// EchoStampLen bytes the time the responder held it: the field a
// stamped reply's receive time takes.
func PutEchoHold(b []byte, ns int64) { PutEchoStamp(b, ns) }

// EchoHold reads a held reply's hold; ok is false when b is too short
// or carries NoHold (or any negative time).
func EchoHold(b []byte) (ns int64, ok bool) {
	ns, ok = EchoStamp(b)
	return ns, ok && ns >= 0
}

// UDPHeader is the decoded header.
type UDPHeader struct {
	Type     byte
	Cookie   Cookie // zero in a compact header, which carries Tag only
	Seq      uint64
	SentNs   int64
	EchoMode byte
	EchoSize uint16
	// Compact says the datagram carried the compact header (CompactLen
	// bytes): Tag names the session, Seq has 40 bits, EchoMode is mirror.
	Compact bool
	Tag     uint32
}

// Matches reports whether the datagram belongs to the session of cookie
// c: its cookie, or for a compact header its tag.
func (h UDPHeader) Matches(c Cookie) bool {
	if h.Compact {
		return h.Tag == c.Tag()
	}
	return h.Cookie == c
}

// ErrNotUDP says a datagram is not a fullpipe packet.
var ErrNotUDP = errors.New("not a fullpipe UDP packet")

// PutUDP writes h into b: the full header when b holds UDPHeaderLen
// bytes or more, else the compact header (b must then hold CompactLen
// bytes, and h be data, an echo or an echo reply: a compact echo is
// always mirrored, so EchoMode and EchoSize are not sent).
func PutUDP(b []byte, h UDPHeader) {
	if len(b) < UDPHeaderLen {
		putCompact(b, h)
		return
	}
	copy(b[0:4], UDPMagic)
	b[4] = h.Type
	copy(b[5:21], h.Cookie[:])
	binary.BigEndian.PutUint64(b[21:29], h.Seq)
	binary.BigEndian.PutUint64(b[29:37], uint64(h.SentNs))
	b[37] = h.EchoMode
	binary.BigEndian.PutUint16(b[38:40], h.EchoSize)
}

// ParseUDP decodes a header from a datagram.
func ParseUDP(b []byte) (UDPHeader, error) {
	if len(b) >= CompactLen && b[0]&^compactTypeMask == compactMagic {
		return parseCompact(b)
	}
	if len(b) < UDPHeaderLen || string(b[0:4]) != UDPMagic {
		return UDPHeader{}, ErrNotUDP
	}
	var h UDPHeader
	h.Type = b[4]
	if h.Type < UDPData || h.Type > UDPHello {
		return UDPHeader{}, ErrNotUDP
	}
	copy(h.Cookie[:], b[5:21])
	h.Seq = binary.BigEndian.Uint64(b[21:29])
	h.SentNs = int64(binary.BigEndian.Uint64(b[29:37]))
	h.EchoMode = b[37]
	h.EchoSize = binary.BigEndian.Uint16(b[38:40])
	return h, nil
}

// The compact header, for UDP payloads of CompactLen to UDPHeaderLen-1
// bytes (RFC 2544's 64-byte Ethernet frame carries 18 bytes of UDP
// payload over IPv4, too few for the full header):
//
//	0  1  0xC0 | type (UDPData, UDPEcho, UDPEchoReply): never 'F' (0x46),
//	      the full header's first byte
//	1  4  session tag, Cookie.Tag: the responder keeps every live
//	      session's tag distinct
//	5  5  sequence number, 40 bits, big endian
//	10 8  sender timestamp, ns on the sender's monotonic clock
//	18 …  padding
//
// A compact echo is mirrored (its reply is the same datagram, typed
// UDPEchoReply). A hello always has the full header.
const (
	CompactLen       = 18
	compactMagic     = 0xC0
	compactTypeMask  = 0x03
	compactSeqBits   = 40
	compactSeqMask   = 1<<compactSeqBits - 1
	compactTypeFirst = UDPData
	compactTypeLast  = UDPEchoReply
)

// MinUDPSize is the smallest UDP payload of a udp test's or a train's
// datagram: the compact header.
const MinUDPSize = CompactLen

// Tag is the 4-byte session tag a compact header carries for c: its four
// 32-bit words XORed, so a tag reveals no byte of the cookie.
func (c Cookie) Tag() uint32 {
	return binary.BigEndian.Uint32(c[0:4]) ^ binary.BigEndian.Uint32(c[4:8]) ^
		binary.BigEndian.Uint32(c[8:12]) ^ binary.BigEndian.Uint32(c[12:16])
}

func putCompact(b []byte, h UDPHeader) {
	b[0] = compactMagic | h.Type&compactTypeMask
	tag := h.Tag
	if h.Cookie != (Cookie{}) {
		tag = h.Cookie.Tag()
	}
	binary.BigEndian.PutUint32(b[1:5], tag)
	seq := h.Seq & compactSeqMask
	b[5] = byte(seq >> 32)
	binary.BigEndian.PutUint32(b[6:10], uint32(seq))
	binary.BigEndian.PutUint64(b[10:18], uint64(h.SentNs))
}

func parseCompact(b []byte) (UDPHeader, error) {
	h := UDPHeader{Type: b[0] & compactTypeMask, Compact: true}
	if h.Type < compactTypeFirst || h.Type > compactTypeLast {
		return UDPHeader{}, ErrNotUDP
	}
	h.Tag = binary.BigEndian.Uint32(b[1:5])
	h.Seq = uint64(b[5])<<32 | uint64(binary.BigEndian.Uint32(b[6:10]))
	h.SentNs = int64(binary.BigEndian.Uint64(b[10:18]))
	return h, nil
}

// SetUDPType changes the type of the datagram b, whose header h was
// parsed from it, in place (an echo into its reply).
func SetUDPType(b []byte, h UDPHeader, typ byte) {
	if h.Compact {
		b[0] = compactMagic | typ&compactTypeMask
		return
	}
	b[4] = typ
}
