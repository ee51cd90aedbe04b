package ctxtime

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestSleep: the full wait when the context lives, a prompt false when
// it ends first; on fake time, so both to the nanosecond.
func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if !Sleep(context.Background(), 20*time.Millisecond) || time.Since(start) != 20*time.Millisecond {
			t.Errorf("a live context: returned after %v, want true after exactly 20 ms", time.Since(start))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		start = time.Now()
		if Sleep(ctx, time.Minute) {
			t.Error("a context that ended: true, want false")
		}
		if d := time.Since(start); d != 10*time.Millisecond {
			t.Errorf("a context ending after 10 ms cut a 1 min sleep after %v, want exactly 10 ms", d)
		}
	})
}
