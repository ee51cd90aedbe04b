package serve

// Attack tests (issue 8): each performs an attack on a responder and
// asserts what the responder does. Network-level attacks come from a
// second process (an attacker child, see attacker_test.go); the memory
// and fd-exhaustion attacks hit a responder child, measured on its own.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/testkit"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// startServerAddr is startServer (auth_test.go) with the responder's
// address.
func startServerAddr(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	srv := startServer(t, cfg)
	return srv, srv.Addr().String()
}

// outcome reads an attacker child's JSON outcome.
func outcome(t *testing.T, c *child, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(c.line(t, 30*time.Second)), v); err != nil {
		t.Fatal(err)
	}
}

// legit runs a well-behaved RTT test from bind and fails the test if it
// is not served.
func legit(t *testing.T, addr, bind string) {
	t.Helper()
	if err := legitRTT(addr, bind); err != nil {
		t.Fatalf("legitimate test from %s: %v", bind, err)
	}
}

func legitRTT(addr, bind string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	res, err := tester.RunRTT(ctx, tester.Target{Addr: addr, Bind: bind}, result.RTTConfig{Count: 3, Interval: 10 * time.Millisecond, Size: 64}, nil)
	if err == nil && res.Summary.Received != 3 {
		err = fmt.Errorf("%d of 3 replies", res.Summary.Received)
	}
	return err
}

// legitWithin retries a legitimate test every 100 ms until it is served
// or d passes, and returns how long it took.
func legitWithin(t *testing.T, addr, bind string, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		err := legitRTT(addr, bind)
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > d {
			t.Fatalf("no legitimate test served within %v: %v", d, err)
		}
		time.Sleep(100 * time.Millisecond) // real time: a responder child process under attack frees a slot at its real 2 s preamble timeout; no signal crosses the process
	}
}

// TestAttackEcho: an attacker process sends, in one rtt session, the
// datagram that used to panic the responder (100 bytes, echo mode 2,
// reply size 40), a 40-byte probe asking for 65,507 bytes, a 40-byte
// stamped probe (the stamp would make its reply 48), a probe from a
// second source port, a 40-byte held probe (as the stamped one), and a burst of 200 probes against an announced
// 20. Replies: 40 bytes, ≤ 40 bytes, none, none, none, and only what is left
// of the budget (20 + 10 % + 10 = 32 replies in all). No panic, and a
// legitimate client is served after. In an mtu session a 40-byte probe
// gets its 9,000-byte path-MTU reply, and no more than 9,000 bytes.
func TestAttackEcho(t *testing.T) {
	srv, addr := startServerAddr(t, Config{})
	rtt := wire.Request{Kind: wire.KindRTT, Duration: 5 * time.Second, Interval: time.Second, Probes: 20, ProbeSize: 100}
	a := startChild(t, "attack:echo", echoAttack{Addr: addr, Req: rtt, Probes: []probe{
		{Size: 100, Mode: wire.EchoSized, ReplySize: 40, Count: 1},
		{Size: 40, Mode: wire.EchoSized, ReplySize: 65507, Count: 1},
		{Size: 40, Mode: wire.EchoStamped, Count: 1},
		{Size: 64, Mode: wire.EchoMirror, Count: 1, OtherPort: true},
		{Size: 40, Mode: wire.EchoHeld, Count: 1},
		{Size: 64, Mode: wire.EchoMirror, Count: 200},
	}})
	var o echoOutcome
	outcome(t, a, &o)
	t.Logf("reply sizes per probe kind: %v, %v, %v, %v, %v, %d replies to 200", o.Replies[0], o.Replies[1], o.Replies[2], o.Replies[3], o.Replies[4], len(o.Replies[5]))
	if len(o.Replies[0]) != 1 || o.Replies[0][0] != 40 {
		t.Errorf("100-byte probe asking for 40: replies %v, want one of 40 bytes", o.Replies[0])
	}
	if len(o.Replies[1]) != 1 || o.Replies[1][0] > 40 {
		t.Errorf("40-byte probe asking for 65507: replies %v, want one of at most 40 bytes", o.Replies[1])
	}
	if len(o.Replies[2]) != 0 || len(o.Replies[3]) != 0 || len(o.Replies[4]) != 0 {
		t.Errorf("short stamped probe %v, other port %v, short held probe %v: want no replies", o.Replies[2], o.Replies[3], o.Replies[4])
	}
	if n := len(o.Replies[5]); n > 30 || n < 20 {
		t.Errorf("%d replies to a burst of 200, want the 30 left of a 32-reply budget (≥ 20 on loopback)", n)
	}
	if p := srv.Stats().Panics; p != 0 {
		t.Errorf("%d panics recovered", p)
	}
	legit(t, addr, "127.0.0.1")

	mtu := wire.Request{Kind: wire.KindRTT, Duration: 5 * time.Second, Interval: time.Second, Probes: 10, MTU: true}
	m := startChild(t, "attack:echo", echoAttack{Addr: addr, Req: mtu, Probes: []probe{
		{Size: 40, Mode: wire.EchoSized, ReplySize: 9000, Count: 1},
		{Size: 40, Mode: wire.EchoSized, ReplySize: 20000, Count: 1},
	}})
	outcome(t, m, &o)
	if len(o.Replies[0]) != 1 || o.Replies[0][0] != 9000 || len(o.Replies[1]) != 1 || o.Replies[1][0] != 9000 {
		t.Errorf("mtu session, 40-byte probes asking for 9000 and 20000 bytes: replies %v, %v; want 9000 and 9000", o.Replies[0], o.Replies[1])
	}
}

