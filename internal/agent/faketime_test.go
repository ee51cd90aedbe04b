package agent

// The agent's timers on fake time: each test runs in a testing/synctest
// bubble against fakeController (no sockets, no responder), so the
// waits it asserts are exact, and minutes of them take no real time.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/fleet/client"
	"github.com/fullpipe/fullpipe/internal/method"
)

// fakeController is the agent's Controller in memory: it records each
// call with the (fake) time it was made at, and answers it with the
// test's function for that kind of call (nil: success). The functions
// run on the agent's goroutines, outside mu.
type fakeController struct {
	register  func(n int) error
	heartbeat func(n int) (fleet.Orders, error)
	start     func(n int) error
	upload    func(runID string, n int) (bool, error)
	events    func(n int, es []fleet.Event) error

	mu    sync.Mutex // guards calls
	calls []fakeCall
}

// fakeCall is one call to fakeController.
type fakeCall struct {
	what  string // "register", "heartbeat", "start", "upload", "events"
	runID string
	at    time.Time
}

// record notes a call and returns its number among those of its kind
// (and run, when it has one), from 1.
func (f *fakeController) record(what, runID string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fakeCall{what, runID, time.Now()})
	return len(f.timesLocked(what, runID))
}

// times are when the calls of a kind (and run, when not "") were made.
func (f *fakeController) times(what, runID string) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.timesLocked(what, runID)
}

func (f *fakeController) timesLocked(what, runID string) []time.Time {
	var ts []time.Time
	for _, c := range f.calls {
		if c.what == what && (runID == "" || c.runID == runID) {
			ts = append(ts, c.at)
		}
	}
	return ts
}

func (f *fakeController) Register(context.Context, fleet.Registration) (fleet.Agent, error) {
	n := f.record("register", "")
	if f.register == nil {
		return fleet.Agent{}, nil
	}
	return fleet.Agent{}, f.register(n)
}

func (f *fakeController) Heartbeat(context.Context, fleet.Heartbeat) (fleet.Orders, error) {
	n := f.record("heartbeat", "")
	if f.heartbeat == nil {
		return fleet.Orders{}, nil
	}
	return f.heartbeat(n)
}

func (f *fakeController) Start(_ context.Context, runID string) error {
	n := f.record("start", runID)
	if f.start == nil {
		return nil
	}
	return f.start(n)
}

func (f *fakeController) Upload(_ context.Context, runID string, _ fleet.Upload) (bool, error) {
	n := f.record("upload", runID)
	if f.upload == nil {
		return true, nil
	}
	return f.upload(runID, n)
}

func (f *fakeController) Events(_ context.Context, runID string, es []fleet.Event) error {
	n := f.record("events", runID)
	if f.events == nil {
		return nil
	}
	return f.events(n, es)
}

// bubbleAgent is an agent of fc without its responder, its spool in a
// temp dir; call it inside the bubble.
func bubbleAgent(t *testing.T, fc *fakeController, b Backoff) *Agent {
	t.Helper()
	cfg := Config{Controller: fc, Name: "a1", SpoolDir: t.TempDir(), Log: testLog(t), Backoff: b}
	if err := cfg.fill(); err != nil {
		t.Fatal(err)
	}
	sp, err := openSpool(cfg.SpoolDir, cfg.MaxSpoolFiles, cfg.MaxSpoolBytes)
	if err != nil {
		t.Fatal(err)
	}
	return newAgent(cfg, sp)
}

// gaps are the durations between successive times.
func gaps(ts []time.Time) []time.Duration {
	var ds []time.Duration
	for i := 1; i < len(ts); i++ {
		ds = append(ds, ts[i].Sub(ts[i-1]))
	}
	return ds
}

// wantJittered fails unless each gap is in the upper half [d/2, d] of
// its backoff d (Backoff.Delay's jitter); on fake time the bounds hold
// exactly.
func wantJittered(t *testing.T, what string, got, caps []time.Duration) {
	t.Helper()
	if len(got) != len(caps) {
		t.Fatalf("%s: %d waits %v, want %d", what, len(got), got, len(caps))
	}
	for i, d := range caps {
		if got[i] < d/2 || got[i] > d {
			t.Errorf("%s: wait %d is %v, want in [%v, %v]", what, i+1, got[i], d/2, d)
		}
	}
}

var errDown = errors.New("controller down (test)")

