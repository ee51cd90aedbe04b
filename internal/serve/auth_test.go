package serve

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/serve/servetest"
	"github.com/fullpipe/fullpipe/internal/testkit"
	"github.com/fullpipe/fullpipe/internal/wire"
)

var testSecret = []byte("q8Vd0uFZk1mJ3xR7tWcPzA==")

// startServer runs a responder on a loopback port until the test ends.
func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	srv, _ := runServer(t, cfg)
	return srv
}

// runServer runs a responder on a loopback port; stop ends it and waits
// (also done at cleanup; calling it twice is fine).
func runServer(t *testing.T, cfg Config) (*Server, func()) {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	srv, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Error("responder did not stop within 5 s")
			}
		})
	}
	t.Cleanup(stop)
	return srv, stop
}

// rawClient is a hand-driven control connection, as an attacker has.
type rawClient struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

// dialRaw connects from local (an IP on loopback, "" for any), writes the
// preamble and reads the responder's.
func dialRaw(t *testing.T, srv *Server, local string) *rawClient {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	c, err := d.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := wire.WritePreamble(c, wire.MagicControl); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	if _, _, err := wire.ReadPreamble(br); err != nil {
		t.Fatal(err)
	}
	return &rawClient{t: t, c: c, br: br}
}

func (r *rawClient) read() wire.Msg {
	r.t.Helper()
	m, err := wire.Decode(r.br)
	if err != nil {
		r.t.Fatalf("reading a frame: %v", err)
	}
	return m
}

func (r *rawClient) send(typ string, v any) {
	r.t.Helper()
	if err := wire.Encode(r.c, typ, v); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rawClient) hello() wire.Hello {
	r.t.Helper()
	var h wire.Hello
	if err := r.read().Into(wire.TypeHello, &h); err != nil {
		r.t.Fatal(err)
	}
	return h
}

// expectError reads the next frame and checks it is an error of code.
func (r *rawClient) expectError(code wire.ErrorCode) *wire.Error {
	r.t.Helper()
	err := r.read().Into(wire.TypeAccept, nil)
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != code {
		r.t.Fatalf("got %v, want an error with code %q", err, code)
	}
	return we
}

var rttReq = wire.Request{Kind: wire.KindRTT, Duration: time.Second, Interval: time.Second}

// prove sends req and a proof of secret for proofReq's bytes.
func (r *rawClient) prove(challenge []byte, secret []byte, req, proofReq wire.Request) wire.Auth {
	r.t.Helper()
	body, _ := json.Marshal(req)
	proofBody, _ := json.Marshal(proofReq)
	nonce := wire.NewNonce()
	a := wire.Auth{Nonce: nonce, MAC: wire.ProofMAC(secret, wire.RoleClient, challenge, nonce, proofBody)}
	r.send(wire.TypeRequest, json.RawMessage(body))
	r.send(wire.TypeAuth, a)
	return a
}

// TestHelloShowsNoHost: before auth the hello carries only the version and
// the challenge, or without a secret the version and the limits (which
// refusals tell anyone anyway); the software and kernel come in accept,
// after the proof.
func TestHelloShowsNoHost(t *testing.T) {
	for _, secret := range [][]byte{nil, testSecret} {
		srv := startServer(t, Config{Secret: secret, Software: "fullpipe 9.9.9-test", Kernel: "Linux 6.66.6-test"})
		r := dialRaw(t, srv, "")
		m := r.read()
		if m.Type != wire.TypeHello {
			t.Fatalf("first frame %q, want hello", m.Type)
		}
		var keys map[string]any
		if err := json.Unmarshal(m.Body, &keys); err != nil {
			t.Fatal(err)
		}
		for k := range keys {
			if k != "version" && k != "challenge" && (k != "limits" || secret != nil) {
				t.Errorf("secret %v: hello has key %q: %s", secret != nil, k, m.Body)
			}
		}
		if _, ok := keys["limits"]; ok != (secret == nil) {
			t.Errorf("secret %v: hello announces limits %v, want %v: %s", secret != nil, ok, secret == nil, m.Body)
		}
		if s := string(m.Body); strings.Contains(s, "6.66.6") || strings.Contains(s, "9.9.9") {
			t.Errorf("hello discloses the host: %s", s)
		}
		var h wire.Hello
		_ = m.Into(wire.TypeHello, &h)
		if secret == nil {
			r.send(wire.TypeRequest, rttReq)
		} else {
			r.prove(h.Challenge, secret, rttReq, rttReq)
			if err := r.read().Into(wire.TypeAuthOK, &wire.AuthOK{}); err != nil {
				t.Fatal(err)
			}
		}
		var acc wire.Accept
		if err := r.read().Into(wire.TypeAccept, &acc); err != nil {
			t.Fatal(err)
		}
		if acc.Kernel != "Linux 6.66.6-test" || acc.Server != "fullpipe 9.9.9-test" {
			t.Errorf("accept host = %+v, want the responder's software and kernel", acc.Host)
		}
	}
}