// TestAttackCompactEcho: the compact header (18..39-byte datagrams)
// keeps the responder's rules. In an rtt session announcing 20 probes of
// 100 bytes (a budget of 32 replies), an attacker process sends an
// 18-byte compact echo (mirrored: one 18-byte reply), one from a second
// source port and one with another session's tag (no reply), a 39-byte
// one (39 bytes back), then a burst of 200 (only what is left of the
// budget). No panic, and a legitimate client is served after.
func TestAttackCompactEcho(t *testing.T) {
	srv, addr := startServerAddr(t, Config{})
	rtt := wire.Request{Kind: wire.KindRTT, Duration: 5 * time.Second, Interval: time.Second, Probes: 20, ProbeSize: 100}
	a := startChild(t, "attack:echo", echoAttack{Addr: addr, Req: rtt, Probes: []probe{
		{Size: wire.CompactLen, Count: 1},
		{Size: wire.CompactLen, Count: 1, OtherPort: true},
		{Size: wire.CompactLen, Count: 1, WrongTag: true},
		{Size: 39, Mode: wire.EchoSized, ReplySize: 9000, Count: 1},
		{Size: wire.CompactLen, Count: 200},
	}})
	var o echoOutcome
	outcome(t, a, &o)
	t.Logf("replies: %v, %v, %v, %v, %d to 200", o.Replies[0], o.Replies[1], o.Replies[2], o.Replies[3], len(o.Replies[4]))
	if len(o.Replies[0]) != 1 || o.Replies[0][0] != wire.CompactLen {
		t.Errorf("18-byte compact echo: replies %v, want one of 18 bytes", o.Replies[0])
	}
	if len(o.Replies[1]) != 0 || len(o.Replies[2]) != 0 {
		t.Errorf("other port %v, wrong tag %v: want no replies", o.Replies[1], o.Replies[2])
	}
	if len(o.Replies[3]) != 1 || o.Replies[3][0] != 39 {
		t.Errorf("39-byte compact echo (no sized mode in the compact header): replies %v, want one of 39 bytes", o.Replies[3])
	}
	if n := len(o.Replies[4]); n > 30 || n < 20 {
		t.Errorf("%d replies to a burst of 200, want the 30 left of a 32-reply budget (≥ 20 on loopback)", n)
	}
	if p := srv.Stats().Panics; p != 0 {
		t.Errorf("%d panics recovered", p)
	}
	legit(t, addr, "127.0.0.1")
}

