package stamp

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// The vectors below are written by hand, octet by octet, from the RFCs'
// figures (not produced by this package), so a mistake in an offset shows
// as a mismatch here.

// unixEpochNTP is 1970-01-01T00:00:00Z in NTP seconds: 2,208,988,800.
var unixEpochNTP = []byte{0x83, 0xaa, 0x7e, 0x80}

// RFC 8762 §4.2.1, Figure 2: Session-Sender test packet, unauthenticated.
var vecSender = []byte{
	0x00, 0x00, 0x00, 0x07, // 0: Sequence Number = 7
	0x83, 0xaa, 0x7e, 0x80, // 4: Timestamp seconds = Unix epoch (NTP)
	0x80, 0x00, 0x00, 0x00, // 8: Timestamp fraction = 0.5 s
	0x92, 0x34, // 12: Error Estimate: S=1 Z=0 Scale=0x12 Multiplier=0x34
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // 14: MBZ (30 octets)
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
}

// RFC 8762 §4.3.1, Figure 4: Session-Reflector test packet,
// unauthenticated, answering vecSender, PTP timestamps of its own.
var vecReflector = []byte{
	0x00, 0x00, 0x00, 0x2a, // 0: Sequence Number = 42 (stateful reflector)
	0x00, 0x00, 0x00, 0x25, // 4: Timestamp (T3) seconds = 37 (PTP: 1970-01-01T00:00:00Z is 37 s TAI)
	0x00, 0x00, 0x03, 0xe8, // 8: nanoseconds = 1000
	0x40, 0x01, // 12: Error Estimate: S=0 Z=1 (PTP) Scale=0 Multiplier=1
	0x00, 0x00, // 14: MBZ
	0x00, 0x00, 0x00, 0x25, // 16: Receive Timestamp (T2) seconds = 37
	0x00, 0x00, 0x01, 0xf4, // 20: nanoseconds = 500
	0x00, 0x00, 0x00, 0x07, // 24: Session-Sender Sequence Number = 7
	0x83, 0xaa, 0x7e, 0x80, // 28: Session-Sender Timestamp, copied
	0x80, 0x00, 0x00, 0x00,
	0x92, 0x34, // 36: Session-Sender Error Estimate, copied
	0x00, 0x00, // 38: MBZ
	0x3f,             // 40: Ses-Sender TTL = 63
	0x00, 0x00, 0x00, // 41: MBZ (3 octets; TWAMP's Packet Padding starts here instead)
}

var wantSender = SenderPacket{
	Seq:           7,
	Timestamp:     Timestamp(0x83aa7e80_80000000),
	ErrorEstimate: ErrorEstimate{Synced: true, Format: NTP, Scale: 0x12, Multiplier: 0x34},
}

var wantReflector = ReflectorPacket{
	Seq:                 42,
	Timestamp:           Timestamp(37<<32 | 1000),
	ErrorEstimate:       ErrorEstimate{Format: PTP, Multiplier: 1},
	ReceiveTimestamp:    Timestamp(37<<32 | 500),
	SenderSeq:           7,
	SenderTimestamp:     wantSender.Timestamp,
	SenderErrorEstimate: wantSender.ErrorEstimate,
	SenderTTL:           63,
}

func TestVectorsUnauthenticated(t *testing.T) {
	if len(vecSender) != SenderSize || len(vecReflector) != ReflectorSize {
		t.Fatalf("vector sizes %d, %d", len(vecSender), len(vecReflector))
	}
	if !bytes.Equal(vecSender[4:8], unixEpochNTP) {
		t.Fatal("vector's epoch")
	}
	got, err := DecodeSender(vecSender, false)
	if err != nil || got != wantSender {
		t.Fatalf("DecodeSender = %+v, %v; want %+v", got, err, wantSender)
	}
	b := make([]byte, SenderSize)
	if err := EncodeSender(b, wantSender, false); err != nil || !bytes.Equal(b, vecSender) {
		t.Fatalf("EncodeSender = % x, %v\nwant % x", b, err, vecSender)
	}
	if tm := got.Timestamp.Time(NTP); !tm.Equal(time.Unix(0, 5e8)) {
		t.Errorf("T1 = %v, want 1970-01-01T00:00:00.5Z", tm)
	}
	rp, err := DecodeReflector(vecReflector)
	if err != nil || rp != wantReflector {
		t.Fatalf("DecodeReflector = %+v, %v; want %+v", rp, err, wantReflector)
	}
	b = make([]byte, ReflectorSize)
	if err := EncodeReflector(b, wantReflector); err != nil || !bytes.Equal(b, vecReflector) {
		t.Fatalf("EncodeReflector = % x, %v\nwant % x", b, err, vecReflector)
	}
	if tm := rp.Timestamp.Time(PTP); !tm.Equal(time.Unix(0, 1000)) {
		t.Errorf("T3 = %v, want 1970-01-01T00:00:00.000001Z", tm)
	}
}

