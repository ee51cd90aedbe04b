package agent

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"
)

// testLog logs through t at debug level.
func testLog(t *testing.T) *slog.Logger {
	t.Helper()
	return slog.New(slog.NewTextHandler(tWriter{t, ""}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// tWriter logs through t, each line prefixed.
type tWriter struct {
	t      *testing.T
	prefix string
}

func (w tWriter) Write(b []byte) (int, error) {
	w.t.Log(w.prefix + string(bytes.TrimRight(b, "\n")))
	return len(b), nil
}

// startAgent makes and runs an agent on a loopback port until the test
// ends (or stop is called) and waits for Run to return.
func startAgent(t *testing.T, cfg Config) (*Agent, func()) {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Log == nil {
		cfg.Log = testLog(t)
	}
	if cfg.Backoff.Min == 0 {
		cfg.Backoff = Backoff{Min: 10 * time.Millisecond, Max: 100 * time.Millisecond}
	}
	if cfg.EventEvery == 0 {
		cfg.EventEvery = 100 * time.Millisecond
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("agent %s: %v", cfg.Name, err)
				}
			case <-time.After(15 * time.Second):
				t.Errorf("agent %s did not stop within 15 s", cfg.Name)
			}
		})
	}
	t.Cleanup(stop)
	return a, stop
}

// spoolFiles lists a spool directory's files.
func spoolFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
