// Package stamp is STAMP, the Simple Two-way Active Measurement Protocol
// (RFC 8762), and the TWAMP-Light reflection it is compatible with (RFC
// 5357 §4.2.1 and appendix I): the test packets' layouts (unauthenticated
// and authenticated), their timestamps and Error Estimate, a UDP
// Session-Reflector and a Session-Sender. docs/stamp.md is the spec as we
// implement it, with each field's byte offset.
//
// The codec (this file, auth.go, timestamp.go) is pure: no sockets, no
// clock. The Reflector and the Sender hold the sockets and the clock.
package stamp

import (
	"encoding/binary"
	"fmt"
)

// Sizes of the layouts, in octets.
const (
	// SenderSize is a Session-Sender test packet in unauthenticated mode
	// (RFC 8762 §4.2.1): 44 octets, so the reflected packet (same size)
	// is no larger than what was sent.
	SenderSize = 44
	// ReflectorSize is a Session-Reflector test packet in unauthenticated
	// mode (RFC 8762 §4.3.1).
	ReflectorSize = 44
	// AuthSize is both test packets in authenticated mode (RFC 8762
	// §4.2.2, §4.3.2): 96 octets then a 16-octet HMAC.
	AuthSize = 112
	// TWAMPSenderMin is the shortest TWAMP-Test packet a Session-Sender
	// sends in unauthenticated mode (RFC 5357 §4.1.2): sequence,
	// timestamp, error estimate, no padding.
	TWAMPSenderMin = 14
	// TWAMPReflectedMin is the TWAMP reflected packet up to and including
	// the Sender TTL (RFC 5357 §4.2.1): the shortest reply that carries
	// every field. A request shorter than this gets no reply from our
	// Reflector, whose replies are never larger than their request.
	TWAMPReflectedMin = 41
	// ReflectedTimingMin is a reflected packet through the Session-Sender
	// Error Estimate: every timing field, without the MBZ and Sender TTL.
	// Some TWAMP-Light responders send only that much (nokia/twampy's,
	// unpadded); our Sender reads such replies with a Sender TTL of 0.
	ReflectedTimingMin = 38
)

// DefaultPort is the UDP port IANA assigned to OWAMP-Test/TWAMP-Test
// receivers, which RFC 8762 §4.1 makes STAMP's default.
const DefaultPort = 862

// SenderPacket is a Session-Sender test packet (RFC 8762 §4.2). In
// authenticated mode the same fields sit at other offsets (§4.2.2).
type SenderPacket struct {
	Seq           uint32
	Timestamp     Timestamp // T1, in ErrorEstimate.Format
	ErrorEstimate ErrorEstimate
}

// ReflectorPacket is a Session-Reflector test packet (RFC 8762 §4.3),
// which is also TWAMP's reflected packet (RFC 5357 §4.2.1) up to the
// Sender TTL.
type ReflectorPacket struct {
	Seq                 uint32    // the reflector's own counter (stateful) or the sender's (stateless)
	Timestamp           Timestamp // T3, when the reflector sent this, in ErrorEstimate.Format
	ErrorEstimate       ErrorEstimate
	ReceiveTimestamp    Timestamp // T2, when the reflector received the sender's packet, in ErrorEstimate.Format
	SenderSeq           uint32    // copied from the sender's packet
	SenderTimestamp     Timestamp // T1, copied, in SenderErrorEstimate.Format
	SenderErrorEstimate ErrorEstimate
	SenderTTL           uint8 // the TTL or Hop Limit of the sender's packet as received (255 if unknown here: see docs/stamp.md)
}

// Offsets in the unauthenticated layouts (RFC 8762 §4.2.1, §4.3.1).
const (
	offSeq        = 0
	offTS         = 4
	offErr        = 12
	offRecvTS     = 16 // reflector only, after 2 MBZ octets at 14
	offSenderSeq  = 24
	offSenderTS   = 28
	offSenderErr  = 36
	offSenderTTL  = 40 // after 2 MBZ octets at 38; 3 MBZ octets follow
	authHMACStart = 96
)

// Offsets in the authenticated layouts (RFC 8762 §4.2.2, §4.3.2).
const (
	aoffSeq       = 0
	aoffTS        = 16 // after 12 MBZ octets at 4
	aoffErr       = 24
	aoffRecvTS    = 32 // reflector: after 6 MBZ octets at 26
	aoffSenderSeq = 48 // after 8 MBZ octets at 40
	aoffSenderTS  = 64 // after 12 MBZ octets at 52
	aoffSenderErr = 72
	aoffSenderTTL = 80 // after 6 MBZ octets at 74; 15 MBZ octets follow
)

// ShortError is a packet shorter than its layout.
type ShortError struct {
	Layout string // "session-sender", "session-reflector", "authenticated session-sender", ...
	Len    int    // octets given
	Min    int    // octets the layout needs
}

