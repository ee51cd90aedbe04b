package tester

import (
	"context"
	"errors"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
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
		time.Sleep(50 * time.Millisecond) // real time: goroutine and fd counts of sessions ending on real sockets have no event to wait on
	}
	return f()
}

// TestInterruptLeavesNothing: a test cancelled mid-way (Ctrl-C) returns
// within a second or two with its partial figures, the responder frees the
// session, and no goroutine or socket is left in this process.
func TestInterruptLeavesNothing(t *testing.T) {
	srv, addr := startServer(t, serve.Config{})
	baseG, baseFD := runtime.NumGoroutine(), openFDs(t)

	for _, cfg := range []result.TCPConfig{
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
		if !errors.Is(err, result.ErrPartial) {
			t.Fatalf("%+v: err = %v, want result.ErrPartial", cfg, err)
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
