package frame

import "testing"

// TestMapping: the numbers the RFCs give (RFC 2544 §9.1's sizes, a
// 64-byte frame's 18-byte payload over IPv4, RFC 6349's 38 bytes of
// Ethernet per packet) and the mapping's round trip.
func TestMapping(t *testing.T) {
	if EthernetWire != 38 || IPv4UDP != 28 || IPv6UDP != 48 || IPUDP(false) != 28 || IPUDP(true) != 48 {
		t.Errorf("Ethernet %d B per packet, IPv4+UDP %d, IPv6+UDP %d: want 38, 28, 48", EthernetWire, IPv4UDP, IPv6UDP)
	}
	sizes := RFC2544Sizes()
	if len(sizes) != 7 || sizes[0] != 64 || sizes[6] != 1518 {
		t.Errorf("RFC 2544 sizes %v", sizes)
	}
	sizes[0] = 1
	if RFC2544Sizes()[0] != 64 {
		t.Error("RFC2544Sizes shares its slice")
	}
	for _, c := range []struct{ frame, v4, v6, ip int }{{64, 18, -2, 46}, {84, 38, 18, 66}, {128, 82, 62, 110}, {1518, 1472, 1452, 1500}, {Jumbo, 8972, 8952, 9000}} {
		if got := UDPPayload(c.frame, false); got != c.v4 {
			t.Errorf("frame %d over IPv4: payload %d, want %d", c.frame, got, c.v4)
		}
		if got := UDPPayload(c.frame, true); got != c.v6 {
			t.Errorf("frame %d over IPv6: payload %d, want %d", c.frame, got, c.v6)
		}
		if got := IPPacket(c.frame); got != c.ip {
			t.Errorf("frame %d: IP packet %d, want %d", c.frame, got, c.ip)
		}
		for _, v6 := range []bool{false, true} {
			if got := OfUDPPayload(UDPPayload(c.frame, v6), v6); got != c.frame {
				t.Errorf("frame %d (IPv6 %v): round trip gives %d", c.frame, v6, got)
			}
		}
	}
}

// TestTCPAndFramings: a 1500-byte MTU's MSS (1460) and timestamped
// segment (1448, RFC 7323 on Linux); the line's bytes of a frame; RFC
// 6349 §4.1.1's per-packet framings; AAL5 into cells at the edges of a
// cell's payload.
func TestTCPAndFramings(t *testing.T) {
	if MSS(EthernetMTU) != 1460 || Segment(EthernetMTU) != 1448 || Segment(9000) != 8948 {
		t.Errorf("MSS %d, segment %d (9000: %d): want 1460, 1448, 8948", MSS(EthernetMTU), Segment(EthernetMTU), Segment(9000))
	}
	if Wire(64) != 84 || Wire(1518) != 1538 || OfIPPacket(1500) != 1518 || IPPacket(OfIPPacket(46)) != 46 || OfIPPacket(46) != MinFrame {
		t.Errorf("wire %d %d, frame of 1500 %d", Wire(64), Wire(1518), OfIPPacket(1500))
	}
	if VLANWire != 42 || QinQWire != 46 || PPPWire != 8 {
		t.Errorf("VLAN %d, QinQ %d, PPP %d: want 42, 46, 8", VLANWire, QinQWire, PPPWire)
	}
	for ip, cells := range map[int]int{1: 1, 40: 1, 41: 2, 88: 2, 89: 3, 1500: 32} {
		if got := ATMCells(ip); got != cells {
			t.Errorf("%d B in AAL5: %d cells, want %d", ip, got, cells)
		}
	}
}