// TestProofBoundToRequest: a proof made for one request does not admit
// another (a man in the middle swapping the request), and a whole
// captured exchange replayed on a new connection fails (fresh challenge).
func TestProofBoundToRequest(t *testing.T) {
	srv := startServer(t, Config{Secret: testSecret})
	big := wire.Request{Kind: wire.KindTCP, Streams: 8, Duration: 5 * time.Second, Interval: time.Second, Reverse: true}

	r := dialRaw(t, srv, "")
	r.prove(r.hello().Challenge, testSecret, big, rttReq)
	r.expectError(wire.CodeAuth)

	first := dialRaw(t, srv, "")
	ch := first.hello().Challenge
	captured := first.prove(ch, testSecret, rttReq, rttReq)
	if err := first.read().Into(wire.TypeAuthOK, &wire.AuthOK{}); err != nil {
		t.Fatalf("the genuine exchange failed: %v", err)
	}
	replay := dialRaw(t, srv, "")
	if bytesEqual(replay.hello().Challenge, ch) {
		t.Fatal("two connections got the same challenge")
	}
	replay.send(wire.TypeRequest, rttReq)
	replay.send(wire.TypeAuth, captured)
	replay.expectError(wire.CodeAuth)
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

// TestAuthThrottle: after authBurst failures from one address the next
// attempt is refused as throttled before any challenge, with the wait in
// the message; another address still gets its challenge.
func TestAuthThrottle(t *testing.T) {
	srv := startServer(t, Config{Secret: testSecret})
	wrong := []byte("Zm9vYmFyYmF6cXV4cXV1eA==")
	for i := range authBurst {
		r := dialRaw(t, srv, "127.0.0.1")
		r.prove(r.hello().Challenge, wrong, rttReq, rttReq)
		if we := r.expectError(wire.CodeAuth); !strings.Contains(we.Message, "--secret-file") {
			t.Errorf("attempt %d: %q does not name the fix", i, we.Message)
		}
	}
	r := dialRaw(t, srv, "127.0.0.1")
	we := r.expectError(wire.CodeThrottled)
	if !strings.Contains(we.Message, "wait") || !strings.Contains(we.Message, "127.0.0.1") {
		t.Errorf("throttled message %q: want the address and the wait", we.Message)
	}
	other := dialRaw(t, srv, "127.0.0.2")
	h := other.hello()
	if len(h.Challenge) != wire.NonceLen {
		t.Fatalf("another address got hello %+v, want a challenge", h)
	}
	other.prove(h.Challenge, testSecret, rttReq, rttReq)
	if err := other.read().Into(wire.TypeAuthOK, &wire.AuthOK{}); err != nil {
		t.Fatalf("another address with the right secret: %v", err)
	}
}

// TestAuthLimiter: the bucket on an injected clock: authBurst attempts,
// then one per refill; successes and abandoned attempts are given back;
// IPv6 counts per /64.
func TestAuthLimiter(t *testing.T) {
	l := newAuthLimiter(3, 10*time.Second)
	t0 := time.Unix(1000, 0)
	a := netip.MustParseAddr("192.0.2.1")
	for i := range 3 {
		if _, ok := l.take(a, t0); !ok {
			t.Fatalf("attempt %d refused within the burst", i)
		}
	}
	wait, ok := l.take(a, t0.Add(time.Second))
	if ok || wait != 9*time.Second {
		t.Fatalf("4th attempt 1 s later: ok %v wait %v, want refused for 9s", ok, wait)
	}
	if _, ok := l.take(netip.MustParseAddr("192.0.2.2"), t0); !ok {
		t.Fatal("another address is throttled")
	}
	if _, ok := l.take(a, t0.Add(10*time.Second)); !ok {
		t.Fatal("refused after a full refill period")
	}
	l.refund(a, t0.Add(10*time.Second))
	if _, ok := l.take(a, t0.Add(10*time.Second)); !ok {
		t.Fatal("a refunded attempt is not available again")
	}
	v6a, v6b := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::ffff:1")
	for range 3 {
		l.take(v6a, t0)
	}
	if _, ok := l.take(v6b, t0); ok {
		t.Fatal("another address in the same IPv6 /64 is not throttled")
	}
}

// TestFrameCapBeforeAuth: the frames read before the proof, request and
// auth, may not pass wire.MaxSmallFrame: a larger request is refused at
// its header (protocol, naming the cap), and a genuine proof padded past
// the cap is refused (auth). After authentication frames have their
// normal size: a stop whose reason passes the cap ends the test with
// that reason.
func TestFrameCapBeforeAuth(t *testing.T) {
	srv := startServer(t, Config{Secret: testSecret})
	pad := strings.Repeat("x", wire.MaxSmallFrame)
	big := rttReq
	big.CC = pad
	r := dialRaw(t, srv, "")
	r.hello()
	r.send(wire.TypeRequest, big)
	if we := r.expectError(wire.CodeProtocol); !strings.Contains(we.Message, fmt.Sprintf("exceeds %d", wire.MaxSmallFrame)) {
		t.Errorf("a request past the cap: %q, want it named", we.Message)
	}

	r = dialRaw(t, srv, "")
	ch := r.hello().Challenge
	body, _ := json.Marshal(rttReq)
	nonce := wire.NewNonce()
	r.send(wire.TypeRequest, json.RawMessage(body))
	r.send(wire.TypeAuth, map[string]any{"nonce": nonce, "mac": wire.ProofMAC(testSecret, wire.RoleClient, ch, nonce, body), "pad": pad})
	r.expectError(wire.CodeAuth)

	r = dialRaw(t, srv, "")
	r.prove(r.hello().Challenge, testSecret, rttReq, rttReq)
	for _, typ := range []string{wire.TypeAuthOK, wire.TypeAccept} {
		if m := r.read(); m.Type != typ {
			t.Fatalf("got %q, want %q", m.Type, typ)
		}
	}
	r.send(wire.TypeStart, nil)
	if m := r.read(); m.Type != wire.TypeStarted {
		t.Fatalf("got %q, want started", m.Type)
	}
	r.send(wire.TypeStop, wire.Stop{Reason: pad})
	var res wire.Result
	for m := r.read(); ; m = r.read() {
		if m.Type != wire.TypeInterval {
			if err := m.Into(wire.TypeResult, &res); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if res.Reason != pad {
		t.Errorf("a stop past the cap after auth ended the test with %.60q, want its own reason", res.Reason)
	}
}

// TestPreambleDeadlineTLS: on a responder with TLS, the 2 s preamble
// deadline from accept covers the TLS handshake and the preamble inside
// it: a client that stalls after the handshake's first byte, or after a
// whole handshake, is closed about 2 s after it connected (not at the
// 10 s of the handshake steps), and its connection slot is released.
func TestPreambleDeadlineTLS(t *testing.T) {
	cert, err := servetest.Cert()
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}})
	stalls := map[string]func(net.Conn) net.Conn{
		"mid-handshake": func(c net.Conn) net.Conn { _, _ = c.Write([]byte{0x16}); return c },
		"after handshake": func(c net.Conn) net.Conn {
			tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}) // loopback, test only
			if err := tc.Handshake(); err != nil {
				t.Fatal(err)
			}
			return tc
		},
	}
	for name, stall := range stalls {
		start := time.Now()
		c, err := net.DialTimeout("tcp", srv.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(start.Add(5 * time.Second))
		_, err = io.Copy(io.Discard, stall(c)) // until the responder closes
		took := time.Since(start)
		c.Close()
		if took < preambleTimeout-200*time.Millisecond || took > preambleTimeout+time.Second {
			t.Errorf("%s: closed after %v (%v), want about %v", name, took.Round(time.Millisecond), err, preambleTimeout)
		}
		if !testkit.Poll(time.Second, func() bool { return srv.Stats().Conns == 0 }) {
			t.Errorf("%s: %d connections still held", name, srv.Stats().Conns)
		}
	}
}
