package serve

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/serve/servetest"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// socketless is a responder without sockets: handlePacket and the control
// path run on it from a fuzz target or a unit test.
func socketless(t testing.TB, cfg Config) *Server {
	t.Helper()
	cfg.fill()
	return newServer(cfg)
}

// fuzzPeer is the address of the fuzzed sessions' client.
var fuzzPeer = netip.MustParseAddr("127.0.0.1")

// addSession registers a session of req from fuzzPeer, as control would.
func addSession(t testing.TB, s *Server, req wire.Request) *session {
	t.Helper()
	ss := s.newSession(req, fuzzPeer, s.cfg.Log)
	if err := s.register(ss, 0); err != nil {
		t.Fatal(err)
	}
	if ss.udpRx != nil {
		ss.started = true
	}
	return ss
}

// FuzzUDPPacket feeds sequences of datagrams to handlePacket against three
// sessions (rtt, mtu with two ports, udp up) of one client. The input is
// records of [flags, length (2 bytes), datagram]: flags bits 0-1 put one
// session's cookie into the datagram, or its tag into a compact header
// (3: leave it), bit 2 sends it from
// another address, bits 3-5 pick one of 8 source ports. Nothing may panic,
// and every reply must go to a session's own address and registered port,
// carry the reply type, be no larger than the datagram (an mtu session's
// sized echo: ≤ wire.MaxMTUReply) and stay within the session's budget.
func FuzzUDPPacket(f *testing.F) {
	hdr := func(typ, mode byte, size uint16, n int) []byte {
		b := make([]byte, n)
		wire.PutUDP(b, wire.UDPHeader{Type: typ, EchoMode: mode, EchoSize: size})
		return b
	}
	rec := func(flags byte, pkt []byte) []byte {
		return append([]byte{flags, byte(len(pkt) >> 8), byte(len(pkt))}, pkt...)
	}
	f.Add(rec(0, hdr(wire.UDPEcho, wire.EchoSized, 40, 100)))   // the panic of issue 8
	f.Add(rec(0, hdr(wire.UDPEcho, wire.EchoSized, 65507, 40))) // amplification
	f.Add(rec(0, hdr(wire.UDPEcho, wire.EchoSized, 64, 40)))    // amplification within the budget
	f.Add(rec(1, hdr(wire.UDPEcho, wire.EchoSized, 9000, 40)))  // mtu
	f.Add(rec(0, hdr(wire.UDPEcho, wire.EchoStamped, 0, 40)))   // stamp past the probe
	f.Add(rec(2, hdr(wire.UDPData, 0, 0, 1000)))                // udp up data
	f.Add(append(rec(0, hdr(wire.UDPEcho, 0, 0, 64)), rec(8, hdr(wire.UDPEcho, 0, 0, 64))...))
	f.Add(rec(2, hdr(wire.UDPData, 0, 0, wire.CompactLen)))                                     // compact data
	f.Add(append(rec(0, hdr(wire.UDPEcho, 0, 0, 20)), rec(12, hdr(wire.UDPEcho, 0, 0, 39))...)) // compact echoes, second port
	f.Add(rec(4, hdr(wire.UDPEcho, 0, 0, wire.CompactLen)))                                     // compact echo from another host
	f.Fuzz(func(t *testing.T, data []byte) {
		s := socketless(t, Config{MaxSessions: 4, MaxProbeRate: 10})
		sessions := []*session{
			addSession(t, s, wire.Request{Kind: wire.KindRTT, Duration: time.Second, Probes: 5, ProbeSize: 64}),
			addSession(t, s, wire.Request{Kind: wire.KindRTT, Duration: time.Second, Probes: 5, MTU: true, UDPPorts: 2}),
			addSession(t, s, wire.Request{Kind: wire.KindUDP, Duration: time.Second, RateBps: 1e6, Size: 1000}),
		}
		budget := map[*session][2]int64{}
		for _, ss := range sessions {
			budget[ss] = [2]int64{ss.echoPackets, ss.echoBytes}
		}
		used := map[*session][2]int64{}
		buf := make([]byte, udpBufLen)
		for len(data) >= 3 {
			flags, n := data[0], int(binary.BigEndian.Uint16(data[1:3]))
			data = data[3:]
			n = min(n, len(data), udpBufLen)
			pkt := data[:n]
			data = data[n:]
			copy(buf, pkt)
			var ss *session
			if i := int(flags & 3); i < len(sessions) && n >= wire.CompactLen {
				ss = sessions[i]
				if buf[0] == wire.UDPMagic[0] && n >= 21 {
					copy(buf[5:21], ss.cookie[:])
				} else {
					binary.BigEndian.PutUint32(buf[1:5], ss.cookie.Tag())
				}
			}
			ip := fuzzPeer
			if flags&4 != 0 {
				ip = netip.MustParseAddr("127.0.0.2")
			}
			from := netip.AddrPortFrom(ip, 40000+uint16(flags>>3&7))
			reply, _ := s.safePacket(buf, n, from, rxInfo{mono: 1})
			if s.panics.Load() != 0 {
				t.Fatalf("handlePacket panicked on %x", pkt)
			}
			if reply == nil {
				continue
			}
			if h, _ := wire.ParseUDP(reply); ss == nil && h.Compact {
				ss = s.tags[h.Tag]
			} else if ss == nil {
				ss = s.sessions[h.Cookie]
			}
			checkReply(t, ss, from, n, reply)
			u := used[ss]
			u[0]++
			u[1] += int64(len(reply))
			used[ss] = u
			if b := budget[ss]; u[0] > b[0] || u[1] > b[1] {
				t.Fatalf("replies %d packets, %d bytes: beyond the budget of %d, %d", u[0], u[1], b[0], b[1])
			}
		}
	})
}

