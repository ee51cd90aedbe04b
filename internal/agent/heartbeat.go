package agent

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/fullpipe/fullpipe/internal/ctxtime"
	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/fleet/client"
)

// keyGrace opens a run's key this much before its slot: the source's
// and this agent's estimates of the controller's clock differ by up to
// their round trips to it.
const keyGrace = 2 * time.Second

// maxEnded bounds the ended runs remembered (so that a run listed again
// is not run again); the oldest are forgotten first.
const maxEnded = 10_000

// routineHeartbeat heartbeats until ctx ends: every Orders.Interval
// after the previous one (anchored on the previous deadline), or after
// a backoff while the controller fails, and carries out each answer.
func (a *Agent) routineHeartbeat(ctx context.Context) {
	next := time.Now()
	again := false           // registered again after the last heartbeat refused
	every := DefaultInterval // the controller's heartbeat period, as last told
	for fails := 0; ; {
		o, err := a.heartbeat(ctx)
		var wait time.Duration
		switch {
		case ctx.Err() != nil:
			return
		case client.StatusOf(err) == http.StatusConflict && !again: // the controller knows this agent as not registered
			a.log.Warn("the controller asks for a registration first: registering again", "err", err)
			if again = true; !a.register(ctx) {
				return
			}
			continue
		case err != nil:
			fails++
			wait = retryWait(a.cfg.Backoff, fails, every)
			a.log.Warn("heartbeat failed; retrying", "err", err, "attempt", fails, "wait", wait.Round(time.Millisecond))
		default:
			fails, again = 0, false
			a.obey(ctx, o)
			wait = o.Interval
			if wait <= 0 {
				wait = DefaultInterval
			}
			wait = min(wait, maxInterval)
			every = wait
		}
		next = next.Add(wait)
		if now := time.Now(); next.Before(now) {
			next = now // a late heartbeat does not make a burst
		}
		if !ctxtime.Sleep(ctx, time.Until(next)) {
			return
		}
	}
}

// retryWait is the wait before the next try of a failed heartbeat: the
// backoff, but never longer than the heartbeat's own period. A
// controller back from an outage must reach every agent within a period,
// or a destination misses the key of a run booked before the outage and
// refuses its source (retrying at the normal period adds no load).
func retryWait(b Backoff, fails int, every time.Duration) time.Duration {
	return min(b.Delay(fails), every)
}

// heartbeat sends one heartbeat and measures the controller's clock.
func (a *Agent) heartbeat(ctx context.Context) (fleet.Orders, error) {
	files, _ := a.spool.usage()
	hb := fleet.Heartbeat{Running: a.running(), Pending: int(files)}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	sent := time.Now()
	o, err := a.ctl.Heartbeat(cctx, hb)
	if err != nil {
		return o, err
	}
	if !o.Now.IsZero() {
		if skew, warn := a.clock.observe(sent, time.Now(), o.Now); warn {
			a.log.Warn("this host's clock differs from the controller's; runs start on the controller's clock, but fix NTP here", "controller_ahead_by", skew.Round(time.Millisecond))
		}
	}
	return o, nil
}

// running lists the runs started and not ended.
func (a *Agent) running() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var ids []string
	for id, r := range a.runs {
		if r.started.Load() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// obey carries out orders: cancellations first, then the responder's
// keys, then the runs to start.
func (a *Agent) obey(ctx context.Context, o fleet.Orders) {
	for _, id := range o.Cancelled {
		a.ring.Remove(id)
		a.cancelRun(id)
	}
	if n := a.ring.Expire(time.Now()); n > 0 {
		a.log.Debug("run keys expired", "count", n)
	}
	for _, acc := range o.Accept {
		if slices.Contains(o.Cancelled, acc.RunID) || a.ring.Has(acc.RunID) {
			continue
		}
		now := time.Now()
		start, end := a.clock.local(acc.Start, now).Add(-keyGrace), a.clock.local(acc.End, now)
		if !now.Before(end) {
			continue
		}
		if err := a.ring.Add(acc.RunID, acc.Key, start, end); err != nil {
			a.log.Error("cannot accept run", "run", acc.RunID, "source", acc.Source, "err", err)
			continue
		}
		a.log.Info("accepting run", "run", acc.RunID, "source", acc.Source, "start", acc.Start, "end", acc.End)
	}
	for _, as := range o.Runs {
		if slices.Contains(o.Cancelled, as.ID) {
			continue
		}
		a.take(ctx, as)
	}
}

// take starts a goroutine for an assignment not seen before.
func (a *Agent) take(ctx context.Context, as fleet.Assignment) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.runs[as.ID]; ok {
		return
	}
	if _, ok := a.ended[as.ID]; ok || a.spool.has(as.ID) {
		return
	}
	r := newRun(ctx, as)
	a.runs[as.ID] = r
	a.runWG.Add(1)
	go a.routineRun(r)
}

// cancelRun stops a run the controller cancelled, or keeps it from
// starting.
func (a *Agent) cancelRun(id string) {
	a.mu.Lock()
	r := a.runs[id]
	if r == nil {
		a.endedLocked(id)
	}
	a.mu.Unlock()
	if r != nil {
		r.cancel(errCancelled)
	}
}

// endedLocked remembers run id as ended; a.mu is held.
func (a *Agent) endedLocked(id string) {
	delete(a.runs, id)
	a.ended[id] = time.Now()
	if len(a.ended) <= maxEnded {
		return
	}
	oldest, at := "", time.Time{}
	for k, t := range a.ended {
		if oldest == "" || t.Before(at) {
			oldest, at = k, t
		}
	}
	delete(a.ended, oldest)
}
