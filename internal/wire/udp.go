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
//	       2 reply padded to the size in bytes 38-39, with DF set
//	38  2  reply size in bytes for echo mode 2 (UDP payload), big endian
//	40  …  padding to the requested size; in an echo reply of mode 3,
//	       bytes 40-47 are the responder's receive time (EchoStampLen)
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
)

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

// UDPHeader is the decoded header.
type UDPHeader struct {
	Type     byte
	Cookie   Cookie
	Seq      uint64
	SentNs   int64
	EchoMode byte
	EchoSize uint16
}

// ErrNotUDP says a datagram is not a fullpipe packet.
var ErrNotUDP = errors.New("not a fullpipe UDP packet")

// PutUDP writes h into b, which must hold UDPHeaderLen bytes.
func PutUDP(b []byte, h UDPHeader) {
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
