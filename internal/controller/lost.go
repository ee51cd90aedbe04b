package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// lostAfter is how long past its slot's end a running run may stay
// without its source reporting how it ended, before the scheduler
// marks it failed as lost (its agent killed, or cut off for good). A
// result its agent had spooled and uploads later is still taken
// (acceptLate).
const lostAfter = 2 * time.Minute

// lostPrefix begins a lost run's error.
const lostPrefix = "lost: "

// markLost fails the running runs whose slots ended more than lostAfter
// ago; it returns how many.
func (s *scheduler) markLost(ctx context.Context) (int, error) {
	st, now := s.c.cfg.Store, s.c.cfg.Now()
	cut := now.Add(-lostAfter)
	runs, err := st.Runs(ctx, fleet.RunFilter{States: []fleet.RunState{fleet.RunRunning}, To: cut, Limit: 10_000})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range runs {
		if !r.End.Before(cut) {
			continue
		}
		msg := fmt.Sprintf("%sits source %s reported no end within %v of the slot's end", lostPrefix, r.Source, lostAfter)
		ok, err := st.SetRunState(ctx, r.ID, []fleet.RunState{fleet.RunRunning}, fleet.RunFailed, msg, now)
		if err != nil {
			return n, err
		}
		if ok {
			n++
			s.c.cfg.Log.Warn("run lost", "run", r.ID, "source", r.Source, "dest", r.Dest, "slot_end", r.End)
		}
	}
	return n, nil
}

// acceptLate moves a run marked lost to the state its late upload says:
// the agent was cut off, not the run.
func (c *Controller) acceptLate(ctx context.Context, run fleet.Run, u fleet.Upload) (bool, error) {
	if run.State != fleet.RunFailed || !strings.HasPrefix(run.Error, lostPrefix) {
		return false, nil
	}
	return c.cfg.Store.SetRunState(ctx, run.ID, []fleet.RunState{fleet.RunFailed}, u.State, u.Error, c.cfg.Now())
}
