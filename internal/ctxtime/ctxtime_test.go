package ctxtime

import (
	"context"
	"testing"
	"time"
)

// TestSleep: the full wait when the context lives, a prompt false when
// it ends first.
func TestSleep(t *testing.T) {
	start := time.Now()
	if !Sleep(context.Background(), 20*time.Millisecond) || time.Since(start) < 20*time.Millisecond {
		t.Errorf("a live context: returned after %v, want true after at least 20 ms", time.Since(start))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	start = time.Now()
	if Sleep(ctx, time.Minute) {
		t.Error("a context that ended: true, want false")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("a context ending after 10 ms cut a 1 min sleep only after %v", d)
	}
}
