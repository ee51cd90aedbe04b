package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/method"
	"github.com/fullpipe/fullpipe/internal/result"
)

// TestEventsBounded: while the controller refuses its calls a run's
// progress queue keeps at most its bound: samples are dropped first (the
// oldest), lines and warnings kept; once it is back the queue is sent
// and stored in order, with gaps in Seq where events were dropped, and a
// last warning that counts the drops.
func TestEventsBounded(t *testing.T) {
	f := newTestFleet(t)
	g := f.gate()
	g.set(gateRefuse, "")
	if _, err := f.admin.Enrol(f.ctx(), fleet.Enrolment{Name: "peer"}); err != nil {
		t.Fatal(err)
	}
	rec := f.gatedClient(g, f.enrol("a1"))
	id := f.futureRuns("a1", "peer", 1)[0]
	s := newEventStream(id, rec, 10)
	s.progress(method.Event{Kind: method.Started, Step: method.StepTCP})
	for i := range 30 {
		s.progress(method.Event{Kind: method.Sample, Step: method.StepTCP, TCP: &result.TCPInterval{}, Index: i})
		if i%10 == 0 {
			s.progress(method.Event{Kind: method.Line, Step: method.StepTCP, Text: "line"})
		}
	}
	if err := s.flush(context.Background()); err == nil {
		t.Fatal("flush through a closed gate succeeded")
	}
	if n := s.pending(); n != 10 {
		t.Fatalf("queue holds %d events, want its bound 10", n)
	}
	g.set(gatePass, "")
	s.close()
	if err := s.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := f.admin.RunEvents(f.ctx(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	last := 0
	for _, e := range got {
		if e.Seq <= last {
			t.Errorf("seq %d after %d", e.Seq, last)
		}
		last = e.Seq
		var me method.Event
		if err := json.Unmarshal(e.Event, &me); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, string(me.Kind))
		if me.Kind == method.Warning && !strings.Contains(me.Text, "25 progress events dropped") {
			t.Errorf("warning %q, want it to count 25 drops", me.Text)
		}
	}
	// 34 events made, 10 kept: the start, 3 lines, the last 6 samples;
	// then the warning took a sample's place.
	want := "step_started line line line sample sample sample sample sample warning"
	if strings.Join(kinds, " ") != want {
		t.Errorf("stored %v, want %s", kinds, want)
	}
	if s.droppedCount() != 25 {
		t.Errorf("dropped %d, want 25", s.droppedCount())
	}
}

// TestBackoff: each wait is in the upper half of Min doubled per
// failure, capped at Max.
func TestBackoff(t *testing.T) {
	b := Backoff{Min: 100 * time.Millisecond, Max: time.Second}.withDefaults()
	for _, c := range []struct {
		failures int
		cap      time.Duration
	}{{1, 100 * time.Millisecond}, {2, 200 * time.Millisecond}, {4, 800 * time.Millisecond}, {5, time.Second}, {1000, time.Second}} {
		for range 100 {
			if d := b.Delay(c.failures); d < c.cap/2 || d > c.cap {
				t.Fatalf("failure %d: wait %v, want in [%v, %v]", c.failures, d, c.cap/2, c.cap)
			}
		}
	}
	if d := (Backoff{}).withDefaults(); d.Min != time.Second || d.Max != time.Minute {
		t.Errorf("defaults %+v", d)
	}
}

// TestControllerClock: a controller 5 s ahead makes its 12:00:05 the
// local 12:00:00 (within the heartbeat's round trip), warns once, and
// not again within skewWarnEvery; a skew under 1 s is not warned of.
func TestControllerClock(t *testing.T) {
	var c controllerClock
	sent := time.Now()
	recv := sent.Add(20 * time.Millisecond)
	skew, warn := c.observe(sent, recv, sent.Add(10*time.Millisecond+5*time.Second))
	if skew != 5*time.Second || !warn {
		t.Errorf("skew %v warn %v, want 5s and a warning", skew, warn)
	}
	if _, warn := c.observe(recv, recv, recv.Add(5*time.Second)); warn {
		t.Error("warned twice within skewWarnEvery")
	}
	now := time.Now()
	if d := c.local(now.Add(5*time.Second+time.Minute), now).Sub(now); d != time.Minute {
		t.Errorf("the controller's now+5s+1m is local now+%v, want exactly 1m", d)
	}
	var small controllerClock
	if _, warn := small.observe(sent, recv, recv.Add(900*time.Millisecond)); warn {
		t.Error("warned of a skew under 1 s")
	}
}

// TestRetryWait: a failing heartbeat backs off, but never past the
// heartbeat's own period, so an agent hears a controller back from an
// outage within one period.
func TestRetryWait(t *testing.T) {
	b := Backoff{Min: time.Second, Max: time.Minute}.withDefaults()
	for _, fails := range []int{1, 3, 10, 100} {
		if w := retryWait(b, fails, time.Second); w > time.Second {
			t.Errorf("%d failures at a 1 s period: wait %v", fails, w)
		}
	}
	if w := retryWait(b, 10, time.Hour); w < 30*time.Second || w > time.Minute {
		t.Errorf("10 failures, a period longer than the backoff: wait %v, want the backoff's [30 s, 1 min]", w)
	}
}
