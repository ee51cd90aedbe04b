package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/fleet/check"
	"github.com/fullpipe/fullpipe/internal/kinds"
	"github.com/fullpipe/fullpipe/internal/result"
)

// Bounds of what an agent sends.
const (
	maxEvents    = 10_000 // per request
	maxAddresses = 16
	// maxRunningIDs bounds a heartbeat's running runs: an agent runs one
	// exclusive run at a time and a few single-ended ones beside it; each
	// ID outside the orders' window costs a store lookup.
	maxRunningIDs = 256
	// MaxRunEvents bounds a run's events together: a 24-hour TCP test's one-second intervals
	// are 86,400 events, so a test longer than a few hours shows its
	// progress only in part; its result holds every interval. 4 MiB is
	// 10,000 events of 400 characters (an interval's JSON is about 300).
	MaxRunEvents     = 10_000
	maxRunEventChars = 4 << 20
	maxEventsBody    = 1 << 20 // per request
	// maxUploads is how many uploads are decoded and stored at once; the
	// next is answered 429 with Retry-After, which agents retry with
	// backoff. Each takes its body (≤ 16 MiB) about three times (the
	// request, the document, its compact copy) and its decoded form (≤
	// result.DecodeFactor times the body): at most about 450 MiB for 4.
	maxUploads = 4
	// eventGrace is how long after a run ended its events are still
	// taken: the last batches an agent flushes as the run ends.
	eventGrace = 5 * time.Minute
)

// register: POST /v1/agent/register.
func (c *Controller) register(w http.ResponseWriter, r *http.Request, who fleet.Token) error {
	var reg fleet.Registration
	if err := decode(r, &reg); err != nil {
		return err
	}
	if reg.Name != who.Agent {
		return httpErr(http.StatusForbidden, fmt.Sprintf("this token is agent %q's: it may not register as %q", who.Agent, reg.Name))
	}
	if err := checkRegistration(reg); err != nil {
		return err
	}
	from, err := remoteAddr(r)
	if err != nil {
		return err
	}
	if err := checkAddresses(reg.Addresses, from); err != nil {
		return err
	}
	prev, err := c.cfg.Store.Agent(r.Context(), reg.Name)
	if err != nil {
		return err
	}
	reg.Addresses, reg.Pending = splitAddresses(reg.Addresses, from, prev.ApprovedAddresses)
	a, err := c.cfg.Store.Register(r.Context(), reg, c.cfg.Now())
	if err != nil {
		return err
	}
	if len(reg.Pending) > 0 {
		c.cfg.Log.Warn("agent addresses wait for approval (fleet agents approve)", "agent", reg.Name, "pending", reg.Pending, "from", from.String())
	}
	a.State = fleet.StateAt(a, c.cfg.Now(), c.cfg.DownAfter)
	writeJSON(w, http.StatusOK, a)
	return nil
}

func checkRegistration(reg fleet.Registration) error {
	switch {
	case len(reg.Addresses) > maxAddresses:
		return badRequest("%d addresses: at most %d", len(reg.Addresses), maxAddresses)
	case len(reg.Labels) > check.MaxLabels:
		return badRequest("%d labels: at most %d", len(reg.Labels), check.MaxLabels)
	}
	for _, k := range reg.Capabilities {
		if !kinds.Known(k) {
			return badRequest("capability %q: want test kinds of %v", k, kinds.Names())
		}
	}
	return nil
}

// heartbeat: POST /v1/agent/heartbeat.
func (c *Controller) heartbeat(w http.ResponseWriter, r *http.Request, who fleet.Token) error {
	var hb fleet.Heartbeat
	if err := decode(r, &hb); err != nil {
		return err
	}
	if len(hb.Running) > maxRunningIDs {
		return badRequest("%d running runs: at most %d", len(hb.Running), maxRunningIDs)
	}
	ctx, st, now := r.Context(), c.cfg.Store, c.cfg.Now()
	a, err := st.Agent(ctx, who.Agent)
	if err != nil {
		return err
	}
	if a.Registered.IsZero() {
		return httpErr(http.StatusConflict, "agent "+who.Agent+" has not registered: POST /v1/agent/register first")
	}
	if err := st.Seen(ctx, who.Agent, now); err != nil {
		return err
	}
	o, err := c.orders(r, who.Agent, hb, now)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, o)
	return nil
}

