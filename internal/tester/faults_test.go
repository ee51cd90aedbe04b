package tester

// Fault tests: tests stopped by the user or by the responder, peers that
// are not fullpipe, refused ports, the responder's limits and protocol
// versions, and what a run leaves behind in this process. Each answer must
// come as one line that says what happened, and quickly: a fault detected
// by a timeout instead of by the event itself shows up here as slowness.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/serve"
	"github.com/fullpipe/fullpipe/internal/testkit"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// fakePeer listens on loopback and runs handle for each connection (with a
// 5 s deadline, so a test never waits on it for long). The listener and
// every handler have ended when the test's cleanup returns.
func fakePeer(t *testing.T, handle func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var handlers sync.WaitGroup
	acceptDone := make(chan struct{})
	go func() { // ends when ln is closed
		defer close(acceptDone)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			handlers.Add(1)
			go func() {
				defer handlers.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-acceptDone
		handlers.Wait()
	})
	return ln.Addr().String()
}

// readPreamble reads the tester's 6-byte preamble, as any server reads a
// request before it answers.
func readPreamble(c net.Conn) { _, _ = io.ReadFull(c, make([]byte, wire.PreambleLen)) }

// drain reads until the tester hangs up, so the fake peer never closes
// first with unread bytes (which would reset the connection and race the
// tester's read of what the peer wrote).
func drain(c net.Conn) { _, _ = io.Copy(io.Discard, c) }

func oneLine(t *testing.T, err error) string {
	t.Helper()
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("error spans several lines: %q", msg)
	}
	return msg
}

// TestCancelMidTest: Ctrl-C one second into a 10 s test. The tester stops
// within 2 s of the cancel (the stop message and the responder's result
// take a loopback round trip; stopAndWait gives the result at most 1 s),
// returns what it measured marked partial, and the responder frees the
// session within 2 s.
func TestCancelMidTest(t *testing.T) {
	srv, addr := startServer(t, serve.Config{})
	for _, tc := range []struct {
		name    string
		reverse bool
	}{{"upload", false}, {"reverse", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cancelledAt := make(chan time.Time, 1)
			time.AfterFunc(time.Second, func() { cancelledAt <- time.Now(); cancel() })
			res, err := RunTCP(ctx, Target{Addr: addr}, result.TCPConfig{Streams: 2, Duration: 10 * time.Second, Interval: 200 * time.Millisecond, Reverse: tc.reverse}, nil)
			returned := time.Now()
			var at time.Time
			select {
			case at = <-cancelledAt:
			default:
				t.Fatalf("returned before the cancel: %v", err)
			}
			if took := returned.Sub(at); took > 2*time.Second {
				t.Errorf("returned %v after the cancel, want ≤ 2 s", took)
			}
			if !errors.Is(err, result.ErrPartial) {
				t.Fatalf("err = %v, want one wrapping result.ErrPartial", err)
			}
			oneLine(t, err)
			if res == nil {
				t.Fatal("no partial result")
			}
			s := res.Summary
			if !s.Partial || s.PartialReason != "interrupted" || s.Bytes <= 0 {
				t.Errorf("partial %v (%q), %d bytes: want a partial result marked interrupted with bytes", s.Partial, s.PartialReason, s.Bytes)
			}
			// The receivers counted from the start to the cancel at 1 s:
			// less only by the first byte's latency, more only by the
			// stop exchange.
			if s.IntervalS < 0.8 || s.IntervalS > 1.5 {
				t.Errorf("receiver span %v s for a test cancelled at 1 s", s.IntervalS)
			}
			if n := len(res.Intervals); n < 3 {
				t.Errorf("%d intervals of 200 ms in the first second, want ≥ 3", n)
			}
		})
	}
	if !testkit.Poll(2*time.Second, func() bool { return srv.Sessions() == 0 }) {
		t.Errorf("responder still holds %d sessions 2 s after the cancelled tests", srv.Sessions())
	}
}

