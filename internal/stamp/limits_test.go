package stamp

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/testkit"
)

// IsReflected tells a reflector's packet from a sender's by the octets a
// sender's packet has MBZ: zero from a STAMP sender, random from some
// TWAMP-Light senders' padding, a recent T2 from a reflector.
func TestIsReflected(t *testing.T) {
	now := time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC)
	key := []byte("0123456789abcdef")
	sender := func(auth bool) []byte {
		p := SenderPacket{Seq: 7, Timestamp: Stamp(now, NTP)}
		if auth {
			b := make([]byte, AuthSize)
			must(t, EncodeSenderAuth(b, p, key))
			return b
		}
		b := make([]byte, SenderSize)
		must(t, EncodeSender(b, p, false))
		return b
	}
	reflected := func(auth bool, t2, t3 time.Time, f Format) []byte {
		p := ReflectorPacket{Timestamp: Stamp(t3, f), ReceiveTimestamp: Stamp(t2, f), SenderTimestamp: Stamp(now, NTP)}
		if auth {
			b := make([]byte, AuthSize)
			must(t, EncodeReflectorAuth(b, p, key))
			return b
		}
		b := make([]byte, SenderSize)
		must(t, EncodeReflector(b, p))
		return b
	}
	for _, auth := range []bool{false, true} {
		for _, c := range []struct {
			name string
			b    []byte
			want bool
		}{
			{"a sender's packet (MBZ zero)", sender(auth), false},
			{"a reflector's, T2 10 µs before T3", reflected(auth, now, now.Add(10*time.Microsecond), NTP), true},
			{"a reflector's, PTP", reflected(auth, now, now.Add(time.Millisecond), PTP), true},
			{"a reflector's, T2 on a TAI clock (37 s ahead)", reflected(auth, now.Add(37*time.Second), now, NTP), true},
			{"T2 61 s from T3: not a reflector's clock", reflected(auth, now, now.Add(61*time.Second), NTP), false},
			{"too short to hold T2", make([]byte, 20), false},
		} {
			if got := IsReflected(c.b, auth); got != c.want {
				t.Errorf("authenticated %v, %s: IsReflected %v, want %v", auth, c.name, got, c.want)
			}
		}
	}
	// TWAMP-Light padding of random bytes: a chance match is about 3e-8.
	rng := rand.New(rand.NewPCG(22, 0))
	matched := 0
	for range 100_000 {
		b := make([]byte, SenderSize)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		binary.BigEndian.PutUint64(b[offTS:], uint64(Stamp(now, NTP)))
		if IsReflected(b, false) {
			matched++
		}
	}
	if matched != 0 {
		t.Errorf("%d of 100,000 randomly padded TWAMP-Light packets taken for reflected ones", matched)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Source ports 0-1023 by default, the configured ranges, and the
// reflector's own port are refused; the rest answered.
func TestRefusedPort(t *testing.T) {
	for _, c := range []struct {
		name   string
		port   uint16
		ranges []PortRange
		own    uint16
		want   bool
	}{
		{"STAMP's 862", 862, WellKnownPorts, 0, true},
		{"echo's 7", 7, WellKnownPorts, 0, true},
		{"1023", 1023, WellKnownPorts, 0, true},
		{"1024", 1024, WellKnownPorts, 0, false},
		{"an ephemeral port", 40000, WellKnownPorts, 0, false},
		{"our own port", 8620, WellKnownPorts, 8620, true},
		{"862 with none refused", 862, []PortRange{}, 0, false},
		{"in a configured range", 5000, []PortRange{{4000, 6000}}, 0, true},
	} {
		if got := refusedPort(c.port, c.ranges, c.own); got != c.want {
			t.Errorf("%s: refused %v, want %v", c.name, got, c.want)
		}
	}
	r := newReflectorState(ReflectorConfig{})
	b := make([]byte, SenderSize)
	must(t, EncodeSender(b, SenderPacket{Seq: 1}, false))
	if rep := r.reflect(b, arrival{from: netip.MustParseAddrPort("127.0.0.1:862"), at: fakeEpoch, t2: fakeEpoch}); rep != nil || r.refusedPort.Load() != 1 {
		t.Errorf("a packet from port 862 answered (refused %d)", r.refusedPort.Load())
	}
}

// The global budget caps replies from all senders together, each within
// its own rate: exact on fake time, no sockets.
func TestAdmitGlobalBudget(t *testing.T) {
	r := newReflectorState(ReflectorConfig{RatePPS: 1000, Burst: 100, GlobalPPS: 10, GlobalBurst: 5})
	from := func(i int) netip.AddrPort {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 18, 0, byte(i)}), 40000)
	}
	admitted := 0
	for i := range 20 { // 20 senders, one packet each, at once
		if _, ok := r.admit(from(i), 0, fakeEpoch); ok {
			admitted++
		}
	}
	if admitted != 5 || r.overBudget.Load() != 15 {
		t.Errorf("20 senders at once, global burst 5: %d admitted, %d over budget", admitted, r.overBudget.Load())
	}
	for _, st := range []struct {
		name string
		at   time.Duration
		want bool
	}{
		{"1 ns before 100 ms: no token yet at 10/s", 100*time.Millisecond - time.Nanosecond, false},
		{"at 100 ms: one token", 100 * time.Millisecond, true},
		{"again at 100 ms: none", 100 * time.Millisecond, false},
	} {
		if _, ok := r.admit(from(30), 0, fakeEpoch.Add(st.at)); ok != st.want {
			t.Errorf("%s: admitted %v, want %v", st.name, ok, st.want)
		}
	}
}

