// Package ctxtime holds the one wait every daemon loop needs: a sleep
// that a context's end cuts short.
package ctxtime

import (
	"context"
	"time"
)

// Sleep waits d or until ctx ends, whichever is first; false when ctx
// ended. d ≤ 0 returns at once (true unless ctx has ended).
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