// TestResponderStops: the responder shuts down one second into a 10 s
// test. The tester learns it from the connection (the responder's partial
// result, or a reset stream), not from a timeout, so it returns within
// 3 s with its figures marked partial, and the responder's Serve returns
// within 2 s.
func TestResponderStops(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reverse bool
	}{{"upload", false}, {"reverse", true}} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := serve.Listen(serve.Config{Listen: "127.0.0.1:0"})
			if err != nil {
				t.Fatal(err)
			}
			sctx, kill := context.WithCancel(context.Background())
			defer kill()
			type stopped struct {
				err error
				at  time.Time
			}
			served := make(chan stopped, 1)
			go func() { err := srv.Serve(sctx); served <- stopped{err, time.Now()} }()
			killedAt := make(chan time.Time, 1)
			time.AfterFunc(time.Second, func() { killedAt <- time.Now(); kill() })

			res, err := RunTCP(testCtx(t, 20*time.Second), Target{Addr: srv.Addr().String()},
				result.TCPConfig{Streams: 2, Duration: 10 * time.Second, Interval: 200 * time.Millisecond, Reverse: tc.reverse}, nil)
			returned := time.Now()
			at := <-killedAt
			if took := returned.Sub(at); took > 3*time.Second {
				t.Errorf("returned %v after the responder stopped, want ≤ 3 s", took)
			}
			if !errors.Is(err, result.ErrPartial) {
				t.Fatalf("err = %v, want one wrapping result.ErrPartial", err)
			}
			oneLine(t, err)
			if res == nil || !res.Summary.Partial || res.Summary.Bytes <= 0 {
				t.Fatalf("want a partial result with bytes, got %+v", res)
			}
			t.Logf("partial after %v: %s", returned.Sub(at), res.Summary.PartialReason)
			select {
			case st := <-served:
				if st.err != nil {
					t.Errorf("Serve: %v", st.err)
				}
				if took := st.at.Sub(at); took > 2*time.Second {
					t.Errorf("Serve returned %v after its context ended, want ≤ 2 s", took)
				}
			case <-time.After(time.Until(at.Add(2 * time.Second))):
				t.Fatal("Serve did not return within 2 s of its context ending")
			}
		})
	}
}

// TestResponderStopReason: when the responder shuts down mid-test, the
// reason the tester reports says so. It used to say "responder's deadline
// for this test passed", which sends the user looking for a timeout (the
// session's deadline is its duration plus 15 s, far away).
func TestResponderStopReason(t *testing.T) {
	srv, err := serve.Listen(serve.Config{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	sctx, kill := context.WithCancel(context.Background())
	defer kill()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx) }()
	defer func() { kill(); <-served }()
	time.AfterFunc(500*time.Millisecond, kill)
	// Reverse: the responder's senders stop cleanly (FIN), so the tester
	// hears the reason from the responder's result, not from a reset.
	res, err := RunTCP(testCtx(t, 20*time.Second), Target{Addr: srv.Addr().String()},
		result.TCPConfig{Streams: 1, Duration: 10 * time.Second, Interval: 200 * time.Millisecond, Reverse: true}, nil)
	if !errors.Is(err, result.ErrPartial) || res == nil {
		t.Fatalf("err = %v, want result.ErrPartial", err)
	}
	if r := res.Summary.PartialReason; strings.Contains(r, "deadline") || !strings.Contains(r, "shutting down") {
		t.Errorf("reason %q: want the responder shutting down, not a deadline", r)
	}
}