// Limits are per IPv4 address and per IPv6 /64: other ports, or other
// addresses in the /64, share one bucket.
func TestAdmitPerAddress(t *testing.T) {
	r := newReflectorState(ReflectorConfig{RatePPS: 1, Burst: 2})
	for _, c := range []struct {
		from string
		want bool
	}{
		{"198.18.0.1:40000", true},
		{"198.18.0.1:40001", true},
		{"198.18.0.1:40002", false}, // the address's burst of 2 is spent
		{"198.18.0.2:40000", true},
		{"[2001:db8::1]:40000", true},
		{"[2001:db8::2]:40000", true},
		{"[2001:db8::3]:40000", false}, // the /64's
		{"[2001:db8:0:1::1]:40000", true},
	} {
		if _, ok := r.admit(netip.MustParseAddrPort(c.from), 0, fakeEpoch); ok != c.want {
			t.Errorf("%s: admitted %v, want %v", c.from, ok, c.want)
		}
	}
}

// A legitimate sender is answered every time while 5,000 other sources
// (each its own loopback address) come and go through a table of 1,000:
// the least recently heard is forgotten, never the new one refused.
func TestReflectChurn(t *testing.T) {
	// The global budget is not what this test is about: 5,000 sources
	// in a quarter of a second would exceed the default's burst.
	r := startReflector(t, ReflectorConfig{MaxSources: 1000, Stateful: true, GlobalPPS: 1e6, GlobalBurst: 1e5})
	legit := dial(t, r)
	const others = 5000
	answered, asked := 0, 0
	for i := range others {
		addr := netip.AddrFrom4([4]byte{127, 1, byte(i >> 8), byte(i)})
		c, err := net.DialUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)), r.Addr())
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Write(senderPacket(t, uint32(i), SenderSize))
		c.Close() // gone: its reply finds no socket
		if err != nil {
			t.Fatal(err)
		}
		if i%250 == 0 {
			asked++
			if exchange(t, legit, senderPacket(t, uint32(i), SenderSize), 2*time.Second) != nil {
				answered++
			}
		}
	}
	// The reflector counts a reply after writing it.
	// A source on another loopback address may get our port number as
	// its ephemeral port: refused as our own, rightly.
	testkit.Poll(2*time.Second, func() bool { s := r.Stats(); return s.Reflected+s.RefusedPort == others+uint64(asked) })
	s := r.Stats()
	t.Logf("%+v", s)
	if answered != asked {
		t.Errorf("the legitimate sender was answered %d times of %d", answered, asked)
	}
	if s.Evicted < others-1000 || r.limits.len() > 1000 || r.sessions.len() > 1000 {
		t.Errorf("%d evicted, %d limits, %d sessions kept: want at least %d evicted, at most 1000 kept", s.Evicted, r.limits.len(), r.sessions.len(), others-1000)
	}
	if s.Reflected+s.RefusedPort != s.Received || s.RefusedPort > 1 {
		t.Errorf("%d reflected of %d: every source is new, each gets its answer", s.Reflected, s.Received)
	}
}
