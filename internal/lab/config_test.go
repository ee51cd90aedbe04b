package lab

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/link"
)

// drive pushes n packets of size bytes at time 0 through a direction's
// chain and returns the delivery times.
func drive(t *testing.T, d Direction, framing Framing, n, size int) ([]time.Duration, map[link.Cause]int) {
	t.Helper()
	drops := map[link.Cause]int{}
	p := Build(d, framing, 1, func(_ *link.Packet, c link.Cause) { drops[c]++ }, nil)
	for range n {
		p.Chain.Push(0, &link.Packet{Data: make([]byte, size), Class: 1})
	}
	var out []time.Duration
	p.Chain.Advance(time.Hour, func(pk *link.Packet) { out = append(out, pk.Time) })
	return out, drops
}

func TestATMCountsCells(t *testing.T) {
	// A 1500-byte packet over AAL5 is ceil((1500+8)/48) = 32 cells of 53
	// bytes = 1696 bytes on the wire: 1696×8/10 Mbit/s = 1356.8 µs each.
	got, _ := drive(t, Direction{RateBps: 10e6, ATM: true}, FramingEthernet, 10, 1500)
	per := time.Duration(math.Ceil(1696 * 8 * 1e9 / 10e6))
	for k, at := range got {
		if want := time.Duration(k+1) * per; at != want {
			t.Fatalf("packet %d at %v, want %v", k, at, want)
		}
	}
}

func TestFrameRelayDrainsAtCIR(t *testing.T) {
	// Access 1.5 Mbit/s into a switch queue of 38 kB draining at the
	// 256 kbit/s CIR: a burst of 20 packets of 1000 B (+38 B framing)
	// leaves at the CIR, one per 1038×8/256k = 32.4375 ms, after the first
	// has crossed the access line (1038×8/1.5M = 5.536 ms).
	d := Direction{FRAccessBps: 1_500_000, FRCIRBps: 256_000, FRQueueBytes: 38_000}
	got, drops := drive(t, d, FramingEthernet, 20, 1000)
	if len(got) != 20 || len(drops) != 0 {
		t.Fatalf("delivered %d, drops %v", len(got), drops)
	}
	access := time.Duration(math.Ceil(1038 * 8 * 1e9 / 1.5e6))
	cir := time.Duration(math.Ceil(1038 * 8 * 1e9 / 256e3))
	for k, at := range got {
		if want := access + time.Duration(k+1)*cir; at != want {
			t.Fatalf("packet %d at %v, want %v", k, at, want)
		}
	}
	// With a 8 kB switch queue the same burst overflows it: the access
	// line fills it 5.4 times faster than the CIR drains it.
	d.FRQueueBytes = 8000
	_, drops = drive(t, d, FramingEthernet, 20, 1000)
	if drops[link.DropQueue] == 0 {
		t.Fatal("an 8 kB switch queue took a 20 kB burst without drops")
	}
}

func TestValidateNamesTheFlag(t *testing.T) {
	cases := map[string]Direction{
		"--loss":       {Loss: 2},
		"--icmp needs": {ICMP: true},
		"--cell-loss":  {CellLoss: 0.1},
		"--police":     {PoliceBps: 1e6},
		"--mtu":        {MTU: 100},
		"--atm needs":  {ATM: true},
	}
	for frag, d := range cases {
		err := d.Validate("up")
		if err == nil || !strings.Contains(err.Error(), frag) {
			t.Errorf("%+v: error %v, want it to mention %q", d, err, frag)
		}
	}
	for name, p := range Profiles {
		if err := p.Up.Validate("up"); err != nil {
			t.Errorf("profile %s: %v", name, err)
		}
	}
}

func TestFragNeeded(t *testing.T) {
	// A 1500-byte IPv4 packet with DF from 198.18.0.1 to 198.18.0.2.
	ip := make([]byte, 1500)
	ip[0], ip[6], ip[9] = 0x45, 0x40, 17
	copy(ip[12:], []byte{198, 18, 0, 1})
	copy(ip[16:], []byte{198, 18, 0, 2})
	b := fragNeeded(ip, 1400)
	if b == nil || b[20] != 3 || b[21] != 4 || int(b[26])<<8|int(b[27]) != 1400 {
		t.Fatalf("not an ICMP frag-needed for 1400: % x", b[:28])
	}
	if string(b[12:16]) != string(ip[16:20]) || string(b[16:20]) != string(ip[12:16]) {
		t.Fatal("addresses not swapped")
	}
	if checksum(b[:20]) != 0 || checksum(b[20:]) != 0 {
		t.Fatal("bad checksums")
	}
	ip[6] = 0 // DF clear: no ICMP
	if fragNeeded(ip, 1400) != nil {
		t.Fatal("answered a packet without DF")
	}
}