// TestNotAResponder: a tester pointed at something else (an SSH server,
// a web server, a service that hangs up) says in one line that the peer
// is not a fullpipe responder, at once rather than after the 10 s
// handshake timeout.
func TestNotAResponder(t *testing.T) {
	for _, tc := range []struct {
		name     string
		handle   func(c net.Conn)
		typed    bool   // want a *wire.NotFullpipeError
		mentions string // what the peer sent, quoted
		knownBug string
	}{
		{
			name: "ssh banner",
			handle: func(c net.Conn) {
				_, _ = io.WriteString(c, "SSH-2.0-OpenSSH_9.6\r\n")
				drain(c)
			},
			typed: true, mentions: `"SSH-2.`,
		},
		{
			name: "http response",
			handle: func(c net.Conn) {
				readPreamble(c)
				_, _ = io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
				drain(c)
			},
			typed: true, mentions: `"HTTP/1`,
		},
		{
			name:   "hangs up",
			handle: func(c net.Conn) { readPreamble(c) },
		},
		{
			name: "short answer",
			handle: func(c net.Conn) {
				readPreamble(c)
				_, _ = io.WriteString(c, "hi\n")
			},
			typed: true, mentions: `"hi\n"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.knownBug != "" {
				t.Skip("known bug: " + tc.knownBug)
			}
			addr := fakePeer(t, tc.handle)
			start := time.Now()
			_, err := RunTCP(testCtx(t, 20*time.Second), Target{Addr: addr}, result.TCPConfig{Streams: 1, Duration: time.Second, Interval: time.Second}, nil)
			if took := time.Since(start); took > time.Second {
				t.Errorf("took %v: the peer answered at once, so no timeout should be involved", took)
			}
			if err == nil {
				t.Fatal("no error from a peer that is not fullpipe")
			}
			msg := oneLine(t, err)
			if !strings.Contains(msg, "not a fullpipe responder") || !strings.Contains(msg, addr) {
				t.Errorf("error %q: want it to name %s as not a fullpipe responder", msg, addr)
			}
			var nf *wire.NotFullpipeError
			if tc.typed && !errors.As(err, &nf) {
				t.Errorf("error %q does not wrap a *wire.NotFullpipeError", msg)
			}
			if tc.mentions != "" && !strings.Contains(msg, tc.mentions) {
				t.Errorf("error %q: want it to quote what the peer sent, %s", msg, tc.mentions)
			}
		})
	}
}

// TestSilentPeer: a peer that accepts and never answers holds the tester
// until the caller's context ends (the handshake's own bound is 10 s, too
// long here); the tester then returns the context's error promptly.
func TestSilentPeer(t *testing.T) {
	addr := fakePeer(t, drain)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := RunTCP(ctx, Target{Addr: addr}, result.TCPConfig{Streams: 1, Duration: time.Second, Interval: time.Second}, nil)
	// The context's end unblocks the read through a deadline at once.
	if took := time.Since(start); took > time.Second {
		t.Errorf("returned %v after start, the context ended at 300 ms", took)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the context's deadline", err)
	}
}

// TestRefused: nothing listens on the port. Every kind of test says the
// connection was refused, as one line, without waiting.
func TestRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx := testCtx(t, 10*time.Second)
	for name, run := range map[string]func() error{
		"tcp": func() error {
			_, err := RunTCP(ctx, Target{Addr: addr}, result.TCPConfig{Streams: 1, Duration: time.Second, Interval: time.Second}, nil)
			return err
		},
		"udp": func() error {
			_, err := RunUDP(ctx, Target{Addr: addr}, result.UDPConfig{RateBps: 1e6, Size: 1000, Duration: time.Second, Interval: time.Second}, nil)
			return err
		},
		"rtt": func() error {
			_, err := RunRTT(ctx, Target{Addr: addr}, result.RTTConfig{Count: 1, Interval: 10 * time.Millisecond, Size: 64}, nil)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			err := run()
			if took := time.Since(start); took > time.Second {
				t.Errorf("took %v; a refusal on loopback is immediate", took)
			}
			if err == nil {
				t.Fatal("no error from a closed port")
			}
			if msg := oneLine(t, err); !strings.Contains(msg, "refused") || !strings.Contains(msg, addr) {
				t.Errorf("error %q: want it to say %s refused", msg, addr)
			}
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("error %v does not wrap ECONNREFUSED", err)
			}
		})
	}
}

// fds lists this process's open file descriptors and their targets
// ("socket:[…]", paths).
func fds(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot list file descriptors: %v", err)
	}
	var out []string
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil {
			out = append(out, e.Name()+" → "+target)
		}
	}
	return out
}

func countSockets(list []string) int {
	n := 0
	for _, f := range list {
		if strings.Contains(f, "socket:") {
			n++
		}
	}
	return n
}

// TestNoLeaks: a finished TCP test, a cancelled one, a UDP test each way
// and an RTT series, against a responder in this process that is then
// stopped, leave no goroutine and no file descriptor behind. Both are
// counted before the responder starts, so its own goroutines and sockets
// must go too; nothing else in the test binary runs meanwhile (no test is
// parallel), so the counts must return to the baseline exactly.
func TestNoLeaks(t *testing.T) {
	// The runtime opens its network poller (epoll and an eventfd) on first
	// use and keeps it: open it before counting.
	if ln, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		ln.Close()
	}
	baseG, baseFDs := runtime.NumGoroutine(), fds(t)

	srv, err := serve.Listen(serve.Config{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx) }()
	target := Target{Addr: srv.Addr().String()}
	ctx := testCtx(t, 30*time.Second)

	if _, err := RunTCP(ctx, target, result.TCPConfig{Streams: 2, Duration: 500 * time.Millisecond, Interval: 100 * time.Millisecond, Bidir: true, Latency: true}, nil); err != nil {
		t.Errorf("tcp: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(300*time.Millisecond, cancel)
	if _, err := RunTCP(cctx, target, result.TCPConfig{Streams: 2, Duration: 10 * time.Second, Interval: 100 * time.Millisecond, Reverse: true}, nil); !errors.Is(err, result.ErrPartial) {
		t.Errorf("cancelled tcp: %v, want result.ErrPartial", err)
	}
	for _, reverse := range []bool{false, true} {
		if _, err := RunUDP(ctx, target, result.UDPConfig{RateBps: 10e6, Size: 1000, Duration: 300 * time.Millisecond, Reverse: reverse, Interval: 100 * time.Millisecond, Drain: 50 * time.Millisecond}, nil); err != nil {
			t.Errorf("udp reverse=%v: %v", reverse, err)
		}
	}
	if _, err := RunRTT(ctx, target, result.RTTConfig{Count: 5, Interval: 10 * time.Millisecond, Size: 64}, nil); err != nil {
		t.Errorf("rtt: %v", err)
	}
	if !testkit.Poll(2*time.Second, func() bool { return srv.Sessions() == 0 }) {
		t.Errorf("responder still holds %d sessions", srv.Sessions())
	}
	stop()
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("responder did not stop within 5 s")
	}

	// Goroutines end and sockets close asynchronously after the calls
	// return (readers unblocked by a close, timers' callbacks): 2 s is
	// many scheduler rounds.
	if !testkit.Poll(2*time.Second, func() bool { return runtime.NumGoroutine() <= baseG }) {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d before, %d after:\n%s", baseG, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
	}
	var after []string
	if !testkit.Poll(2*time.Second, func() bool { after = fds(t); return len(after) <= len(baseFDs) }) {
		t.Errorf("file descriptors: %d before (%d sockets), %d after (%d sockets):\nbefore %q\nafter  %q",
			len(baseFDs), countSockets(baseFDs), len(after), countSockets(after), baseFDs, after)
	}
}

// TestResponderLimits: a request beyond --max-streams is refused with the
// limit named (by the client, from the limits in hello); with
// --max-sessions 1 a second concurrent test is refused as busy while the
// first completes, and the freed slot serves again.
func TestResponderLimits(t *testing.T) {
	srv, addr := startServer(t, serve.Config{MaxStreams: 2, MaxSessions: 1})

	t.Run("streams", func(t *testing.T) {
		_, err := RunTCP(testCtx(t, 15*time.Second), Target{Addr: addr}, result.TCPConfig{Streams: 4, Duration: time.Second, Interval: time.Second}, nil)
		var re *wire.RequestError
		if !errors.As(err, &re) || re.Code != wire.CodeBadRequest {
			t.Fatalf("4 streams against a limit of 2: err = %v, want a %q refusal", err, wire.CodeBadRequest)
		}
		if msg := oneLine(t, err); !strings.Contains(msg, "--max-streams") || !strings.Contains(msg, "1 to 2") || !strings.Contains(msg, "got 4") {
			t.Errorf("error %q: want the limit (1 to 2, --max-streams) and the request (4)", msg)
		}
		if srv.Sessions() != 0 {
			t.Errorf("a refused request holds a session")
		}
	})

	t.Run("sessions", func(t *testing.T) {
		type outcome struct {
			bytes int64
			err   error
		}
		first := make(chan outcome, 1)
		go func() {
			res, err := RunTCP(testCtx(t, 15*time.Second), Target{Addr: addr}, result.TCPConfig{Streams: 1, Duration: 1500 * time.Millisecond, Interval: 500 * time.Millisecond}, nil)
			o := outcome{err: err}
			if res != nil {
				o.bytes = res.Summary.Bytes
			}
			first <- o
		}()
		if !testkit.Poll(2*time.Second, func() bool { return srv.Sessions() == 1 }) {
			t.Fatal("the first test did not start within 2 s")
		}
		_, err := RunTCP(testCtx(t, 15*time.Second), Target{Addr: addr}, result.TCPConfig{Streams: 1, Duration: time.Second, Interval: time.Second}, nil)
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != wire.CodeBusy {
			t.Errorf("second concurrent test: err = %v, want a %q refusal", err, wire.CodeBusy)
		} else if msg := oneLine(t, err); !strings.Contains(msg, "maximum of 1") {
			t.Errorf("error %q: want the session limit named", msg)
		}
		// Every kind of test counts against the limit.
		_, err = RunRTT(testCtx(t, 15*time.Second), Target{Addr: addr}, result.RTTConfig{Count: 1, Interval: 10 * time.Millisecond, Size: 64}, nil)
		if !errors.As(err, &we) || we.Code != wire.CodeBusy {
			t.Errorf("concurrent RTT test: err = %v, want a %q refusal", err, wire.CodeBusy)
		}
		o := <-first
		if o.err != nil || o.bytes <= 0 {
			t.Fatalf("first test: %v, %d bytes; want it to complete undisturbed", o.err, o.bytes)
		}
		if !testkit.Poll(2*time.Second, func() bool { return srv.Sessions() == 0 }) {
			t.Fatalf("responder still holds %d sessions after the first test", srv.Sessions())
		}
		if _, err := RunTCP(testCtx(t, 15*time.Second), Target{Addr: addr}, result.TCPConfig{Streams: 2, Bytes: 1_000_000, Interval: time.Second}, nil); err != nil {
			t.Errorf("after the slot freed: %v", err)
		}
	})
}

// TestVersionMismatch: the protocol version travels in the 6-byte preamble
// (magic, then a big-endian uint16), before any frame. A client of another
// version gets the responder's preamble and an error frame naming both
// versions, and the responder keeps serving; a responder of another
// version gets a typed error on the tester naming both.
func TestVersionMismatch(t *testing.T) {
	srv, addr := startServer(t, serve.Config{})
	const theirs = wire.Version + 98

	preamble := func(magic string, version uint16) []byte {
		b := make([]byte, wire.PreambleLen)
		copy(b, magic)
		binary.BigEndian.PutUint16(b[4:], version)
		return b
	}

	t.Run("client of another version", func(t *testing.T) {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(preamble(wire.MagicControl, theirs)); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		magic, version, err := wire.ReadPreamble(br)
		if err != nil || magic != wire.MagicControl || version != wire.Version {
			t.Fatalf("responder's preamble: %q v%d, %v; want %q v%d", magic, version, err, wire.MagicControl, wire.Version)
		}
		m, err := wire.Decode(br)
		if err != nil {
			t.Fatal(err)
		}
		var we *wire.Error
		if err := m.Into(wire.TypeHello, nil); !errors.As(err, &we) || we.Code != wire.CodeVersion {
			t.Fatalf("reply %s %s: want an error with code %q", m.Type, m.Body, wire.CodeVersion)
		}
		ours, client := fmt.Sprintf("version %d", wire.Version), fmt.Sprintf("client %d", theirs)
		if !strings.Contains(we.Message, ours) || !strings.Contains(we.Message, client) {
			t.Errorf("message %q: want both versions (%q, %q)", we.Message, ours, client)
		}
		if _, err := wire.Decode(br); !errors.Is(err, io.EOF) {
			t.Errorf("after the error: %v, want the responder to close", err)
		}
	})

	t.Run("data connection of another version", func(t *testing.T) {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(preamble(wire.MagicData, theirs)); err != nil {
			t.Fatal(err)
		}
		// No session can use it; the responder closes it without a word.
		if n, err := c.Read(make([]byte, 64)); n != 0 || !errors.Is(err, io.EOF) {
			t.Errorf("read %d bytes, %v; want the responder to close", n, err)
		}
	})

	t.Run("responder of another version", func(t *testing.T) {
		peer := fakePeer(t, func(c net.Conn) {
			readPreamble(c)
			_, _ = c.Write(preamble(wire.MagicControl, theirs))
			_ = wire.Encode(c, wire.TypeError, (&wire.VersionError{Ours: theirs, Theirs: wire.Version}).AsWire())
			drain(c)
		})
		start := time.Now()
		_, err := RunTCP(testCtx(t, 15*time.Second), Target{Addr: peer}, result.TCPConfig{Streams: 1, Duration: time.Second, Interval: time.Second}, nil)
		if took := time.Since(start); took > time.Second {
			t.Errorf("took %v; the mismatch is known from the first 6 bytes", took)
		}
		var ve *wire.VersionError
		if !errors.As(err, &ve) || ve.Ours != wire.Version || ve.Theirs != theirs {
			t.Fatalf("err = %v, want a *wire.VersionError{Ours: %d, Theirs: %d}", err, wire.Version, theirs)
		}
		if msg := oneLine(t, err); !strings.Contains(msg, fmt.Sprint(wire.Version)) || !strings.Contains(msg, fmt.Sprint(theirs)) {
			t.Errorf("error %q: want both versions", msg)
		}
	})

	// The refusals cost the responder nothing: it still runs a test.
	res, err := RunRTT(testCtx(t, 15*time.Second), Target{Addr: addr}, result.RTTConfig{Count: 3, Interval: 10 * time.Millisecond, Size: 64}, nil)
	if err != nil || res.Summary.Received != 3 {
		t.Fatalf("test after the mismatches: %v", err)
	}
	if !testkit.Poll(2*time.Second, func() bool { return srv.Sessions() == 0 }) {
		t.Errorf("responder holds %d sessions", srv.Sessions())
	}
}

// TestBackToBackAtSessionLimit: a responder limited to one test serves a
// tester that runs tests one after another: a test has ended for the
// tester once it holds the result, so the responder must have freed the
// session by then. The responder frees it only after sending the result,
// and on loopback the next request often arrives first (we saw 261 of
// 300 back-to-back RTT tests refused as busy).
func TestBackToBackAtSessionLimit(t *testing.T) {
	_, addr := startServer(t, serve.Config{MaxSessions: 1})
	for i := range 20 {
		if _, err := RunRTT(testCtx(t, 10*time.Second), Target{Addr: addr}, result.RTTConfig{Count: 1, Interval: 10 * time.Millisecond, Size: 64}, nil); err != nil {
			t.Fatalf("test %d of 20 run back to back: %v", i+1, err)
		}
		if _, err := RunTCP(testCtx(t, 10*time.Second), Target{Addr: addr}, result.TCPConfig{Streams: 1, Bytes: 100_000, Interval: time.Second}, nil); err != nil {
			t.Fatalf("test %d of 20 run back to back: %v", i+1, err)
		}
	}
}
