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
//	37  3  reserved, zero
//	40  …  padding to the requested size
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

// UDPHeader is the decoded header.
type UDPHeader struct {
	Type   byte
	Cookie Cookie
	Seq    uint64
	SentNs int64
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
	b[37], b[38], b[39] = 0, 0, 0
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
	return h, nil
}
