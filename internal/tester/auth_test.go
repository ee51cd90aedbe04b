package tester

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/serve"
	"github.com/fullpipe/fullpipe/internal/serve/servetest"
	"github.com/fullpipe/fullpipe/internal/wire"
)

var authSecret = []byte("q8Vd0uFZk1mJ3xR7tWcPzA==")

// TestFakeResponder: a responder that does not know the secret cannot
// pass for the real one. One that asks for a proof and answers with a
// made-up one, one that answers with accept at once, and one that asks
// for no secret at all are each reported as not proving the secret, in
// one line, before any test runs.
func TestFakeResponder(t *testing.T) {
	fakes := map[string]func(c net.Conn, br *bufio.Reader){
		"made-up proof": func(c net.Conn, br *bufio.Reader) {
			_ = wire.Encode(c, wire.TypeHello, wire.Hello{Version: wire.Version, Challenge: wire.NewNonce()})
			_, _ = wire.Decode(br) // request
			_, _ = wire.Decode(br) // auth
			_ = wire.Encode(c, wire.TypeAuthOK, wire.AuthOK{MAC: wire.NewNonce()})
		},
		"skips auth_ok": func(c net.Conn, br *bufio.Reader) {
			_ = wire.Encode(c, wire.TypeHello, wire.Hello{Version: wire.Version, Challenge: wire.NewNonce()})
			_, _ = wire.Decode(br)
			_, _ = wire.Decode(br)
			_ = wire.Encode(c, wire.TypeAccept, wire.Accept{Cookie: wire.NewCookie()})
		},
		"asks for no secret": func(c net.Conn, br *bufio.Reader) {
			_ = wire.Encode(c, wire.TypeHello, wire.Hello{Version: wire.Version})
		},
	}
	for name, fake := range fakes {
		t.Run(name, func(t *testing.T) {
			addr := fakePeer(t, func(c net.Conn) {
				readPreamble(c)
				_ = wire.WritePreamble(c, wire.MagicControl)
				br := bufio.NewReader(c)
				fake(c, br)
				_, _ = io.Copy(io.Discard, br)
			})
			_, err := RunRTT(testCtx(t, 10*time.Second), Target{Addr: addr, Secret: authSecret}, result.RTTConfig{Count: 1, Interval: 10 * time.Millisecond, Size: 64}, nil)
			var rae *wire.ResponderAuthError
			if !errors.As(err, &rae) {
				t.Fatalf("err = %v, want a ResponderAuthError", err)
			}
			if msg := oneLine(t, err); !strings.Contains(msg, "did not prove the shared secret") {
				t.Errorf("error %q does not say the responder failed to prove the secret", msg)
			}
		})
	}
}

// tlsServer runs a responder with a fresh self-signed certificate and
// returns its address and the certificate's pin.
func tlsServer(t *testing.T) (string, []byte) {
	t.Helper()
	cert, err := servetest.Cert()
	if err != nil {
		t.Fatal(err)
	}
	_, addr := startServer(t, serve.Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}})
	pin, err := wire.ParsePin(wire.Fingerprint(cert.Certificate[0]))
	if err != nil {
		t.Fatal(err)
	}
	return addr, pin
}

// TestTLSPinned: a real TCP test on loopback with the control connection
// in TLS pinned to the responder's certificate; data connections plain.
func TestTLSPinned(t *testing.T) {
	addr, pin := tlsServer(t)
	res, err := RunTCP(testCtx(t, 15*time.Second), Target{Addr: addr, TLS: true, TLSPin: pin}, result.TCPConfig{Streams: 2, Bytes: 2_000_000, Interval: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Bytes != 2_000_000 {
		t.Errorf("received %d bytes, want 2,000,000", res.Summary.Bytes)
	}
	if res.Meta.Server.Software == "" {
		t.Error("the result does not record the responder's software (sent in accept)")
	}
}

// TestTLSRefusals: a wrong pin, a plain client against a TLS responder
// and a TLS client against a plain one each fail in one line that says
// what to fix.
func TestTLSRefusals(t *testing.T) {
	addr, pin := tlsServer(t)
	_, plainAddr := startServer(t, serve.Config{})
	wrongPin := append([]byte(nil), pin...)
	wrongPin[0] ^= 0xff
	rtt := result.RTTConfig{Count: 1, Interval: 10 * time.Millisecond, Size: 64}

	_, err := RunRTT(testCtx(t, 10*time.Second), Target{Addr: addr, TLS: true, TLSPin: wrongPin}, rtt, nil)
	var pe *PinError
	if !errors.As(err, &pe) || !strings.Contains(oneLine(t, err), "--tls-pin") {
		t.Errorf("wrong pin: err = %v, want a PinError naming --tls-pin", err)
	}
	_, err = RunRTT(testCtx(t, 10*time.Second), Target{Addr: addr}, rtt, nil)
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeTLS || !strings.Contains(oneLine(t, err), "--tls") {
		t.Errorf("plain client: err = %v, want a wire.Error %q naming --tls", err, wire.CodeTLS)
	}
	_, err = RunRTT(testCtx(t, 10*time.Second), Target{Addr: plainAddr, TLS: true, TLSPin: pin}, rtt, nil)
	if err == nil || !strings.Contains(oneLine(t, err), "--tls-cert") {
		t.Errorf("TLS client, plain responder: err = %v, want one line naming --tls-cert", err)
	}
}

// TestTLSReverseOutlivesHandshake: a reverse test longer than the
// responder's 10 s handshake timeout, over a TLS control connection, runs
// to its end: no deadline of the greeting stays on a data connection or
// on the control connection. Paced at 8 Mbit/s to cost little CPU.
func TestTLSReverseOutlivesHandshake(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 11 s")
	}
	addr, pin := tlsServer(t)
	cfg := result.TCPConfig{Streams: 1, Duration: 11 * time.Second, Reverse: true, PacingBps: 8_000_000, Interval: time.Second}
	res, err := RunTCP(testCtx(t, 30*time.Second), Target{Addr: addr, TLS: true, TLSPin: pin}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 11 s at 8 Mbit/s is 11 MB; more than 9 MB says the stream ran past 10 s.
	if res.Summary.Bytes < 9_000_000 {
		t.Errorf("received %d bytes, want about 11,000,000 (8 Mbit/s for 11 s)", res.Summary.Bytes)
	}
}