// TestAttackFDExhaustion: a responder child with RLIMIT_NOFILE 100. With
// the default connection cap (100 − 64 = 36) an attacker's 300 silent
// connections are cut at the cap and after the 2 s preamble timeout,
// and a legitimate test is served within 3 s while the attacker still
// holds its sockets. With the cap lifted past the fd limit, accept fails with
// EMFILE: the responder waits it out (accept errors counted) instead of
// exiting, and serves once the attacker lets go.
func TestAttackFDExhaustion(t *testing.T) {
	for _, tc := range []struct {
		name     string
		maxConns int
	}{{"cap", 0}, {"emfile", 10000}} {
		t.Run(tc.name, func(t *testing.T) {
			r, addr := startResponder(t, childConfig{NoFile: 100, Config: Config{MaxConns: tc.maxConns, MaxConnsPerAddr: 10000}})
			a := startChild(t, "attack:conns", connsAttack{Addr: addr, N: 300, Bind: "127.0.0.2"})
			var o connsOutcome
			outcome(t, a, &o)
			t.Logf("attacker opened %d connections (%d failed)", o.Opened, o.Failed)
			if tc.name == "cap" {
				t.Logf("legitimate test served after %v", legitWithin(t, addr, "127.0.0.1", 3*time.Second))
			}
			a.stop(t)
			if tc.name == "emfile" {
				legit(t, addr, "127.0.0.1")
			}
			if !r.alive() {
				t.Fatal("responder exited under fd exhaustion")
			}
			var st Stats
			if err := json.Unmarshal([]byte(r.stop(t)), &st); err != nil {
				t.Fatal(err)
			}
			t.Logf("responder stats: %+v", st)
			if tc.name == "cap" && st.RefusedConns == 0 {
				t.Error("no connection refused at the cap")
			}
			if tc.name == "emfile" && st.AcceptErrors == 0 {
				t.Error("no accept error: the attack did not exhaust the fds")
			}
		})
	}
}

// TestAttackUnauthMemory: against a responder child with a secret, an
// attacker process opens 1,000 connections that send a preamble and a
// frame header announcing 1 MiB (as their request, the first frame the
// responder reads), and 1,000 that send a preamble and wait (the
// responder holds those, waiting for the request and the proof). Each
// comes from one of 250 addresses, 4 per address, within the auth
// throttle's burst of 5 (from one address the rest would be refused as
// throttled, see TestAuthThrottle). The responder used to allocate each
// frame's announced length up front (RSS 6 MB → 1.05 GB). Now a frame
// before auth beyond 4 KiB is refused at its header, and a held
// connection costs its goroutine, socket and read buffer: the RSS may
// grow by at most 40 MB (20 kB per connection).
func TestAttackUnauthMemory(t *testing.T) {
	r, addr := startResponder(t, childConfig{Config: Config{Secret: testSecret, MaxConnsPerAddr: 5000}})
	pid := r.cmd.Process.Pid
	warm := startChild(t, "attack:conns", connsAttack{Addr: addr, N: 1, Send: "header"})
	var o connsOutcome
	outcome(t, warm, &o)
	warm.stop(t)
	before, fdsBefore := rssKB(t, pid), fdCount(t, pid)
	headers := startChild(t, "attack:conns", connsAttack{Addr: addr, N: 1000, Send: "header", Bind: "127.1.0.1", Spread: 250})
	outcome(t, headers, &o)
	held := startChild(t, "attack:conns", connsAttack{Addr: addr, N: 1000, Send: "preamble", Bind: "127.2.0.1", Spread: 250})
	var o2 connsOutcome
	outcome(t, held, &o2)
	if o.Opened+o2.Opened < 2000 {
		t.Fatalf("attacker opened %d of 2000 connections", o.Opened+o2.Opened)
	}
	// The attacker's connects complete in the kernel before the accept
	// loop takes them; on a busy machine it may lag by a few hundred.
	var fds int
	testkit.Poll(10*time.Second, func() bool { fds = fdCount(t, pid); return fds-fdsBefore >= 900 })
	peak := rssKB(t, pid)
	t.Logf("responder RSS %d kB before, %d kB with 2000 unauthenticated connections (%d fds, %d before)", before, peak, fds, fdsBefore)
	if fds-fdsBefore < 900 {
		t.Errorf("responder holds %d connections more, want the ~1000 waiting for auth", fds-fdsBefore)
	}
	if growth := peak - before; growth > 40<<10 {
		t.Errorf("RSS grew by %d kB, want ≤ 40 MB", growth)
	}
}