// orders are an agent's runs as source and as destination whose slots
// start before two heartbeats from now and have not ended, and its runs
// cancelled.
func (c *Controller) orders(r *http.Request, name string, hb fleet.Heartbeat, now time.Time) (fleet.Orders, error) {
	ctx, st := r.Context(), c.cfg.Store
	o := fleet.Orders{Now: now.UTC(), Interval: c.cfg.HeartbeatInterval}
	runs, err := st.Runs(ctx, fleet.RunFilter{Agent: name, From: now.Add(-c.cfg.Horizon),
		To: now.Add(2 * c.cfg.HeartbeatInterval), Limit: 10_000})
	if err != nil {
		return o, err
	}
	peers := map[string]fleet.Agent{}
	for _, run := range runs {
		switch {
		case run.State == fleet.RunCancelled:
			if run.End.After(now) || slices.Contains(hb.Running, run.ID) {
				o.Cancelled = append(o.Cancelled, run.ID)
			}
		case !run.End.After(now) || run.State != fleet.RunScheduled && run.State != fleet.RunRunning:
		case run.Source == name && run.State == fleet.RunScheduled:
			d, ok := peers[run.Dest]
			if !ok {
				if d, err = st.Agent(ctx, run.Dest); err != nil {
					return o, err
				}
				peers[run.Dest] = d
			}
			if len(d.Addresses) == 0 {
				continue // the destination never registered: the run will be missed
			}
			o.Runs = append(o.Runs, fleet.Assignment{Run: run, Target: d.Addresses[0], TargetPin: d.ResponderPin, Secret: run.Key})
		case run.Dest == name:
			o.Accept = append(o.Accept, fleet.Accept{RunID: run.ID, Source: run.Source, Key: run.Key, Start: run.Start, End: run.End})
		}
	}
	// Runs the agent says it runs that have since been cancelled but
	// fell outside the window above (those inside it were judged there).
	inWindow := make(map[string]bool, len(runs))
	for _, run := range runs {
		inWindow[run.ID] = true
	}
	for _, id := range hb.Running {
		if inWindow[id] {
			continue
		}
		if run, err := st.Run(ctx, id); err == nil && run.State == fleet.RunCancelled && (run.Source == name || run.Dest == name) {
			o.Cancelled = append(o.Cancelled, id)
		}
	}
	return o, nil
}

// agentRun is the run of the path's {id}, which must be the agent's as
// its source.
func (c *Controller) agentRun(r *http.Request, who fleet.Token) (fleet.Run, error) {
	run, err := c.cfg.Store.Run(r.Context(), r.PathValue("id"))
	if err != nil {
		return run, err
	}
	if run.Source != who.Agent {
		return run, httpErr(http.StatusForbidden, fmt.Sprintf("run %s is %s's as its source, not %s's", run.ID, run.Source, who.Agent))
	}
	return run, nil
}

