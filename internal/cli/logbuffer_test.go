package cli

import (
	"strings"
	"time"

	"github.com/fullpipe/fullpipe/internal/testkit"
)

// logBuffer is a testkit.Buffer that wakes a waiter on every write, so a
// test waits for a daemon's line rather than polling for it.
type logBuffer struct {
	testkit.Buffer
	wrote chan struct{} // capacity 1: a write while nobody waits is kept for the next wait
}

func newLogBuffer() *logBuffer { return &logBuffer{wrote: make(chan struct{}, 1)} }

func (b *logBuffer) Write(p []byte) (int, error) {
	n, err := b.Buffer.Write(p)
	select {
	case b.wrote <- struct{}{}:
	default:
	}
	return n, err
}

// waitFor waits until ok holds of what was written, d at most (a real
// deadline: the writer is a daemon on real sockets), and reports whether
// it held.
func (b *logBuffer) waitFor(d time.Duration, ok func(string) bool) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for !ok(b.String()) {
		select {
		case <-b.wrote:
		case <-timer.C:
			return ok(b.String())
		}
	}
	return true
}

// waitContains waits until s was written, d at most.
func (b *logBuffer) waitContains(d time.Duration, s string) bool {
	return b.waitFor(d, func(out string) bool { return strings.Contains(out, s) })
}