// fdCount is how many file descriptors a process has open.
func fdCount(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestAttackConnsPerAddress: an attacker process opens 500 silent
// connections from 127.0.0.2. The responder holds at most its per-address
// cap of them, drops them at the 2 s preamble timeout, and serves a
// legitimate client from 127.0.0.1 meanwhile.
func TestAttackConnsPerAddress(t *testing.T) {
	srv, addr := startServerAddr(t, Config{MaxStreams: 8})
	a := startChild(t, "attack:conns", connsAttack{Addr: addr, Bind: "127.0.0.2", N: 500})
	var o connsOutcome
	outcome(t, a, &o)
	capPerAddr := 2*8 + 8
	// The kernel completes connections before the responder accepts
	// them: wait until it has refused all but the cap.
	refused := testkit.Poll(2*time.Second, func() bool { return srv.Stats().RefusedConns >= int64(o.Opened-capPerAddr) })
	if st := srv.Stats(); !refused || st.Conns > capPerAddr {
		t.Errorf("holding %d connections (refused %d) of %d opened: want at most the cap of %d", st.Conns, st.RefusedConns, o.Opened, capPerAddr)
	}
	legit(t, addr, "127.0.0.1")
	start := time.Now()
	if !testkit.Poll(3*time.Second, func() bool { return srv.Stats().Conns == 0 }) {
		t.Errorf("%d silent connections still open 3 s later", srv.Stats().Conns)
	}
	t.Logf("silent connections closed %v after the legitimate test", time.Since(start))
}

// TestAttackSlotHog: an attacker process asks for 16 rtt sessions from
// 127.0.0.2 and never reads or stops them. It gets the per-address
// maximum (4); the rest are refused as busy with a retry-after and the
// flag named. A legitimate client from 127.0.0.1 is served meanwhile,
// and the hog's sessions end within their 1 s duration plus the 6 s
// grace plus 2 s (they used to last duration + 15 s).
func TestAttackSlotHog(t *testing.T) {
	srv, addr := startServerAddr(t, Config{})
	started := time.Now()
	a := startChild(t, "attack:hog", hogAttack{Addr: addr, Bind: "127.0.0.2", N: 16,
		Req: wire.Request{Kind: wire.KindRTT, Duration: time.Second, Interval: 10 * time.Millisecond}})
	var o hogOutcome
	outcome(t, a, &o)
	t.Logf("hog: %+v", o)
	if o.Accepted != DefaultMaxSessionsPerAddr || o.Busy != 16-DefaultMaxSessionsPerAddr {
		t.Errorf("hog got %d sessions, %d refused: want %d and %d", o.Accepted, o.Busy, DefaultMaxSessionsPerAddr, 16-DefaultMaxSessionsPerAddr)
	}
	if o.RetryAfter < time.Second || !strings.Contains(o.Message, "--max-sessions-per-addr") || !strings.Contains(o.Message, "retry after") {
		t.Errorf("refusal %q, retry after %v: want the flag named and a retry-after ≥ 1 s", o.Message, o.RetryAfter)
	}
	legit(t, addr, "127.0.0.1")
	if !testkit.Poll(10*time.Second, func() bool { return srv.Sessions() == 0 }) {
		t.Fatalf("%d sessions still held", srv.Sessions())
	}
	if took := time.Since(started); took > time.Second+wire.EndGrace+2*time.Second {
		t.Errorf("the hog's sessions lasted %v, want ≤ 9 s", took)
	}
}

// TestAttackStalledReader: an attacker process runs two reverse TCP tests
// of 1 s and reads neither its data nor its control connection. The
// responder's sender stops at the duration, waits at most 5 s for
// acknowledgements that never come, and the result's write times out:
// the sessions end within 1 s + 6 s + 2 s of their start.
func TestAttackStalledReader(t *testing.T) {
	srv, addr := startServerAddr(t, Config{})
	started := time.Now()
	a := startChild(t, "attack:hog", hogAttack{Addr: addr, Bind: "127.0.0.2", N: 2,
		Req: wire.Request{Kind: wire.KindTCP, Streams: 1, Reverse: true, Duration: time.Second, Interval: 10 * time.Millisecond}})
	var o hogOutcome
	outcome(t, a, &o)
	if o.Accepted != 2 {
		t.Fatalf("hog: %+v, want 2 sessions", o)
	}
	if !testkit.Poll(15*time.Second, func() bool { return srv.Sessions() == 0 }) {
		t.Fatalf("%d sessions still held 15 s later", srv.Sessions())
	}
	took := time.Since(started)
	t.Logf("stalled sessions ended %v after they started", took)
	if took > time.Second+wire.EndGrace+2*time.Second {
		t.Errorf("the stalled sessions lasted %v, want ≤ 9 s", took)
	}
}

// TestAttackLimits: requests that used to lift the responder's limits are
// refused, each with the limit and the flag that raises it. The first is
// the overflow: 2 streams paced at 2^62 bit/s summed to a
// negative rate and passed --max-rate 10M.
func TestAttackLimits(t *testing.T) {
	_, addr := startServerAddr(t, Config{MaxRateBps: 10e6, MaxWindow: 4 << 20, AllowCC: []string{"reno"}})
	tcp := func(f func(*wire.Request)) wire.Request {
		r := wire.Request{Kind: wire.KindTCP, Streams: 2, Duration: time.Second, Interval: time.Second, Reverse: true, PacingBps: 1e6}
		f(&r)
		return r
	}
	for _, tc := range []struct {
		name  string
		req   wire.Request
		code  wire.ErrorCode
		names string
	}{
		{"pacing overflow", tcp(func(r *wire.Request) { r.PacingBps = 1 << 62 }), wire.CodeLimit, "--max-rate"},
		{"udp rate", wire.Request{Kind: wire.KindUDP, Reverse: true, RateBps: 9.2e18, Size: 1000, Duration: time.Second, Interval: time.Second}, wire.CodeLimit, "--max-rate"},
		{"window", tcp(func(r *wire.Request) { r.Window = 64 << 20 }), wire.CodeLimit, "--max-window"},
		{"write size", tcp(func(r *wire.Request) { r.WriteSize = 1 << 30 }), wire.CodeLimit, "--max-write-size"},
		{"write buffers", tcp(func(r *wire.Request) { r.WriteSize, r.Streams, r.PacingBps = 8<<20, 32, 1e5 }), wire.CodeLimit, "write buffers per test"},
		{"cc", tcp(func(r *wire.Request) { r.CC = "cubic" }), wire.CodeLimit, "--allow-cc"},
		{"cs6", tcp(func(r *wire.Request) { r.DSCP = 48 }), wire.CodeLimit, "--allow-dscp"},
		{"cs7", tcp(func(r *wire.Request) { r.DSCP = 56 }), wire.CodeLimit, "--allow-dscp"},
		{"probes", wire.Request{Kind: wire.KindRTT, Duration: time.Second, Interval: time.Second, Probes: 1e9}, wire.CodeLimit, "--max-probe-rate"},
		{"streams", tcp(func(r *wire.Request) { r.Streams = 1000 }), wire.CodeBadRequest, "--max-streams"},
		{"duration", tcp(func(r *wire.Request) { r.Duration = time.Hour }), wire.CodeBadRequest, "--max-duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := openRaw(addr, "", tc.req)
			if err == nil {
				s.c.Close()
				t.Fatal("accepted")
			}
			var we *wire.Error
			if !errors.As(err, &we) || we.Code != tc.code || !strings.Contains(we.Message, tc.names) {
				t.Fatalf("err = %v, want a %q refusal naming %s", err, tc.code, tc.names)
			}
		})
	}
	// --max-rate bounds what the responder sends, not an upload.
	s, err := openRaw(addr, "", wire.Request{Kind: wire.KindUDP, RateBps: 50e6, Size: 1000, Duration: time.Second, Interval: time.Second})
	if err != nil {
		t.Fatalf("a 50 Mbit/s UDP upload under --max-rate 10M: %v", err)
	}
	s.c.Close()
}