// start: POST /v1/agent/runs/{id}/start.
func (c *Controller) start(w http.ResponseWriter, r *http.Request, who fleet.Token) error {
	run, err := c.agentRun(r, who)
	if err != nil {
		return err
	}
	ok, err := c.cfg.Store.SetRunState(r.Context(), run.ID, []fleet.RunState{fleet.RunScheduled}, fleet.RunRunning, "", c.cfg.Now())
	if err != nil {
		return err
	}
	if !ok {
		now, _ := c.cfg.Store.Run(r.Context(), run.ID)
		return httpErr(http.StatusConflict, fmt.Sprintf("run %s is %s, not scheduled: it cannot start", run.ID, now.State))
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// upload: PUT /v1/agent/runs/{id}/result. The result is stored first,
// then the run's state moved: a crash between the two is mended by the
// agent's retry (the same upload again stores nothing and moves the
// state).
func (c *Controller) upload(w http.ResponseWriter, r *http.Request, who fleet.Token) error {
	select {
	case c.uploads <- struct{}{}:
		defer func() { <-c.uploads }()
	default:
		w.Header().Set("Retry-After", "1")
		return httpErr(http.StatusTooManyRequests, fmt.Sprintf("%d uploads are being stored: try again in a second", cap(c.uploads)))
	}
	run, err := c.agentRun(r, who)
	if err != nil {
		return err
	}
	var u fleet.Upload
	if err := decode(r, &u); err != nil {
		return err
	}
	if err := takesUpload(run, u); err != nil {
		return err
	}
	res, err := c.checkUpload(run, u)
	if err != nil {
		return err
	}
	ctx, now, stored := r.Context(), c.cfg.Now(), false
	if res != nil {
		if err := c.judge(ctx, res, run.ScheduleID, now); err != nil {
			return err
		}
		if stored, err = c.putResult(ctx, res, now); err != nil {
			return err
		}
	}
	moved, err := c.cfg.Store.SetRunState(ctx, run.ID, []fleet.RunState{fleet.RunScheduled, fleet.RunRunning}, u.State, u.Error, now)
	if err == nil && !moved {
		moved, err = c.acceptLate(ctx, run, u)
	}
	if err != nil {
		return err
	}
	if !moved && res == nil {
		// A failure without a document: the same one again is a retry.
		again, err := c.cfg.Store.Run(ctx, run.ID)
		if err != nil {
			return err
		}
		if again.State != u.State || again.Error != u.Error {
			return httpErr(http.StatusConflict, fmt.Sprintf("run %s is already %s: a different upload", run.ID, again.State))
		}
	}
	if moved {
		c.metrics.ended(u.State)
	}
	writeJSON(w, http.StatusOK, fleet.Stored{Stored: stored || moved && res == nil})
	return nil
}

// takesUpload says whether run takes u now: a scheduled or running run
// its upload, a run marked lost its late one (acceptLate), a run that
// ended as u says the same upload again (a retry whose answer was lost;
// a different document is PutResult's conflict), and a run an operator
// cancelled while it ran the partial document it measured until then.
// A run cancelled before it started, or missed, takes none: its result
// is not stored.
func takesUpload(run fleet.Run, u fleet.Upload) error {
	switch {
	case run.State == fleet.RunScheduled, run.State == fleet.RunRunning, run.State == u.State:
		return nil
	case run.State == fleet.RunFailed && strings.HasPrefix(run.Error, lostPrefix):
		return nil
	case run.State == fleet.RunCancelled && !run.Started.IsZero():
		return nil
	}
	return httpErr(http.StatusConflict, fmt.Sprintf("run %s is %s: it takes no %s upload", run.ID, run.State, u.State))
}

// judge sets res's schedule and health: by the schedule's thresholds as
// they are now ("" when it has none or was deleted), and the health of
// the newest earlier result of that schedule, pair and kind.
func (c *Controller) judge(ctx context.Context, res *fleet.Result, schedule string, now time.Time) error {
	res.ScheduleID = schedule
	if schedule == "" {
		return nil
	}
	sc, err := c.cfg.Store.Schedule(ctx, schedule)
	switch {
	case errors.Is(err, fleet.ErrNotFound):
	case err != nil:
		return err
	case sc.Thresholds != nil:
		res.Health = sc.Thresholds.Health(res.Figures)
	}
	// Two: the newest may be this run's own, stored by an upload whose
	// answer was lost.
	prev, err := c.cfg.Store.Results(ctx, fleet.ResultFilter{Schedule: schedule, Source: res.Source, Dest: res.Dest,
		Kind: res.Kind, Until: now, Limit: 2, NoDoc: true})
	if err != nil {
		return err
	}
	for _, p := range prev {
		if p.RunID != res.RunID {
			res.PreviousHealth = p.Health
			break
		}
	}
	return nil
}

// putResult stores res (received now), with its webhook delivery
// recorded in the outbox first (unless the webhook takes only changes
// of health and this is none).
func (c *Controller) putResult(ctx context.Context, res *fleet.Result, now time.Time) (bool, error) {
	res.Received = now.UTC()
	if c.hook == nil || c.hook.changesOnly && !healthChanged(*res) {
		return c.cfg.Store.PutResult(ctx, *res)
	}
	existed, err := c.hook.intend(res.RunID)
	if err != nil {
		return false, err
	}
	stored, err := c.cfg.Store.PutResult(ctx, *res)
	c.hook.settle(res.RunID, existed, stored && err == nil)
	return stored, err
}

// checkUpload is the result an upload stores (nil for a failure without
// a document), or what is wrong with it.
func (c *Controller) checkUpload(run fleet.Run, u fleet.Upload) (*fleet.Result, error) {
	switch u.State {
	case fleet.RunFinished:
		if len(bytes.TrimSpace(u.Doc)) == 0 {
			return nil, badRequest("a finished run's upload needs its document (doc)")
		}
	case fleet.RunFailed:
		if u.Error == "" {
			return nil, badRequest("a failed run's upload needs its error")
		}
		if len(bytes.TrimSpace(u.Doc)) == 0 {
			return nil, nil
		}
	default:
		return nil, badRequest("upload state %q: want finished or failed", u.State)
	}
	doc, err := result.DecodeBounded(u.Doc)
	if errors.Is(err, result.ErrTooLarge) {
		return nil, httpErr(http.StatusRequestEntityTooLarge, "document: "+err.Error())
	}
	if err != nil {
		return nil, badRequest("document: %v", err)
	}
	k, _ := result.KindOf(doc.Head().Test)
	if k.File != run.Test.Kind {
		return nil, badRequest("document is a %s test's, but run %s is a %s test", k.File, run.ID, run.Test.Kind)
	}
	var compact bytes.Buffer
	if err := jsonCompact(&compact, u.Doc); err != nil {
		return nil, badRequest("document: %v", err)
	}
	f := kinds.Figures(doc)
	f.Implausible = implausible(f, doc)
	return &fleet.Result{RunID: run.ID, Source: run.Source, Dest: run.Dest, Kind: run.Test.Kind,
		Figures: f, Doc: compact.Bytes()}, nil
}

// addEvents: POST /v1/agent/runs/{id}/events.
func (c *Controller) addEvents(w http.ResponseWriter, r *http.Request, who fleet.Token) error {
	run, err := c.agentRun(r, who)
	if err != nil {
		return err
	}
	if err := c.takesEvents(run); err != nil {
		return err
	}
	var es []fleet.Event
	if err := decode(r, &es); err != nil {
		return err
	}
	if len(es) > maxEvents {
		return badRequest("%d events: at most %d per request", len(es), maxEvents)
	}
	if err := c.roomForEvents(r.Context(), run.ID, es); err != nil {
		return err
	}
	for i := range es {
		switch {
		case es[i].RunID == "":
			es[i].RunID = run.ID
		case es[i].RunID != run.ID:
			return badRequest("event %d is run %s's, not %s's", i, es[i].RunID, run.ID)
		}
		if es[i].Seq < 0 {
			return badRequest("event %d: seq %d must not be negative", i, es[i].Seq)
		}
	}
	if len(es) > 0 {
		if err := c.cfg.Store.AddEvents(r.Context(), es); err != nil {
			return err
		}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// takesEvents says whether run takes progress events now: while it is
// scheduled or running, and for eventGrace after it ended (the last
// batches an agent flushes); a cancelled or missed run never.
func (c *Controller) takesEvents(run fleet.Run) error {
	switch run.State {
	case fleet.RunScheduled, fleet.RunRunning:
		return nil
	case fleet.RunFinished, fleet.RunFailed:
		ended := run.End
		if run.Finished.After(ended) {
			ended = run.Finished
		}
		if c.cfg.Now().Before(ended.Add(eventGrace)) {
			return nil
		}
		return httpErr(http.StatusConflict, fmt.Sprintf("run %s ended at %s, more than %v ago: it takes no more events",
			run.ID, ended.UTC().Format(time.RFC3339), eventGrace))
	}
	return httpErr(http.StatusConflict, fmt.Sprintf("run %s is %s: it takes no events", run.ID, run.State))
}

// roomForEvents says whether the run's stored events and es stay within
// MaxRunEvents and maxRunEventChars (events already stored, which a
// retried batch repeats, are counted twice: a retry near the cap is
// refused, not the run's first events).
func (c *Controller) roomForEvents(ctx context.Context, runID string, es []fleet.Event) error {
	n, chars, err := c.cfg.Store.EventsSize(ctx, runID)
	if err != nil {
		return err
	}
	for _, e := range es {
		chars += int64(len(e.Event))
	}
	if n+len(es) > MaxRunEvents || chars > maxRunEventChars {
		return httpErr(http.StatusRequestEntityTooLarge, fmt.Sprintf("run %s has %d events (%d characters); %d more would pass its cap of %d events or %d characters",
			runID, n, chars, len(es), MaxRunEvents, maxRunEventChars))
	}
	return nil
}