// TestHeartbeatTiming: registration retries with the backoff (1 s, 2 s,
// 4 s, each jittered in its upper half); heartbeats follow every
// Orders.Interval, anchored on the previous deadline; one that took
// longer than the period is followed at once, not by a burst; a 409
// registers again and heartbeats at once; failures back off (capped at
// the period) and the first success is followed a whole period later.
func TestHeartbeatTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		const every = 10 * time.Second
		fc := &fakeController{
			register: func(n int) error {
				if n <= 3 {
					return errDown
				}
				return nil
			},
			heartbeat: func(n int) (fleet.Orders, error) {
				switch {
				case n == 2:
					<-time.After(every + 5*time.Second) // a slow answer
				case n == 3:
					return fleet.Orders{}, &client.Error{Status: 409, Message: "not registered"}
				case n >= 4 && n <= 7:
					return fleet.Orders{}, errDown
				case n == 9:
					cancel()
				}
				return fleet.Orders{Interval: every}, nil
			},
		}
		a := bubbleAgent(t, fc, Backoff{Min: time.Second, Max: time.Minute})
		if a.register(ctx) {
			a.routineHeartbeat(ctx)
		}
		regs, beats := fc.times("register", ""), fc.times("heartbeat", "")
		if len(regs) != 5 || len(beats) != 9 {
			t.Fatalf("%d registrations, %d heartbeats: want 5 and 9", len(regs), len(beats))
		}
		wantJittered(t, "registration retries", gaps(regs[:4]), []time.Duration{time.Second, 2 * time.Second, 4 * time.Second})
		hb := gaps(beats)
		exact := []struct {
			what      string
			got, want time.Duration
		}{
			{"registered → heartbeat 1", beats[0].Sub(regs[3]), 0},
			{"heartbeat 1 → 2: the period", hb[0], every},
			{"heartbeat 2 (15 s long) → 3: at once, not a burst", hb[1], every + 5*time.Second},
			{"heartbeat 3 (409) → registration", regs[4].Sub(beats[2]), 0},
			{"heartbeat 3 (409) → 4", hb[2], 0},
			{"heartbeat 8 (back) → 9: the period", hb[7], every},
		}
		for _, c := range exact {
			if c.got != c.want {
				t.Errorf("%s: %v, want exactly %v", c.what, c.got, c.want)
			}
		}
		wantJittered(t, "heartbeat retries", hb[3:7], []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second})
	})
}

// TestUploaderTiming: a failing upload is retried with the backoff
// (jittered 1 s, 2 s, 4 s) until it goes; one refused as conflicting is
// moved aside and never tried again (over ten minutes); an upload
// spooled without a nudge goes at the next idle scan, exactly idleScan
// after the last.
func TestUploaderTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
		defer cancel()
		var a *Agent
		var spooledR3 time.Time
		fc := &fakeController{upload: func(runID string, n int) (bool, error) {
			switch {
			case runID == "r1" && n <= 3:
				return false, errDown
			case runID == "r2":
				spooledR3 = time.Now()
				if err := a.spool.put("r3", failedUpload("r3"), spooledR3); err != nil {
					t.Error(err)
				}
				return false, fmt.Errorf("a different result is stored: %w", fleet.ErrConflict)
			}
			return true, nil
		}}
		a = bubbleAgent(t, fc, Backoff{Min: time.Second, Max: time.Minute})
		for _, id := range []string{"r1", "r2"} {
			if err := a.spool.put(id, failedUpload(id), time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		a.routineUploader(ctx)
		r1, r2, r3 := fc.times("upload", "r1"), fc.times("upload", "r2"), fc.times("upload", "r3")
		if len(r1) != 4 || len(r2) != 1 || len(r3) != 1 {
			t.Fatalf("uploads tried: r1 %d, r2 %d, r3 %d times; want 4, 1 (refused, not retried) and 1", len(r1), len(r2), len(r3))
		}
		if !r1[0].Equal(start) {
			t.Errorf("first upload %v after the start, want at once", r1[0].Sub(start))
		}
		wantJittered(t, "upload retries", gaps(r1), []time.Duration{time.Second, 2 * time.Second, 4 * time.Second})
		if !r2[0].Equal(r1[3]) {
			t.Errorf("r2 tried %v after r1 went, want in the same pass", r2[0].Sub(r1[3]))
		}
		if d := r3[0].Sub(r2[0]); d != idleScan {
			t.Errorf("r3, spooled without a nudge, went %v after the last scan, want exactly idleScan (%v)", d, idleScan)
		}
		if files, _ := a.spool.usage(); files != 0 || len(spoolFiles(t, a.spool.aside)) != 1 {
			t.Errorf("spool holds %d files, %v aside; want none, and r2's aside", files, spoolFiles(t, a.spool.aside))
		}
	})
}