// TestSeqTrackingSizedFromRequest: one datagram with sequence number
// 2^28 − 1 in a 1 Mbit/s, 1 s UDP upload used to allocate a 32 MiB
// bitmap. Sized from the request (125 datagrams, plus margin), the
// session allocates under 64 kB for it.
func TestSeqTrackingSizedFromRequest(t *testing.T) {
	s := socketless(t, Config{})
	ss := addSession(t, s, wire.Request{Kind: wire.KindUDP, Duration: time.Second, RateBps: 1e6, Size: 1000})
	buf := make([]byte, udpBufLen)
	wire.PutUDP(buf, wire.UDPHeader{Type: wire.UDPData, Cookie: ss.cookie, Seq: 1<<28 - 1})
	from := netip.MustParseAddrPort("127.0.0.1:40000")
	before := heapAllocs()
	s.handlePacket(buf, 1000, from, rxInfo{mono: 1})
	if got := heapAllocs() - before; got > 64<<10 {
		t.Errorf("one datagram allocated %d bytes", got)
	}
	if st := ss.udpRx.Stats(0); st.Packets != 1 {
		t.Errorf("datagram not counted: %+v", st)
	}
}

// panicConn is a connection whose reads panic.
type panicConn struct{ net.Conn }

func (panicConn) Read([]byte) (int, error) { panic("injected") }