// RFC 5357 §4.2.1: the TWAMP reflected packet is the same as STAMP's up
// to the Sender TTL at octet 40; its Packet Padding starts at 41 where
// STAMP has 3 MBZ octets. A TWAMP-Light sender's shortest packet is 14
// octets (§4.1.2); RFC 5357 asks senders for 27 octets of padding so the
// 41-octet reflected packet is no larger.
func TestVectorsTWAMP(t *testing.T) {
	twampReq := vecSender[:TWAMPSenderMin+27] // 41 octets
	if _, err := DecodeSender(twampReq, false); !isShort(err) {
		t.Errorf("a 41-octet packet as strict STAMP: %v, want a ShortError", err)
	}
	got, err := DecodeSender(twampReq, true)
	if err != nil || got != wantSender {
		t.Fatalf("DecodeSender(twamp) = %+v, %v", got, err)
	}
	b := make([]byte, TWAMPReflectedMin)
	if err := EncodeReflector(b, wantReflector); err != nil || !bytes.Equal(b, vecReflector[:41]) {
		t.Fatalf("41-octet reflected = % x, %v", b, err)
	}
	if _, err := DecodeSender(vecSender[:13], true); !isShort(err) {
		t.Errorf("13 octets: %v", err)
	}
	if err := EncodeReflector(make([]byte, 40), wantReflector); !isShort(err) {
		t.Errorf("40-octet reflected: %v", err)
	}
}

func isShort(err error) bool {
	var s *ShortError
	return errors.As(err, &s)
}

// RFC 8762 §4.2.2 (Figure 3) and §4.3.2 (Figure 5): the authenticated
// layouts, 112 octets, the HMAC (HMAC-SHA-256 of octets 0..95 truncated
// to 16 octets, §4.4) at 96. The HMAC octets are not from the RFC (it
// has no vectors): they are checked by recomputing them with crypto/hmac
// in the test, apart from the package.
func TestVectorsAuthenticated(t *testing.T) {
	key := []byte("fullpipe-stamp-test-key")
	snd := make([]byte, AuthSize)
	copy(snd[0:], []byte{0, 0, 0, 7})      // 0: Sequence Number
	copy(snd[16:], vecSender[4:12])        // 16: Timestamp, after 12 MBZ octets
	copy(snd[24:], []byte{0x92, 0x34})     // 24: Error Estimate; 70 MBZ octets follow, to 96
	copy(snd[96:], refHMAC(key, snd[:96])) // 96: HMAC
	ref := make([]byte, AuthSize)
	copy(ref[0:], vecReflector[0:4])    // 0: Sequence Number
	copy(ref[16:], vecReflector[4:14])  // 16: Timestamp, Error Estimate (24); 6 MBZ
	copy(ref[32:], vecReflector[16:24]) // 32: Receive Timestamp; 8 MBZ
	copy(ref[48:], vecReflector[24:28]) // 48: Session-Sender Sequence Number; 12 MBZ
	copy(ref[64:], vecReflector[28:38]) // 64: Session-Sender Timestamp, Error Estimate (72); 6 MBZ
	ref[80] = 63                        // 80: Ses-Sender TTL; 15 MBZ
	copy(ref[96:], refHMAC(key, ref[:96]))

	b := make([]byte, AuthSize)
	if err := EncodeSenderAuth(b, wantSender, key); err != nil || !bytes.Equal(b, snd) {
		t.Fatalf("EncodeSenderAuth = % x, %v\nwant % x", b, err, snd)
	}
	if p, err := DecodeSenderAuth(snd, key); err != nil || p != wantSender {
		t.Fatalf("DecodeSenderAuth = %+v, %v", p, err)
	}
	if err := EncodeReflectorAuth(b, wantReflector, key); err != nil || !bytes.Equal(b, ref) {
		t.Fatalf("EncodeReflectorAuth = % x, %v\nwant % x", b, err, ref)
	}
	if p, err := DecodeReflectorAuth(ref, key); err != nil || p != wantReflector {
		t.Fatalf("DecodeReflectorAuth = %+v, %v", p, err)
	}
	for _, i := range []int{0, 50, 96, 111} {
		bad := bytes.Clone(ref)
		bad[i] ^= 1
		if _, err := DecodeReflectorAuth(bad, key); !errors.Is(err, ErrHMAC) {
			t.Errorf("octet %d flipped: %v, want ErrHMAC", i, err)
		}
	}
	if _, err := DecodeSenderAuth(snd, []byte("other")); !errors.Is(err, ErrHMAC) {
		t.Errorf("wrong key: %v", err)
	}
	if _, err := DecodeSenderAuth(snd[:111], key); !isShort(err) {
		t.Errorf("111 octets: %v", err)
	}
	if err := EncodeSenderAuth(b, wantSender, nil); !errors.Is(err, ErrNoKey) {
		t.Errorf("no key: %v", err)
	}
}
