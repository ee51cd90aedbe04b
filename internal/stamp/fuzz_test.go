package stamp

import (
	"bytes"
	"testing"
)

// zeroMBZ is b with every octet the unauthenticated layouts do not read
// zeroed: what encode(decode(b)) gives back.
func zeroMBZ(b []byte, reflector bool) []byte {
	z := make([]byte, len(b))
	copy(z[:14], b)
	if reflector {
		copy(z[16:38], b[16:38])
		z[40] = b[40]
	}
	return z
}

// FuzzDecode: decoding never panics, and what decodes encodes back to
// the same octets, MBZ and padding zeroed (byte-exact when they were
// zero); the authenticated layouts likewise, under a fixed key.
func FuzzDecode(f *testing.F) {
	f.Add(vecSender)
	f.Add(vecReflector)
	f.Add(vecReflector[:41])
	f.Add(make([]byte, 112))
	f.Add([]byte{})
	key := []byte("fuzz")
	f.Fuzz(func(t *testing.T, b []byte) {
		if p, err := DecodeSender(b, true); err == nil {
			out := make([]byte, len(b))
			if err := EncodeSender(out, p, true); err != nil || !bytes.Equal(out, zeroMBZ(b, false)) {
				t.Fatalf("sender round trip: % x, %v from % x", out, err, b)
			}
		}
		if p, err := DecodeReflector(b); err == nil {
			out := make([]byte, len(b))
			if err := EncodeReflector(out, p); err != nil || !bytes.Equal(out, zeroMBZ(b, true)) {
				t.Fatalf("reflector round trip: % x, %v from % x", out, err, b)
			}
		}
		if len(b) >= AuthSize {
			sb := bytes.Clone(b)
			p, _ := DecodeReflector(b) // any fields
			if err := EncodeReflectorAuth(sb, p, key); err != nil {
				t.Fatal(err)
			}
			if q, err := DecodeReflectorAuth(sb, key); err != nil || q != p {
				t.Fatalf("authenticated round trip: %+v, %v; want %+v", q, err, p)
			}
		}
		DecodeSenderAuth(b, key)
		DecodeReflectorAuth(b, key)
	})
}
