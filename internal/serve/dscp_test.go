package serve

import (
	"net"
	"testing"
	"time"

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
