package tester

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/serve"
)

// startServer runs a responder on a random loopback port for the test.
func startServer(t *testing.T, cfg serve.Config) (*serve.Server, string) {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	srv, err := serve.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("responder did not stop within 5 s")
		}
	})
	return srv, srv.Addr().String()
}

func TestTCPSmoke(t *testing.T) {
	_, addr := startServer(t, serve.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := RunTCP(ctx, Target{Addr: addr}, TCPConfig{Streams: 2, Duration: 2 * time.Second, Interval: 500 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("summary %+v", res.Summary.TCPDirection)
	t.Logf("intervals %d", len(res.Intervals))
	if res.Summary.Bytes <= 0 {
		t.Fatal("no bytes")
	}
	_ = errors.Is
}