func checkReply(t *testing.T, ss *session, from netip.AddrPort, n int, reply []byte) {
	t.Helper()
	if ss == nil || from.Addr() != ss.peerIP {
		t.Fatalf("reply to %v, which is no session's client", from)
	}
	if len(ss.udpPorts) > max(1, ss.req.UDPPorts) {
		t.Fatalf("%d ports registered, at most %d allowed", len(ss.udpPorts), max(1, ss.req.UDPPorts))
	}
	registered := false
	for _, p := range ss.udpPorts {
		registered = registered || p == from
	}
	if !registered {
		t.Fatalf("reply to %v, not a registered port (%v)", from, ss.udpPorts)
	}
	limit := n
	if ss.req.MTU {
		limit = max(n, wire.MaxMTUReply)
	}
	if h, err := wire.ParseUDP(reply); err != nil || len(reply) > limit || h.Type != wire.UDPEchoReply {
		t.Fatalf("reply of %d bytes (%+v, %v) to a %d-byte datagram (mtu session %v)", len(reply), h, err, n, ss.req.MTU)
	}
}

// heapAllocs is the bytes allocated so far by the process.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// FuzzControl feeds a byte stream to a control connection (an in-memory
// pipe) and then hangs up. The first input byte picks the responder: bit
// 0 with a secret (hello → request → auth → auth_ok, the request and auth
// read with the small frame cap), bit 1 with TLS (preamble inside a TLS
// handshake, plain connections refused with code tls). Nothing may panic;
// the connection must end within 2 s of the hang-up; the session slot,
// its rate reservation and the connection slot must be released; and the
// process allocates at most 2 MiB plus 64 × the input meanwhile (the
// counter is process-wide, so the fuzzing engine's own few hundred kB
// count too: this catches a session that sizes something from the
// request, such as a 32 MiB sequence bitmap, or a frame before auth read
// at its announced size; TestFrameMemory checks frames to the byte).
func FuzzControl(f *testing.F) {
	pre := func(v uint16) []byte {
		b := []byte(wire.MagicControl + "\x00\x00")
		binary.BigEndian.PutUint16(b[4:], v)
		return b
	}
	frame := func(typ string, body string) []byte {
		js := `{"type":"` + typ + `"`
		if body != "" {
			js += `,"body":` + body
		}
		js += "}"
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(js))), js...)
	}
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	rtt := `{"kind":"rtt","streams":0,"duration_ns":1000000000,"interval_ns":10000000}`
	zeros := `"` + base64.StdEncoding.EncodeToString(make([]byte, wire.NonceLen)) + `"`
	auth := `{"nonce":` + zeros + `,"mac":` + zeros + `}`
	f.Add(cat([]byte{0}, pre(wire.Version), frame("request", rtt), frame("start", ""), frame("stop", `{"reason":"done"}`)))
	f.Add(cat([]byte{0}, pre(wire.Version), frame("request", `{"kind":"tcp","streams":2,"duration_ns":1000000000,"interval_ns":10000000,"reverse":true,"pacing_bps":4611686018427387904}`)))
	f.Add(cat([]byte{0}, pre(wire.Version), frame("request", `{"kind":"udp","duration_ns":1000000000,"interval_ns":10000000,"reverse":true,"rate_bps":1000000,"size":1000}`), frame("start", "")))
	f.Add(cat([]byte{1}, pre(wire.Version), frame("request", rtt), frame("auth", auth)))   // a wrong proof
	f.Add(cat([]byte{1}, pre(wire.Version), frame("auth", auth)))                          // auth before the request
	f.Add(cat([]byte{1}, pre(wire.Version), frame("request", rtt), []byte{0, 0, 0x10, 1})) // an auth frame past 4 KiB
	f.Add(cat([]byte{0}, pre(wire.Version), []byte{0, 16, 0, 0}))                          // a request frame of 1 MiB
	f.Add(cat([]byte{2}, pre(wire.Version), frame("request", rtt)))                        // plain to a TLS responder
	f.Add(cat([]byte{3}, []byte{0x16, 3, 1, 0, 5, 1, 0, 0, 1, 0}, pre(wire.Version)))      // a broken TLS handshake
	f.Add(cat([]byte{0}, pre(wire.Version+1)))
	f.Add(cat([]byte{0}, pre(wire.Version), frame("request", rtt), frame("start", ""), []byte{0xff, 0xff, 0xff, 0xff}))
	tlsCfg := fuzzTLS(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		cfg := Config{MaxRateBps: 10e6}
		if data[0]&1 != 0 {
			cfg.Secret = testSecret
		}
		if data[0]&2 != 0 {
			cfg.TLS = tlsCfg
		}
		s := socketless(t, cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		client, server := net.Pipe()
		defer client.Close()
		drained := make(chan struct{})
		go func() { defer close(drained); _, _ = io.Copy(io.Discard, client) }()
		before := heapAllocs()
		if !s.conns.acquire(netip.Addr{}) {
			t.Fatal("no connection slot")
		}
		s.wg.Add(1)
		go s.routineConn(ctx, server, netip.Addr{})
		_ = client.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = client.Write(data[1:])
		hungUp := time.Now()
		client.Close()
		s.wg.Wait()
		<-drained
		if took := time.Since(hungUp); took > 2*time.Second {
			t.Errorf("connection ended %v after the hang-up", took)
		}
		if alloc := heapAllocs() - before; alloc > 2<<20+64*uint64(len(data)) {
			t.Errorf("responder allocated %d bytes for %d input bytes", alloc, len(data))
		}
		st := s.Stats()
		if st.Panics != 0 || st.Sessions != 0 || st.Conns != 0 || s.rateBps != 0 {
			t.Fatalf("after the connection: %+v, rate reserved %d", st, s.rateBps)
		}
	})
}

// fuzzTLS is a responder's TLS configuration with a fresh self-signed
// certificate.
func fuzzTLS(f *testing.F) *tls.Config {
	cert, err := servetest.Cert()
	if err != nil {
		f.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
}