// TestPanicRecovered: a panic in a connection's handling (here injected
// in its first read) is logged and counted, its connection slot is
// released, and the responder goes on.
func TestPanicRecovered(t *testing.T) {
	s := socketless(t, Config{})
	ip := netip.MustParseAddr("127.0.0.1")
	if !s.conns.acquire(ip) {
		t.Fatal("no connection slot")
	}
	client, server := net.Pipe()
	defer client.Close()
	s.wg.Add(1)
	s.routineConn(context.Background(), panicConn{server}, ip)
	if st := s.Stats(); st.Panics != 1 || st.Conns != 0 {
		t.Errorf("after a panicking connection: %+v, want 1 panic and its slot released", st)
	}
}

// TestDataDirectionChecked: a data connection that claims the other
// direction than the request asked for (an upload whose stream says the
// responder sends: unpaced, past --max-rate) is closed at once, and the
// responder sends nothing on it.
func TestDataDirectionChecked(t *testing.T) {
	_, addr := startServerAddr(t, Config{MaxRateBps: 10e6})
	req := wire.Request{Kind: wire.KindTCP, Streams: 1, Duration: 2 * time.Second, Interval: time.Second}
	s, err := openRaw(addr, "", req)
	if err != nil {
		t.Fatal(err)
	}
	defer s.c.Close()
	d, err := openData(addr, "", wire.DataHello{Cookie: s.accept.Cookie, Stream: 0, ClientSends: false})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_ = d.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, err := io.Copy(io.Discard, d)
	if err != nil || n != 0 {
		t.Fatalf("reversed data connection: %d bytes, %v; want it closed (EOF) with nothing sent", n, err)
	}
}

// TestReverseTrainBudget: a reverse train counts against --max-rate
// (before, sendRate had no train case: back to back and never counted).
// Paced, it reserves its rate and is refused above the budget left; back
// to back (rate 0), it reserves the whole budget and is paced to it, so
// it cannot go faster than what it reserved. Without a budget it goes
// back to back, as before.
func TestReverseTrainBudget(t *testing.T) {
	const budget = 10e6
	s := socketless(t, Config{MaxRateBps: budget})
	train := func(rate int64) wire.Request {
		return wire.Request{Kind: wire.KindTrain, Reverse: true, TrainPackets: 100, Size: 1000, RateBps: rate, Duration: time.Second, Interval: time.Second}
	}
	reg := func(req wire.Request) (*session, error) {
		ss := s.newSession(req, fuzzPeer, s.cfg.Log)
		return ss, s.register(ss, sendRate(req, s.cfg.MaxRateBps))
	}
	if _, err := reg(train(2 * budget)); err == nil {
		t.Errorf("a train paced at twice the budget was taken")
	}
	paced, err := reg(train(4e6))
	if err != nil {
		t.Fatal(err)
	}
	if got := paced.trainSpec().RateBps; got != 4e6 {
		t.Errorf("a train asked at 4 Mbit/s is sent at %v bit/s", got)
	}
	if _, err := reg(train(0)); err == nil {
		t.Errorf("a back-to-back train was taken beside a paced one: it reserves the whole budget")
	}
	s.unregister(paced)
	b2b, err := reg(train(0))
	if err != nil {
		t.Fatal(err)
	}
	if got := b2b.trainSpec().RateBps; got != budget {
		t.Errorf("a back-to-back train under a %v bit/s budget is sent at %v bit/s, want the budget", budget, got)
	}
	s.unregister(b2b)

	free := socketless(t, Config{})
	ss := free.newSession(train(0), fuzzPeer, free.cfg.Log)
	if err := free.register(ss, sendRate(train(0), 0)); err != nil {
		t.Fatal(err)
	}
	if got := ss.trainSpec().RateBps; got != 0 {
		t.Errorf("without a budget a back-to-back train is paced at %v bit/s", got)
	}
}
