package stamp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
)

// HMACSize is the HMAC field: HMAC-SHA-256 truncated to 128 bits (RFC
// 8762 §4.4).
const HMACSize = 16

// ErrHMAC is an authenticated packet whose HMAC does not match the key.
var ErrHMAC = errors.New("stamp: HMAC does not match (wrong key, or the packet was changed on the way)")

// ErrNoKey is authenticated mode asked for without a key.
var ErrNoKey = errors.New("stamp: authenticated mode needs a key: pass the session's HMAC key")

// sign writes the HMAC of b[:96] into b[96:112].
func sign(b, key []byte) {
	m := hmac.New(sha256.New, key)
	m.Write(b[:authHMACStart])
	copy(b[authHMACStart:AuthSize], m.Sum(nil)[:HMACSize])
}

// verify checks b[96:112] against the HMAC of b[:96], in constant time.
func verify(b, key []byte) error {
	m := hmac.New(sha256.New, key)
	m.Write(b[:authHMACStart])
	if !hmac.Equal(m.Sum(nil)[:HMACSize], b[authHMACStart:AuthSize]) {
		return ErrHMAC
	}
	return nil
}

// EncodeSenderAuth writes p into b in the authenticated layout (RFC 8762
// §4.2.2), zeroes the MBZ octets and any octets past AuthSize, and signs
// octets 0..95 with key. len(b) is the packet's size, at least AuthSize.
func EncodeSenderAuth(b []byte, p SenderPacket, key []byte) error {
	if len(key) == 0 {
		return ErrNoKey
	}
	if len(b) < AuthSize {
		return &ShortError{Layout: "authenticated session-sender", Len: len(b), Min: AuthSize}
	}
	clear(b)
	binary.BigEndian.PutUint32(b[aoffSeq:], p.Seq)
	binary.BigEndian.PutUint64(b[aoffTS:], uint64(p.Timestamp))
	binary.BigEndian.PutUint16(b[aoffErr:], p.ErrorEstimate.Uint16())
	sign(b, key)
	return nil
}

// DecodeSenderAuth checks the HMAC of an authenticated Session-Sender
// packet (ErrHMAC) and reads it.
func DecodeSenderAuth(b, key []byte) (SenderPacket, error) {
	if len(key) == 0 {
		return SenderPacket{}, ErrNoKey
	}
	if len(b) < AuthSize {
		return SenderPacket{}, &ShortError{Layout: "authenticated session-sender", Len: len(b), Min: AuthSize}
	}
	if err := verify(b, key); err != nil {
		return SenderPacket{}, err
	}
	return SenderPacket{
		Seq:           binary.BigEndian.Uint32(b[aoffSeq:]),
		Timestamp:     Timestamp(binary.BigEndian.Uint64(b[aoffTS:])),
		ErrorEstimate: ParseErrorEstimate(binary.BigEndian.Uint16(b[aoffErr:])),
	}, nil
}

// EncodeReflectorAuth writes p into b in the authenticated layout (RFC
// 8762 §4.3.2) and signs octets 0..95 with key; len(b) ≥ AuthSize.
func EncodeReflectorAuth(b []byte, p ReflectorPacket, key []byte) error {
	if len(key) == 0 {
		return ErrNoKey
	}
	if len(b) < AuthSize {
		return &ShortError{Layout: "authenticated session-reflector", Len: len(b), Min: AuthSize}
	}
	clear(b)
	binary.BigEndian.PutUint32(b[aoffSeq:], p.Seq)
	binary.BigEndian.PutUint64(b[aoffTS:], uint64(p.Timestamp))
	binary.BigEndian.PutUint16(b[aoffErr:], p.ErrorEstimate.Uint16())
	binary.BigEndian.PutUint64(b[aoffRecvTS:], uint64(p.ReceiveTimestamp))
	binary.BigEndian.PutUint32(b[aoffSenderSeq:], p.SenderSeq)
	binary.BigEndian.PutUint64(b[aoffSenderTS:], uint64(p.SenderTimestamp))
	binary.BigEndian.PutUint16(b[aoffSenderErr:], p.SenderErrorEstimate.Uint16())
	b[aoffSenderTTL] = p.SenderTTL
	sign(b, key)
	return nil
}

// DecodeReflectorAuth checks the HMAC of an authenticated
// Session-Reflector packet (ErrHMAC) and reads it.
func DecodeReflectorAuth(b, key []byte) (ReflectorPacket, error) {
	if len(key) == 0 {
		return ReflectorPacket{}, ErrNoKey
	}
	if len(b) < AuthSize {
		return ReflectorPacket{}, &ShortError{Layout: "authenticated session-reflector", Len: len(b), Min: AuthSize}
	}
	if err := verify(b, key); err != nil {
		return ReflectorPacket{}, err
	}
	return ReflectorPacket{
		Seq:                 binary.BigEndian.Uint32(b[aoffSeq:]),
		Timestamp:           Timestamp(binary.BigEndian.Uint64(b[aoffTS:])),
		ErrorEstimate:       ParseErrorEstimate(binary.BigEndian.Uint16(b[aoffErr:])),
		ReceiveTimestamp:    Timestamp(binary.BigEndian.Uint64(b[aoffRecvTS:])),
		SenderSeq:           binary.BigEndian.Uint32(b[aoffSenderSeq:]),
		SenderTimestamp:     Timestamp(binary.BigEndian.Uint64(b[aoffSenderTS:])),
		SenderErrorEstimate: ParseErrorEstimate(binary.BigEndian.Uint16(b[aoffSenderErr:])),
		SenderTTL:           b[aoffSenderTTL],
	}, nil
}
