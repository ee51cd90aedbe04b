package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/testkit"
)

// TestLostRun: a run started and never reported ended (its agent killed
// for good) is failed as lost once lostAfter has passed its slot's end,
// not before (on the controller's clock, a manual one here: checked at
// exactly lostAfter and 1 ns past it); a result its agent uploads later
// still lands, and finishes the run.
func TestLostRun(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	clock := testkit.NewClock(now)
	e := start(t, Config{Now: clock.Now})
	a, _ := e.agent("a", nil), e.agent("b", nil)
	run, err := e.st.Book(ctx(t), fleet.Run{Source: "a", Dest: "b", Test: fleet.Test{Kind: "tcp"}, Exclusive: true,
		Start: now, End: now.Add(500 * time.Millisecond), State: fleet.RunScheduled, Created: now}, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx(t), run.ID); err != nil {
		t.Fatal(err)
	}
	// state is the run once the scheduler ticked after the clock read at.
	state := func(at time.Time) fleet.Run {
		t.Helper()
		clock.Set(at)
		n := e.ticks()
		if !poll(5*time.Second, func() bool { return e.ticks() >= n+2 }) {
			t.Fatal("the scheduler did not tick")
		}
		got, err := e.admin.Run(ctx(t), run.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := state(run.End.Add(lostAfter)); got.State != fleet.RunRunning {
		t.Fatalf("exactly lostAfter past its slot's end the run is %s (%q), want still running", got.State, got.Error)
	}
	if got := state(run.End.Add(lostAfter + time.Nanosecond)); got.State != fleet.RunFailed || !strings.HasPrefix(got.Error, lostPrefix) {
		t.Fatalf("a run its agent never ended, lostAfter + 1 ns past its slot: %+v; want failed, %q...", got, lostPrefix)
	}
	stored, err := a.Upload(ctx(t), run.ID, fleet.Upload{State: fleet.RunFinished, Doc: tcpDoc(t)})
	if err != nil || !stored {
		t.Fatalf("a late upload of a lost run: stored %v, %v", stored, err)
	}
	if got, _ := e.admin.Run(ctx(t), run.ID); got.State != fleet.RunFinished || got.Error != "" {
		t.Errorf("after the late upload: %s %q; want finished", got.State, got.Error)
	}
}
