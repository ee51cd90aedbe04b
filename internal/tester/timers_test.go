package tester

// The client's timers on fake time (testing/synctest): each wait exact.

import (
	"context"
	"encoding/json"
	"net"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fullpipe/fullpipe/internal/wire"
)

// helloLog records when each hello was written (fake time) and checks it.
type helloLog struct {
	t      *testing.T
	cookie wire.Cookie
	start  time.Time
	mu     sync.Mutex // guards at
	at     []time.Duration
}

func (h *helloLog) Write(b []byte) (int, error) {
	if hd, err := wire.ParseUDP(b); err != nil || hd.Type != wire.UDPHello || hd.Cookie != h.cookie {
		h.t.Errorf("wrote %x (%+v, %v), want a hello with the session's cookie", b, hd, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.at = append(h.at, time.Since(h.start))
	return len(b), nil
}

// TestSendHellosEvery: the UDP hello is the client's heartbeat until the
// test starts: one at once, then one every 50 ms exactly, none after
// stop.
func TestSendHellosEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &helloLog{t: t, cookie: wire.Cookie{1, 2, 3}, start: time.Now()}
		stop := sendHellos(context.Background(), h, h.cookie)
		time.Sleep(175 * time.Millisecond) // fake time (synctest)
		stop()
		time.Sleep(time.Second) // fake time: nothing more comes
		ms := time.Millisecond
		if want := []time.Duration{0, 50 * ms, 100 * ms, 150 * ms}; !slices.Equal(h.at, want) {
			t.Errorf("hellos at %v, want %v", h.at, want)
		}
	})
}

// TestStopAndWait: after asking the responder to stop, the client takes
// its result the instant it comes (intervals before it skipped), gives
// up when the messages end, and waits exactly 1 s at most.
func TestStopAndWait(t *testing.T) {
	res := &wire.Result{}
	for _, tc := range []struct {
		name  string
		after time.Duration // the responder's message comes (the channel closes, without one)
		msgs  []serverMsg
		want  *wire.Result
		at    time.Duration
	}{
		{"result at 300 ms", 300 * time.Millisecond, []serverMsg{{interval: &wire.Interval{}}, {result: res}}, res, 300 * time.Millisecond},
		{"closed at 200 ms", 200 * time.Millisecond, nil, nil, 200 * time.Millisecond},
		{"silent", 0, nil, nil, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				client, responder := net.Pipe()
				defer client.Close()
				stopped := make(chan wire.Msg, 1)
				go func() {
					m, _ := wire.Decode(responder)
					stopped <- m
					responder.Close()
				}()
				results := make(chan serverMsg, len(tc.msgs))
				if tc.after > 0 {
					time.AfterFunc(tc.after, func() {
						for _, m := range tc.msgs {
							results <- m
						}
						if len(tc.msgs) == 0 {
							close(results)
						}
					})
				}
				start := time.Now()
				got := (&session{ctrl: client}).stopAndWait("interrupted", results)
				if took := time.Since(start); got != tc.want || took != tc.at {
					t.Errorf("stopAndWait = %v after %v, want %v after exactly %v", got, took, tc.want, tc.at)
				}
				m := <-stopped
				var stop wire.Stop
				if err := json.Unmarshal(m.Body, &stop); err != nil || m.Type != wire.TypeStop || stop.Reason != "interrupted" {
					t.Errorf("the responder read %+v (%v), want a stop with the reason", m, err)
				}
			})
		})
	}
}
