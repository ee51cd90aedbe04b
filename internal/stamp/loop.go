package stamp

import (
	"encoding/binary"
	"net/netip"
)

// Loop protection (docs/stamp.md, "Limits"): a reflector must never
// answer another reflector, or two of them answer each other forever
// once one forged datagram starts them (issue 22).

// ReflectedSkew is how far apart, in seconds, a packet's Timestamp and
// Receive Timestamp may be for the packet to count as reflected: a
// reflector writes both from its own clock, T2 just before T3. Wide
// enough for a reflector that takes T2 from a PTP hardware clock (TAI)
// and T3 from the system's (UTC), 37 s apart.
const ReflectedSkew = 60

// IsReflected reports whether b, a datagram that came to a reflector, is
// itself a Session-Reflector packet (RFC 8762 §4.3) rather than a
// Session-Sender's. It reads only octets that RFC 8762 §4.2 makes MBZ in
// a sender's packet: where a reflector writes its Receive Timestamp (T2;
// octets 16..23, or 32..39 authenticated). A reflected packet has a T2
// that is not zero and within ReflectedSkew seconds of its Timestamp (T3,
// octets 4..11 or 16..23). A STAMP sender's MBZ octets are zero; a
// TWAMP-Light sender whose padding is random bytes matches by chance
// once in about 35 million packets (121 seconds in 2^32).
func IsReflected(b []byte, authenticated bool) bool {
	offT3, offT2 := offTS, offRecvTS
	if authenticated {
		offT3, offT2 = aoffTS, aoffRecvTS
	}
	if len(b) < offT2+8 {
		return false
	}
	t2 := binary.BigEndian.Uint64(b[offT2:])
	t3 := binary.BigEndian.Uint64(b[offT3:])
	if t2 == 0 {
		return false
	}
	d := int64(uint32(t3>>32)) - int64(uint32(t2>>32)) // seconds (NTP and PTP alike)
	if d > 1<<31 {                                     // NTP era roll-over between the two
		d -= 1 << 32
	} else if d < -(1 << 31) {
		d += 1 << 32
	}
	return d >= -ReflectedSkew && d <= ReflectedSkew
}

// PortRange is the source ports from Lo to Hi, both included.
type PortRange struct{ Lo, Hi uint16 }

// WellKnownPorts is what a reflector refuses to answer by default: a
// source port from 0 to 1023 is a service's (862 is STAMP's and TWAMP's,
// 7 echo's), never a Session-Sender's ephemeral port.
var WellKnownPorts = []PortRange{{0, 1023}}

// refusedPort reports whether a datagram from port must not be answered:
// in one of ranges, or the reflector's own port (own; 0: none).
func refusedPort(port uint16, ranges []PortRange, own uint16) bool {
	if own != 0 && port == own {
		return true
	}
	for _, r := range ranges {
		if port >= r.Lo && port <= r.Hi {
			return true
		}
	}
	return false
}

// limitKey is what a sender's limits are kept by: its IPv4 address, or
// its IPv6 /64 (one host usually holds a whole /64, so keying by address
// would give it 2^64 buckets).
func limitKey(a netip.Addr) netip.Prefix {
	a = a.Unmap()
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits) // cannot fail: bits fits both families
	return p
}
