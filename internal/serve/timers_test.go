package serve

// Serve's timers on fake time (testing/synctest): each wait exact.

import (
	"context"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fullpipe/fullpipe/internal/testkit"
	"github.com/fullpipe/fullpipe/internal/wire"
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

// TestLogFlushEvery: routineLogFlush sums up the lines an address had
// held back when its window ends, on the window's tick (exactly 10 s
// after its first line, not 1 ns before), and what is left when the
// responder stops.
func TestLogFlushEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs testkit.Buffer
		start := time.Now()
		s := &Server{logLim: newLogLimiter(slog.NewJSONHandler(&logs, nil), 1, logWindow, time.Now)}
		ctx, cancel := context.WithCancel(context.Background())
		s.wg.Add(1)
		go s.routineLogFlush(ctx)
		log := slog.New(s.logLim.handler())
		for range 3 {
			log.Info("line", "peer", "192.0.2.1:5000")
		}
		time.Sleep(logWindow - time.Nanosecond) // fake time (synctest): returns at once
		synctest.Wait()
		if n := len(logRecords(t, &logs)); n != 1 {
			t.Fatalf("%d lines 1 ns before the window's end, want the 1 passed", n)
		}
		time.Sleep(time.Nanosecond) // fake time
		synctest.Wait()
		recs := logRecords(t, &logs)
		if len(recs) != 2 || recs[1]["msg"] != "suppressed 2 lines from 192.0.2.1" {
			t.Fatalf("at the window's end: %v, want the line and the summary of 2", recs)
		}
		if at, _ := time.Parse(time.RFC3339Nano, recs[1]["time"].(string)); !at.Equal(start.Add(logWindow)) {
			t.Errorf("summary at %v, want exactly %v after the first line", at.Sub(start), logWindow)
		}
		log.Info("line", "peer", "192.0.2.2:5000")
		log.Info("held back", "peer", "192.0.2.2:5000")
		cancel()
		s.wg.Wait()
		if recs := logRecords(t, &logs); len(recs) != 4 || recs[3]["msg"] != "suppressed 1 lines from 192.0.2.2" {
			t.Errorf("after the stop: %v, want the other address's line held back summed up", recs)
		}
	})
}

// TestWaitReadyTimeout: a session waits for its data connections
// handshakeTimeout from its start, not from the last arrival; the
// connections arriving in time start it the instant the last does; a
// responder shutting down ends the wait then.
func TestWaitReadyTimeout(t *testing.T) {
	for _, tc := range []struct {
		name     string
		arrivals []time.Duration // of the 2 data connections, from the start
		stopAt   time.Duration   // the responder's context ends (0: never)
		code     wire.ErrorCode  // "": ready
		at       time.Duration   // when waitReady returns
	}{
		{"both in time", []time.Duration{time.Second, handshakeTimeout - time.Nanosecond}, 0, "", handshakeTimeout - time.Nanosecond},
		{"one of two", []time.Duration{3 * time.Second}, 0, wire.CodeProtocol, handshakeTimeout},
		{"the second 1 ns late", []time.Duration{time.Second, handshakeTimeout + time.Nanosecond}, 0, wire.CodeProtocol, handshakeTimeout},
		{"shutting down", []time.Duration{time.Second}, 4 * time.Second, wire.CodeInternal, 4 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ss := &session{req: wire.Request{Kind: wire.KindTCP, Streams: 2}, attached: make(chan struct{}, 1)}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tc.stopAt > 0 {
					time.AfterFunc(tc.stopAt, cancel)
				}
				for _, at := range tc.arrivals {
					time.AfterFunc(at, func() {
						ss.mu.Lock()
						ss.streams = append(ss.streams, &stream{})
						ss.mu.Unlock()
						ss.notify()
					})
				}
				start := time.Now()
				werr := ss.waitReady(ctx)
				took := time.Since(start)
				var code wire.ErrorCode
				if werr != nil {
					code = werr.Code
				}
				if code != tc.code || took != tc.at || ss.started != (werr == nil) {
					t.Errorf("waitReady = %v after %v (started %v), want code %v after exactly %v", werr, took, ss.started, tc.code, tc.at)
				}
				if tc.code == wire.CodeProtocol && !strings.Contains(werr.Message, "only 1 of 2 data connections arrived within 10s") {
					t.Errorf("message %q: want how many arrived of how many, and the wait", werr.Message)
				}
			})
		})
	}
}