// TestTellStartedTiming: a start the controller cannot take is told
// three times, 200 ms apart, the run going on; one it refuses is told once and stops the
// run.
func TestTellStartedTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := &fakeController{start: func(int) error { return errDown }}
		a := bubbleAgent(t, fc, Backoff{})
		r := newRun(t.Context(), fleet.Assignment{Run: fleet.Run{ID: "r1"}})
		t0 := time.Now()
		a.tellStarted(r, a.log)
		ts := fc.times("start", "r1")
		want := []time.Time{t0, t0.Add(200 * time.Millisecond), t0.Add(400 * time.Millisecond)}
		if len(ts) != len(want) {
			t.Fatalf("told %d times, want %d", len(ts), len(want))
		}
		for i := range want {
			if !ts[i].Equal(want[i]) {
				t.Errorf("try %d at +%v, want +%v", i+1, ts[i].Sub(t0), want[i].Sub(t0))
			}
		}
		// It waits once more after the third try before it gives up.
		if time.Since(t0) != 600*time.Millisecond || r.ctx.Err() != nil {
			t.Errorf("returned after %v (run ended: %v), want 200 ms after the third try, the run going on", time.Since(t0), r.ctx.Err())
		}
		refusing := &fakeController{start: func(int) error { return &client.Error{Status: 409, Message: "cancelled"} }}
		a = bubbleAgent(t, refusing, Backoff{})
		r = newRun(t.Context(), fleet.Assignment{Run: fleet.Run{ID: "r2"}})
		a.tellStarted(r, a.log)
		if n := len(refusing.times("start", "r2")); n != 1 || !errors.Is(context.Cause(r.ctx), errStartRefused) {
			t.Errorf("refused: told %d times, run's cause %v; want once, errStartRefused", n, context.Cause(r.ctx))
		}
	})
}

// TestEventStreamTiming: progress is sent every period, what is queued
// in one go; a batch that failed goes again at the next tick, before
// what came since; once the run ends what is left goes at once, then is
// tried every period, three final tries in all, and is given up one
// period after the last.
func TestEventStreamTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every = time.Second
		var s *eventStream
		var sizes []int
		var second []int // the seqs of the second call
		fc := &fakeController{events: func(n int, es []fleet.Event) error {
			sizes = append(sizes, len(es))
			switch n {
			case 1:
				s.progress(method.Event{Kind: method.Line, Text: "4"})
				s.progress(method.Event{Kind: method.Line, Text: "5"})
				return errDown
			case 2:
				for _, e := range es {
					second = append(second, e.Seq)
				}
				s.progress(method.Event{Kind: method.Line, Text: "6"})
				s.close() // the run ends
				return nil
			}
			return errDown
		}}
		s = newEventStream("r1", fc, 100)
		for i := range 3 {
			s.progress(method.Event{Kind: method.Line, Text: fmt.Sprint(i + 1)})
		}
		t0 := time.Now()
		s.routineSend(t.Context(), every, testLog(t))
		ts := fc.times("events", "r1")
		// Tick 1: 1-3 fail. Tick 2: 1-5 go; 6 fails at once (flush sends
		// until empty); the end: 6 fails at once, then 1 and 2 periods on.
		want := []time.Duration{every, 2 * every, 2 * every, 2 * every, 3 * every, 4 * every}
		if len(ts) != len(want) {
			t.Fatalf("%d calls, want %d", len(ts), len(want))
		}
		for i, d := range want {
			if got := ts[i].Sub(t0); got != d {
				t.Errorf("call %d at +%v, want +%v", i+1, got, d)
			}
		}
		if fmt.Sprint(sizes) != "[3 5 1 1 1 1]" || fmt.Sprint(second) != "[1 2 3 4 5]" || s.pending() != 1 {
			t.Errorf("batches %v (the second %v), %d left: want [3 5 1 1 1 1], seqs 1 to 5 in order, 1 left", sizes, second, s.pending())
		}
		if got := time.Since(t0); got != 5*every {
			t.Errorf("routineSend returned at +%v, want +%v", got, 5*every)
		}
	})
}

// TestEventStreamRefused: a controller that refuses a run's events for
// good (413: the run's cap is reached; 409: it ended) is not asked
// again: the stream drops what it holds, takes no more progress and
// ends at that tick, after one call; an error that may pass (a 503) is
// tried again next period.
func TestEventStreamRefused(t *testing.T) {
	for _, c := range []struct {
		status int
		calls  int
	}{{http.StatusRequestEntityTooLarge, 1}, {http.StatusConflict, 1}, {http.StatusServiceUnavailable, 3}} {
		t.Run(strconv.Itoa(c.status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const every = time.Second
				fc := &fakeController{events: func(n int, es []fleet.Event) error {
					return &client.Error{Status: c.status, Message: "no"}
				}}
				s := newEventStream("r1", fc, 100)
				s.progress(method.Event{Kind: method.Line, Text: "1"})
				ctx, cancel := context.WithTimeout(t.Context(), 3*every+every/2)
				defer cancel()
				s.routineSend(ctx, every, testLog(t))
				if got := len(fc.times("events", "r1")); got != c.calls {
					t.Errorf("%d calls, want %d", got, c.calls)
				}
				s.progress(method.Event{Kind: method.Line, Text: "2"})
				if want := map[bool]int{true: 0, false: 2}[c.calls == 1]; s.pending() != want {
					t.Errorf("%d events queued after the refusal, want %d", s.pending(), want)
				}
			})
		})
	}
}
