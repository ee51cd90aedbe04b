package serve

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fullpipe/fullpipe/internal/sockopt"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// TestDSCPReverse: a reverse udp session asking for DSCP 46 (EF) gets its
// stream marked with it, and the replies to its latency probes too, as
// the client's socket reads them (IP_RECVTOS) on loopback; the stream is
// of 18-byte datagrams (compact headers) and so are the probes.
func TestDSCPReverse(t *testing.T) {
	_, addr := startServerAddr(t, Config{})
	req := wire.Request{Kind: wire.KindUDP, Reverse: true, DSCP: 46, EchoEvery: 10, Size: wire.CompactLen,
		RateBps: wire.CompactLen * 8 * 2000, Duration: time.Second, Interval: time.Second}
	s, err := openRaw(addr, "", req)
	if err != nil {
		t.Fatal(err)
	}
	defer s.c.Close()
	raddr := s.c.RemoteAddr().(*net.TCPAddr)
	uc, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: raddr.IP, Port: raddr.Port})
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	rc, _ := uc.SyscallConn()
	if err := sockopt.SetRecvTOS(rc, false); err != nil {
		t.Fatal(err)
	}
	hello := make([]byte, wire.UDPHeaderLen)
	wire.PutUDP(hello, wire.UDPHeader{Type: wire.UDPHello, Cookie: s.accept.Cookie})
	if _, err := uc.Write(hello); err != nil {
		t.Fatal(err)
	}
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	probe := make([]byte, wire.CompactLen)
	wire.PutUDP(probe, wire.UDPHeader{Type: wire.UDPEcho, Cookie: s.accept.Cookie, Seq: 7})
	if _, err := uc.Write(probe); err != nil {
		t.Fatal(err)
	}
	counts := map[byte]int{}
	buf, oob := make([]byte, 2048), make([]byte, 256)
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && (counts[wire.UDPData] < 100 || counts[wire.UDPEchoReply] < 1); {
		_ = uc.SetReadDeadline(deadline)
		n, oobn, _, _, err := uc.ReadMsgUDP(buf, oob)
		if err != nil {
			break
		}
		h, err := wire.ParseUDP(buf[:n])
		if err != nil || !h.Matches(s.accept.Cookie) || n != wire.CompactLen {
			t.Fatalf("datagram of %d bytes, %+v, %v: want this session's, compact", n, h, err)
		}
		if d, ok := sockopt.ParseDSCP(oob[:oobn]); !ok || d != 46 {
			t.Fatalf("type %d arrived with DSCP %d (%v), want 46", h.Type, d, ok)
		}
		counts[h.Type]++
	}
	if counts[wire.UDPData] < 100 || counts[wire.UDPEchoReply] != 1 {
		t.Errorf("got %v (data 1, reply 3): want ≥ 100 data and the probe's reply, all marked", counts)
	}
}

// TestGROOffForTrains: the responder's UDP socket coalesces datagrams on
// receive (UDP GRO) for fast udp streams, but not while a train session
// is registered (a train reads each datagram's own kernel stamp); it
// coalesces again once the last train session is gone.
func TestGROOffForTrains(t *testing.T) {
	srv := startServer(t, Config{})
	gro := func() int {
		rc, err := srv.udp.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		v := -1
		_ = rc.Control(func(fd uintptr) { v, _ = unix.GetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_GRO) })
		return v
	}
	if g := gro(); g != 1 {
		t.Skipf("UDP_GRO %d at start: this kernel does not coalesce", g)
	}
	req := wire.Request{Kind: wire.KindTrain, TrainPackets: 10, Size: 100, Duration: time.Second, Interval: time.Second}
	a, b := srv.newSession(req, fuzzPeer, srv.cfg.Log), srv.newSession(req, fuzzPeer, srv.cfg.Log)
	for _, ss := range []*session{a, b} {
		if err := srv.register(ss, 0); err != nil {
			t.Fatal(err)
		}
	}
	if g := gro(); g != 0 {
		t.Errorf("UDP_GRO %d with two train sessions, want 0", g)
	}
	srv.unregister(a)
	if g := gro(); g != 0 {
		t.Errorf("UDP_GRO %d with one train session left, want 0", g)
	}
	srv.unregister(b)
	if g := gro(); g != 1 {
		t.Errorf("UDP_GRO %d with no train session, want 1", g)
	}
}

// TestStreamProbesBudget: a udp upload of 1000 datagrams (1 s) with one
// in 10 a latency probe reflects its 100 probes, each also counted as
// data, and its echo budget grows by the probes it announced (101, plus
// 10 % and 10) and no further: of 400 compact echoes, 101 + 20 + the
// default budget of an rtt-less session (30 + 13) are answered.
func TestStreamProbesBudget(t *testing.T) {
	s := socketless(t, Config{})
	req := wire.Request{Kind: wire.KindUDP, Duration: time.Second, RateBps: 18 * 8 * 1000, Size: 18, EchoEvery: 10, Interval: time.Second}
	ss := addSession(t, s, req)
	from := netip.MustParseAddrPort("127.0.0.1:40000")
	buf := make([]byte, udpBufLen)
	replies := 0
	for seq := range uint64(400) {
		wire.PutUDP(buf[:wire.CompactLen], wire.UDPHeader{Type: wire.UDPEcho, Cookie: ss.cookie, Seq: seq})
		if reply, _ := s.handlePacket(buf, wire.CompactLen, from, rxInfo{mono: 1}); reply != nil {
			if h, err := wire.ParseUDP(reply); err != nil || h.Type != wire.UDPEchoReply || len(reply) != wire.CompactLen {
				t.Fatalf("reply %+v %v of %d bytes", h, err, len(reply))
			}
			replies++
		}
	}
	if want := 101 + 20 + 43; replies != want {
		t.Errorf("%d echoes answered, want %d", replies, want)
	}
	if st := ss.udpRx.Stats(0); st.Packets != 400 {
		t.Errorf("%d of 400 probes counted as data", st.Packets)
	}
}