func (e *ShortError) Error() string {
	return fmt.Sprintf("stamp: %s packet of %d octets is shorter than its %d-octet layout", e.Layout, e.Len, e.Min)
}

// FieldError is a field whose value its format does not allow.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return "stamp: " + e.Field + ": " + e.Reason }

// EncodeSender writes p into b in the unauthenticated layout (RFC 8762
// §4.2.1) and zeroes the rest of b (MBZ and padding); len(b) is the
// packet's size. A b shorter than SenderSize is a *ShortError unless
// twamp allows a TWAMP-Test packet (at least TWAMPSenderMin octets).
func EncodeSender(b []byte, p SenderPacket, twamp bool) error {
	if minLen := senderMin(twamp); len(b) < minLen {
		return &ShortError{Layout: "session-sender", Len: len(b), Min: minLen}
	}
	clear(b)
	binary.BigEndian.PutUint32(b[offSeq:], p.Seq)
	binary.BigEndian.PutUint64(b[offTS:], uint64(p.Timestamp))
	binary.BigEndian.PutUint16(b[offErr:], p.ErrorEstimate.Uint16())
	return nil
}

func senderMin(twamp bool) int {
	if twamp {
		return TWAMPSenderMin
	}
	return SenderSize
}

// DecodeSender reads an unauthenticated Session-Sender packet. MBZ and
// padding octets are ignored, as RFC 8762 §4.2.1 says. With twamp, a
// packet of TWAMPSenderMin octets or more is accepted (a TWAMP-Light
// sender's, RFC 5357 §4.1.2); without, SenderSize.
func DecodeSender(b []byte, twamp bool) (SenderPacket, error) {
	if minLen := senderMin(twamp); len(b) < minLen {
		return SenderPacket{}, &ShortError{Layout: "session-sender", Len: len(b), Min: minLen}
	}
	return SenderPacket{
		Seq:           binary.BigEndian.Uint32(b[offSeq:]),
		Timestamp:     Timestamp(binary.BigEndian.Uint64(b[offTS:])),
		ErrorEstimate: ParseErrorEstimate(binary.BigEndian.Uint16(b[offErr:])),
	}, nil
}

// EncodeReflector writes p into b in the unauthenticated layout (RFC 8762
// §4.3.1) and zeroes the rest of b; len(b) is the packet's size. b may
// be as short as TWAMPReflectedMin (a TWAMP reflected packet whose
// padding starts right after the Sender TTL, RFC 5357 §4.2.1); shorter is
// a *ShortError.
func EncodeReflector(b []byte, p ReflectorPacket) error {
	if len(b) < TWAMPReflectedMin {
		return &ShortError{Layout: "session-reflector", Len: len(b), Min: TWAMPReflectedMin}
	}
	clear(b)
	binary.BigEndian.PutUint32(b[offSeq:], p.Seq)
	binary.BigEndian.PutUint64(b[offTS:], uint64(p.Timestamp))
	binary.BigEndian.PutUint16(b[offErr:], p.ErrorEstimate.Uint16())
	binary.BigEndian.PutUint64(b[offRecvTS:], uint64(p.ReceiveTimestamp))
	binary.BigEndian.PutUint32(b[offSenderSeq:], p.SenderSeq)
	binary.BigEndian.PutUint64(b[offSenderTS:], uint64(p.SenderTimestamp))
	binary.BigEndian.PutUint16(b[offSenderErr:], p.SenderErrorEstimate.Uint16())
	b[offSenderTTL] = p.SenderTTL
	return nil
}

// DecodeReflector reads an unauthenticated Session-Reflector packet (or a
// TWAMP reflected one): at least TWAMPReflectedMin octets; MBZ and
// padding ignored.
func DecodeReflector(b []byte) (ReflectorPacket, error) {
	if len(b) < TWAMPReflectedMin {
		return ReflectorPacket{}, &ShortError{Layout: "session-reflector", Len: len(b), Min: TWAMPReflectedMin}
	}
	return ReflectorPacket{
		Seq:                 binary.BigEndian.Uint32(b[offSeq:]),
		Timestamp:           Timestamp(binary.BigEndian.Uint64(b[offTS:])),
		ErrorEstimate:       ParseErrorEstimate(binary.BigEndian.Uint16(b[offErr:])),
		ReceiveTimestamp:    Timestamp(binary.BigEndian.Uint64(b[offRecvTS:])),
		SenderSeq:           binary.BigEndian.Uint32(b[offSenderSeq:]),
		SenderTimestamp:     Timestamp(binary.BigEndian.Uint64(b[offSenderTS:])),
		SenderErrorEstimate: ParseErrorEstimate(binary.BigEndian.Uint16(b[offSenderErr:])),
		SenderTTL:           b[offSenderTTL],
	}, nil
}
