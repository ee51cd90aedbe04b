package stamp

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/testkit"
)

// TestReflectorLoop is issue 22's attack on loopback: two reflectors, and
// datagrams sent to A from B's own address and port, as a forged source
// would arrive. Without loop protection A's reply is a request to B, B's
// to A, forever (each reflector answers any datagram of 41 octets or
// more, and a reply parses as a request). With it, A answers each
// injected packet once and B drops A's reply: the loop dies within one
// round trip.
func TestReflectorLoop(t *testing.T) {
	for _, mode := range []struct {
		name string
		key  []byte
		size int
	}{
		{"unauthenticated", nil, SenderSize},
		{"authenticated, one replayed packet", []byte("0123456789abcdef0123456789abcdef"), AuthSize},
	} {
		t.Run(mode.name, func(t *testing.T) {
			a := startReflector(t, ReflectorConfig{Key: mode.key})
			b := startReflector(t, ReflectorConfig{Key: mode.key})
			const injected = 5
			for i := range injected {
				pkt := make([]byte, mode.size)
				p := SenderPacket{Seq: uint32(i), Timestamp: Stamp(time.Now(), NTP), ErrorEstimate: ErrorEstimate{Multiplier: 1}}
				var err error
				if mode.key != nil {
					err = EncodeSenderAuth(pkt, p, mode.key)
				} else {
					err = EncodeSender(pkt, p, false)
				}
				if err != nil {
					t.Fatal(err)
				}
				// B's socket: the source A sees is B's port, as if forged.
				if _, err := b.conn.WriteToUDPAddrPort(pkt, a.Addr().AddrPort()); err != nil {
					t.Fatal(err)
				}
			}
			// A's replies reach B; B has read them all (and answered
			// them or not) once it counted them.
			if !testkit.Poll(2*time.Second, func() bool { return b.Stats().Received >= injected }) {
				t.Fatalf("B received %d of A's %d replies", b.Stats().Received, injected)
			}
			// One more round trip on loopback is far below 200 ms; a loop
			// at 1000 replies a second per sender shows by then.
			time.Sleep(200 * time.Millisecond) // real time: no loop is shown only by real sockets left to run
			sa, sb := a.Stats(), b.Stats()
			t.Logf("after 200 ms: A %+v; B %+v", sa, sb)
			if sa.Reflected != injected || sb.Reflected != 0 {
				t.Errorf("A reflected %d, B %d: want %d and 0 (the loop dies within one round trip)", sa.Reflected, sb.Reflected, injected)
			}
		})
	}
}

// dialFrom is a client socket to r from address from (a loopback
// address other than 127.0.0.1: another sender to the per-address
// limits), closed when the test ends.
func dialFrom(t *testing.T, r *Reflector, from string) *net.UDPConn {
	t.Helper()
	c, err := net.DialUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(from), 0)), r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
