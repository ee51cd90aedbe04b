package tester

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/serve"
)

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// settle waits up to 3 s for f to hold.
func settle(f func() bool) bool {
	for i := 0; i < 60; i++ {
		if f() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return f()
}

// TestInterruptLeavesNothing: a test cancelled mid-way (Ctrl-C) returns
// within a second or two with its partial figures, the responder frees the
// session, and no goroutine or socket is left in this process.
func TestInterruptLeavesNothing(t *testing.T) {
	srv, addr := startServer(t, serve.Config{})
	baseG, baseFD := runtime.NumGoroutine(), openFDs(t)

	for _, cfg := range []TCPConfig{
		{Streams: 2, Duration: 10 * time.Second, Interval: 200 * time.Millisecond},
		{Streams: 2, Duration: 10 * time.Second, Interval: 200 * time.Millisecond, Reverse: true},
		{Streams: 1, Duration: 10 * time.Second, Interval: 200 * time.Millisecond, Bidir: true, Latency: true},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		start := time.Now()
		res, err := RunTCP(ctx, Target{Addr: addr}, cfg, nil)
		took := time.Since(start)
		cancel()
		if !errors.Is(err, ErrPartial) {
			t.Fatalf("%+v: err = %v, want ErrPartial", cfg, err)
		}
		// Cancelled at 1 s: stopping takes the stop message, the
		// responder's result (≤ 1 s wait) and closing the streams.
		if took > 3*time.Second {
			t.Errorf("%+v: returned %v after start, want ≤ 3 s", cfg, took)
		}
		if res == nil || !res.Summary.Partial || res.Summary.Bytes <= 0 {
			t.Fatalf("%+v: partial result missing or empty: %+v", cfg, res)
		}
	}
	if !settle(func() bool { return srv.Sessions() == 0 }) {
		t.Errorf("responder still holds %d sessions", srv.Sessions())
	}
	// The responder runs in this process too; its per-session goroutines
	// must be gone as well. Slack of 2 for runtime helpers.
	if !settle(func() bool { return runtime.NumGoroutine() <= baseG+2 }) {
		buf := make([]byte, 1<<16)
		t.Errorf("goroutines: %d before, %d after\n%s", baseG, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
	}
	if !settle(func() bool { return openFDs(t) <= baseFD }) {
		t.Errorf("file descriptors: %d before, %d after", baseFD, openFDs(t))
	}
}

// TestResponderDies: the responder vanishes mid-test; the client stops
// within a few seconds with what it measured, marked partial.
func TestResponderDies(t *testing.T) {
	srv, err := serve.Listen(serve.Config{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	sctx, kill := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx) }()
	time.AfterFunc(time.Second, kill)
	for _, reverse := range []bool{false} {
		start := time.Now()
		res, err := RunTCP(context.Background(), Target{Addr: srv.Addr().String()},
			TCPConfig{Streams: 2, Duration: 10 * time.Second, Interval: 200 * time.Millisecond, Reverse: reverse}, nil)
		if !errors.Is(err, ErrPartial) {
			t.Fatalf("err = %v, want ErrPartial", err)
		}
		if took := time.Since(start); took > 4*time.Second {
			t.Errorf("returned %v after start (responder died at 1 s)", took)
		}
		if res == nil || !res.Summary.Partial || res.Summary.Bytes <= 0 {
			t.Fatalf("partial result missing: %+v", res)
		}
		t.Logf("partial: %s, %d bytes", res.Summary.PartialReason, res.Summary.Bytes)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("responder did not stop")
	}
}

// TestFixedTransferExact: a --bytes transfer reports exactly the bytes
// asked for at the receiver, in both directions.
func TestFixedTransferExact(t *testing.T) {
	_, addr := startServer(t, serve.Config{})
	for _, reverse := range []bool{false, true} {
		res, err := RunTCP(context.Background(), Target{Addr: addr},
			TCPConfig{Streams: 3, Bytes: 50_000_001, Interval: time.Second, Reverse: reverse}, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		if s.Bytes != 50_000_001 || s.BytesSent < 50_000_001 {
			t.Fatalf("reverse=%v: received %d, sent %d; want exactly 50,000,001 received", reverse, s.Bytes, s.BytesSent)
		}
		var sum int64
		for _, iv := range res.Intervals {
			sum += iv.Bytes
		}
		if sum != s.Bytes {
			t.Fatalf("reverse=%v: intervals add up to %d, summary %d", reverse, sum, s.Bytes)
		}
	}
}

// TestServerLimits: too many streams and too many sessions are refused
// with a message, and the responder keeps serving.
func TestServerLimits(t *testing.T) {
	_, addr := startServer(t, serve.Config{MaxStreams: 2, MaxSessions: 1})
	_, err := RunTCP(context.Background(), Target{Addr: addr}, TCPConfig{Streams: 4, Duration: time.Second, Interval: time.Second}, nil)
	if err == nil || !contains(err.Error(), "--max-streams") {
		t.Fatalf("4 streams against a limit of 2: %v", err)
	}
	first := make(chan error, 1)
	go func() {
		_, err := RunTCP(context.Background(), Target{Addr: addr}, TCPConfig{Streams: 1, Duration: 2 * time.Second, Interval: time.Second}, nil)
		first <- err
	}()
	time.Sleep(500 * time.Millisecond)
	_, err = RunTCP(context.Background(), Target{Addr: addr}, TCPConfig{Streams: 1, Duration: time.Second, Interval: time.Second}, nil)
	if err == nil || !contains(err.Error(), "maximum of 1") {
		t.Fatalf("second session: %v", err)
	}
	if err := <-first; err != nil {
		t.Fatalf("first session: %v", err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
