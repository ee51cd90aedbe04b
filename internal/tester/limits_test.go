package tester

// The responder's limits as the client sees them: announced in hello and
// checked before the request is sent, with the message the responder
// would give; and an older responder, which announces none, still serves.

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/serve"
	"github.com/fullpipe/fullpipe/internal/testkit"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// oldResponder stands in front of a responder on a loopback port and
// removes the limits from its hello: the client sees a responder of
// before the limits were announced. Data connections pass through as
// they are (the responder sees them all from 127.0.0.1, as the control
// connection).
func oldResponder(t *testing.T, backend string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex // guards conns
	var conns []net.Conn
	keep := func(c ...net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		conns = append(conns, c...)
	}
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() { // ends when the listener is closed
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", backend)
			if err != nil {
				c.Close()
				continue
			}
			keep(c, b)
			wg.Add(1)
			go func() { defer wg.Done(); relayOld(c, b) }()
		}
	}()
	return ln.Addr().String()
}

// relayOld relays client c to responder b, the hello without its limits,
// until either side closes.
func relayOld(c, b net.Conn) {
	defer c.Close()
	defer b.Close()
	var pre [wire.PreambleLen]byte
	if _, err := io.ReadFull(c, pre[:]); err != nil {
		return
	}
	if _, err := b.Write(pre[:]); err != nil {
		return
	}
	if string(pre[:4]) == wire.MagicControl {
		if _, err := io.ReadFull(b, pre[:]); err != nil {
			return
		}
		if _, err := c.Write(pre[:]); err != nil {
			return
		}
		m, err := wire.Decode(b)
		if err != nil {
			return
		}
		var body map[string]json.RawMessage
		if err := json.Unmarshal(m.Body, &body); err != nil {
			return
		}
		delete(body, "limits")
		if err := wire.Encode(c, m.Type, body); err != nil {
			return
		}
	}
	go func() { _, _ = io.Copy(b, c); b.Close() }()
	_, _ = io.Copy(c, b)
}

// TestLimitsCheckedBeforeSending: a request over a limit of the
// responder's (40 streams against the default 32; 5 against
// --max-streams 4; a cc it does not allow) is refused by the client
// from the limits in hello, before the request is sent, with the code
// and message the responder itself gives for it (asked through a relay
// that hides the limits, so the request reaches it). The responder logs
// a client that left, no refusal, and holds no session.
func TestLimitsCheckedBeforeSending(t *testing.T) {
	for _, tc := range []struct {
		name string
		srv  serve.Config
		tcp  result.TCPConfig
		code wire.ErrorCode
		msg  string
	}{
		{"default max streams", serve.Config{}, result.TCPConfig{Streams: 40}, wire.CodeBadRequest, "streams must be 1 to 32 (responder limit --max-streams), got 40"},
		{"lower max streams", serve.Config{MaxStreams: 4}, result.TCPConfig{Streams: 5}, wire.CodeBadRequest, "streams must be 1 to 4 (responder limit --max-streams), got 5"},
		{"max duration", serve.Config{MaxDuration: 5 * time.Second}, result.TCPConfig{Duration: 6 * time.Second}, wire.CodeBadRequest, "duration 6s exceeds the responder's limit of 5s (--max-duration)"},
		{"allow cc", serve.Config{AllowCC: []string{"reno"}}, result.TCPConfig{CC: "no-such-cc", Reverse: true}, wire.CodeLimit, `congestion control "no-such-cc" is not allowed on this responder; it allows reno (--allow-cc)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs testkit.Buffer
			tc.srv.Log = slog.New(slog.NewTextHandler(&logs, nil))
			srv, addr := startServer(t, tc.srv)
			ctx := testCtx(t, 15*time.Second)

			_, err := RunTCP(ctx, Target{Addr: addr}, tc.tcp, nil)
			var ns *NotSentError
			if !errors.As(err, &ns) || ns.Err.Code != tc.code || ns.Err.Message != tc.msg {
				t.Fatalf("err = %v, want it not sent, (%s) %q", err, tc.code, tc.msg)
			}
			if msg := oneLine(t, err); !strings.Contains(msg, addr) || !strings.Contains(msg, "not sent") {
				t.Errorf("error %q: want the responder's address and that nothing was sent", msg)
			}
			if !testkit.Poll(2*time.Second, func() bool { return strings.Contains(logs.String(), "client left before sending a request") }) {
				t.Errorf("the responder did not see the client leave before its request; log:\n%s", logs.String())
			}
			if strings.Contains(logs.String(), "refused test") || srv.Sessions() != 0 {
				t.Errorf("the request reached the responder (sessions %d); log:\n%s", srv.Sessions(), logs.String())
			}

			_, err = RunTCP(ctx, Target{Addr: oldResponder(t, addr)}, tc.tcp, nil)
			var we *wire.Error
			if !errors.As(err, &we) || we.Code != ns.Err.Code || we.Message != ns.Err.Message {
				t.Fatalf("the responder itself answered %v; the client said (%s) %q", err, ns.Err.Code, ns.Err.Message)
			}
		})
	}
}

// TestOlderResponder: a responder that announces no limits (an older
// one, behind a relay that removes them from hello) still serves a test
// within its limits; the client checks the request's form only, and the
// responder refuses what breaks its limits itself.
func TestOlderResponder(t *testing.T) {
	_, addr := startServer(t, serve.Config{MaxStreams: 2})
	old := oldResponder(t, addr)
	ctx := testCtx(t, 20*time.Second)
	res, err := RunTCP(ctx, Target{Addr: old}, result.TCPConfig{Streams: 2, Duration: 300 * time.Millisecond, Interval: 100 * time.Millisecond}, nil)
	if err != nil {
		t.Fatalf("a test within the limits through an older responder: %v", err)
	}
	if res.Summary.Bytes <= 0 {
		t.Errorf("moved %d bytes", res.Summary.Bytes)
	}
	_, err = RunTCP(ctx, Target{Addr: old}, result.TCPConfig{Streams: 3, Duration: time.Second}, nil)
	var we *wire.Error
	var ns *NotSentError
	if errors.As(err, &ns) || !errors.As(err, &we) || we.Code != wire.CodeBadRequest || !strings.Contains(we.Message, "--max-streams") {
		t.Errorf("3 streams against an older responder's 2: %v, want the responder's own refusal", err)
	}
}
