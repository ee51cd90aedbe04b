package serve

import (
	"context"
	"log/slog"
	"net"
	"os"
	"slices"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// emfile is the error accept returns with the fd table full.
var emfile = &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}

// TestAcceptBackoff: on fake time, the accept loop waits out EMFILE 5 ms
// after the first failure, doubling to 1 s and staying there, each wait
// exact; it ends when the listener closes, counting the errors waited out.
func TestAcceptBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &Server{cfg: Config{Log: slog.New(slog.DiscardHandler)}}
		var gaps []time.Duration // before each accept, since the one before
		last := time.Now()
		accept := func() (*net.TCPConn, error) {
			gaps = append(gaps, time.Since(last))
			last = time.Now()
			if len(gaps) <= 11 {
				return nil, emfile
			}
			return nil, net.ErrClosed
		}
		if err := s.acceptLoop(context.Background(), accept); err != nil {
			t.Fatalf("acceptLoop: %v", err)
		}
		ms := time.Millisecond
		want := []time.Duration{0, 5 * ms, 10 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 640 * ms, time.Second, time.Second, time.Second}
		if !slices.Equal(gaps, want) {
			t.Errorf("waits between accepts %v, want %v", gaps, want)
		}
		if n := s.acceptErrors.Load(); n != 11 {
			t.Errorf("%d accept errors counted, want 11", n)
		}
	})
}

// TestAcceptBackoffCancelled: a context ending during a wait ends the
// loop then, not at the wait's end: 5 + 10 + 20 + 40 ms of waits, then
// the 80 ms one cut at 100 ms.
func TestAcceptBackoffCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &Server{cfg: Config{Log: slog.New(slog.DiscardHandler)}}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		calls := 0
		start := time.Now()
		err := s.acceptLoop(ctx, func() (*net.TCPConn, error) { calls++; return nil, emfile })
		if took := time.Since(start); err != nil || took != 100*time.Millisecond || calls != 5 {
			t.Errorf("acceptLoop = %v after %v and %d accepts, want nil after exactly 100 ms and 5", err, took, calls)
		}
	})
}
