package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/testkit"
)

// TestLostRun: a run started and never reported ended (its agent killed
// for good) is failed as lost once lostAfter has passed its slot's end;
// a result its agent uploads later still lands, and finishes the run.
func TestLostRun(t *testing.T) {
	saved := lostAfter
	lostAfter = 300 * time.Millisecond
	t.Cleanup(func() { lostAfter = saved })
	e := start(t, Config{})
	a, _ := e.agent("a", nil), e.agent("b", nil)
	now := time.Now().UTC()
	run, err := e.st.Book(ctx(t), fleet.Run{Source: "a", Dest: "b", Test: fleet.Test{Kind: "tcp"}, Exclusive: true,
		Start: now, End: now.Add(500 * time.Millisecond), State: fleet.RunScheduled, Created: now}, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx(t), run.ID); err != nil {
		t.Fatal(err)
	}
	var got fleet.Run
	lost := testkit.Poll(10*time.Second, func() bool {
		got, err = e.admin.Run(ctx(t), run.ID)
		return err == nil && got.State == fleet.RunFailed
	})
	if !lost || !strings.HasPrefix(got.Error, lostPrefix) {
		t.Fatalf("a run its agent never ended: %+v; want failed, %q...", got, lostPrefix)
	}
	if time.Since(now) < 800*time.Millisecond {
		t.Errorf("marked lost %v after its slot began: before its slot's end + lostAfter", time.Since(now))
	}
	stored, err := a.Upload(ctx(t), run.ID, fleet.Upload{State: fleet.RunFinished, Doc: tcpDoc(t)})
	if err != nil || !stored {
		t.Fatalf("a late upload of a lost run: stored %v, %v", stored, err)
	}
	if got, _ = e.admin.Run(ctx(t), run.ID); got.State != fleet.RunFinished || got.Error != "" {
		t.Errorf("after the late upload: %s %q; want finished", got.State, got.Error)
	}
}
