package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/fleet/check"
	"github.com/fullpipe/fullpipe/internal/kinds"
	"github.com/fullpipe/fullpipe/internal/schedule"
)

func jsonCompact(dst *bytes.Buffer, src []byte) error { return json.Compact(dst, src) }

// listAgents: GET /v1/agents.
func (c *Controller) listAgents(w http.ResponseWriter, r *http.Request, _ fleet.Token) error {
	as, err := c.cfg.Store.Agents(r.Context())
	if err != nil {
		return err
	}
	now := c.cfg.Now()
	for i := range as {
		as[i].State = fleet.StateAt(as[i], now, c.cfg.DownAfter)
	}
	writeJSON(w, http.StatusOK, nonNil(as))
	return nil
}

// getAgent: GET /v1/agents/{name}.
func (c *Controller) getAgent(w http.ResponseWriter, r *http.Request, _ fleet.Token) error {
	a, err := c.cfg.Store.Agent(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	a.State = fleet.StateAt(a, c.cfg.Now(), c.cfg.DownAfter)
	writeJSON(w, http.StatusOK, a)
	return nil
}

// enrol: POST /v1/agents.
func (c *Controller) enrol(w http.ResponseWriter, r *http.Request, _ fleet.Token) error {
	var e fleet.Enrolment
	if err := decode(r, &e); err != nil {
		return err
	}
	if !check.AgentName(e.Name) {
		return badRequest("agent name %q: want 1 to 63 letters, digits, '.', '_' or '-', starting with a letter or digit", e.Name)
	}
	now := c.cfg.Now()
	if err := c.cfg.Store.Enrol(r.Context(), e.Name, now); err != nil {
		return err
	}
	t, err := c.cfg.Store.IssueToken(r.Context(), fleet.RoleAgent, e.Name, e.Note, now)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, t)
	return nil
}

// approveAgent: POST /v1/agents/{name}/approve lets peers dial the
// agent's pending addresses, now and when it registers again.
func (c *Controller) approveAgent(w http.ResponseWriter, r *http.Request, who fleet.Token) error {
	a, err := c.cfg.Store.Approve(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	c.cfg.Log.Info("agent addresses approved", "agent", a.Name, "addresses", a.ApprovedAddresses, "token", who.ID)
	a.State = fleet.StateAt(a, c.cfg.Now(), c.cfg.DownAfter)
	writeJSON(w, http.StatusOK, a)
	return nil
}

// revokeAgent: DELETE /v1/agents/{name}/token revokes every live token
// of the agent.
func (c *Controller) revokeAgent(w http.ResponseWriter, r *http.Request, _ fleet.Token) error {
	name := r.PathValue("name")
	if _, err := c.cfg.Store.Agent(r.Context(), name); err != nil {
		return err
	}
	ts, err := c.cfg.Store.Tokens(r.Context())
	if err != nil {
		return err
	}
	for _, t := range ts {
		if t.Agent == name && t.Role == fleet.RoleAgent && !t.Revoked {
			if err := c.cfg.Store.RevokeToken(r.Context(), t.ID); err != nil {
				return err
			}
			c.tokens.forget(t.ID)
		}
	}
	if err := c.cancelRevokedRuns(r.Context(), name); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// cancelRevokedRuns cancels the scheduled and running runs of agent name
// when it is revoked (no live token left): its peers hold those runs'
// keys for their responders, and drop them when their next heartbeat's
// orders list the runs cancelled. A run a revoked agent still held
// could otherwise be run against its peers until its slot ended.
func (c *Controller) cancelRevokedRuns(ctx context.Context, name string) error {
	a, err := c.cfg.Store.Agent(ctx, name)
	if err != nil || a.State != fleet.AgentRevoked {
		return err
	}
	runs, err := c.cfg.Store.Runs(ctx, fleet.RunFilter{Agent: name, States: []fleet.RunState{fleet.RunScheduled, fleet.RunRunning}, Limit: 10_000})
	if err != nil {
		return err
	}
	for _, run := range runs {
		ok, err := c.cfg.Store.SetRunState(ctx, run.ID, []fleet.RunState{fleet.RunScheduled, fleet.RunRunning},
			fleet.RunCancelled, "cancelled: agent "+name+" was revoked", c.cfg.Now())
		if err != nil {
			return err
		}
		if ok {
			c.cfg.Log.Info("run cancelled: its agent was revoked", "run", run.ID, "agent", name)
		}
	}
	return nil
}

// maxBusyWindow bounds /busy's window.
const maxBusyWindow = 31 * 24 * time.Hour

// busy: GET /v1/agents/{name}/busy?from=&to=.
func (c *Controller) busy(w http.ResponseWriter, r *http.Request, _ fleet.Token) error {
	name := r.PathValue("name")
	if _, err := c.cfg.Store.Agent(r.Context(), name); err != nil {
		return err
	}
	q, now := r.URL.Query(), c.cfg.Now()
	from, err := timeParam(q, "from", now)
	if err != nil {
		return err
	}
	to, err := timeParam(q, "to", from.Add(24*time.Hour))
	if err != nil {
		return err
	}
	if !to.After(from) || to.Sub(from) > maxBusyWindow {
		return badRequest("window from %s to %s: want to after from, at most %v", from.Format(time.RFC3339), to.Format(time.RFC3339), maxBusyWindow)
	}
	slots, err := c.cfg.Store.Slots(r.Context(), name, from, to)
	if err != nil {
		return err
	}
	var excl []schedule.Interval // what the busy share and the next free moment count
	for _, s := range slots {
		if s.Exclusive {
			excl = append(excl, schedule.Interval{Start: s.Start, End: s.End})
		}
	}
	writeJSON(w, http.StatusOK, fleet.Busy{Agent: name, From: from.UTC(), To: to.UTC(), Slots: nonNil(slots),
		Fraction: schedule.BusyFraction(excl, from, to), NextFree: schedule.NextFree(excl, from).UTC()})
	return nil
}

// listTokens: GET /v1/tokens.
func (c *Controller) listTokens(w http.ResponseWriter, r *http.Request, _ fleet.Token) error {
	ts, err := c.cfg.Store.Tokens(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, nonNil(ts))
	return nil
}

// issueToken: POST /v1/tokens.
func (c *Controller) issueToken(w http.ResponseWriter, r *http.Request, _ fleet.Token) error {
	var tr fleet.TokenRequest
	if err := decode(r, &tr); err != nil {
		return err
	}
	if rank(tr.Role) == 0 {
		return badRequest("role %q: want read, operate or admin (agent tokens come from POST /v1/agents)", tr.Role)
	}
	t, err := c.cfg.Store.IssueToken(r.Context(), tr.Role, "", tr.Note, c.cfg.Now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, t)
	return nil
}

// revokeToken: DELETE /v1/tokens/{id}.
func (c *Controller) revokeToken(w http.ResponseWriter, r *http.Request, _ fleet.Token) error {
	id := r.PathValue("id")
	defer c.tokens.forget(id)
	if err := c.cfg.Store.RevokeToken(r.Context(), id); err != nil {
		return err
	}
	if t, err := c.tokenByID(r.Context(), id); err != nil {
		return err
	} else if t.Agent != "" {
		if err := c.cancelRevokedRuns(r.Context(), t.Agent); err != nil {
			return err
		}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// tokenByID is the token with id (revoked or not).
func (c *Controller) tokenByID(ctx context.Context, id string) (fleet.Token, error) {
	ts, err := c.cfg.Store.Tokens(ctx)
	if err != nil {
		return fleet.Token{}, err
	}
	for _, t := range ts {
		if t.ID == id {
			return t, nil
		}
	}
	return fleet.Token{}, fmt.Errorf("token %s: %w", id, fleet.ErrNotFound)
}

// listRuns: GET /v1/runs?agent=&schedule=&state=&from=&to=&limit=.
func (c *Controller) listRuns(w http.ResponseWriter, r *http.Request, _ fleet.Token) error {
	q := r.URL.Query()
	f := fleet.RunFilter{Agent: q.Get("agent"), Schedule: q.Get("schedule")}
	for _, s := range q["state"] {
		if !knownState(fleet.RunState(s)) {
			return badRequest("state %q: want scheduled, running, finished, failed, missed or cancelled", s)
		}
		f.States = append(f.States, fleet.RunState(s))
	}
	var err error
	if f.From, err = timeParam(q, "from", time.Time{}); err != nil {
		return err
	}
	if f.To, err = timeParam(q, "to", time.Time{}); err != nil {
		return err
	}
	if f.Limit, err = limitParam(q); err != nil {
		return err
	}
	rs, err := c.cfg.Store.Runs(r.Context(), f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, nonNil(rs))
	return nil
}

func knownState(s fleet.RunState) bool {
	switch s {
	case fleet.RunScheduled, fleet.RunRunning, fleet.RunFinished, fleet.RunFailed, fleet.RunMissed, fleet.RunCancelled:
		return true
	}
	return false
}

// getRun: GET /v1/runs/{id}.
func (c *Controller) getRun(w http.ResponseWriter, r *http.Request, _ fleet.Token) error {
	run, err := c.cfg.Store.Run(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, run)
	return nil
}

// cancelRun: POST /v1/runs/{id}/cancel.
func (c *Controller) cancelRun(w http.ResponseWriter, r *http.Request, _ fleet.Token) error {
	id := r.PathValue("id")
	ok, err := c.cfg.Store.SetRunState(r.Context(), id, []fleet.RunState{fleet.RunScheduled, fleet.RunRunning},
		fleet.RunCancelled, "cancelled by an operator", c.cfg.Now())
	if err != nil {
		return err
	}
	run, err := c.cfg.Store.Run(r.Context(), id)
	if err != nil {
		return err
	}
	if !ok {
		return httpErr(http.StatusConflict, fmt.Sprintf("run %s is %s: only scheduled or running runs can be cancelled", id, run.State))
	}
	writeJSON(w, http.StatusOK, run)
	return nil
}

// Pages of a run's events: GET /v1/runs/{id}/events answers at most
// limit of them (default eventsPage), after the sequence number after.
const (
	eventsPage    = 1000
	maxEventsPage = 10_000
)

// runEvents: GET /v1/runs/{id}/events?after=&limit=.
func (c *Controller) runEvents(w http.ResponseWriter, r *http.Request, _ fleet.Token) error {
	id := r.PathValue("id")
	if _, err := c.cfg.Store.Run(r.Context(), id); err != nil {
		return err
	}
	q := r.URL.Query()
	after, limit := 0, eventsPage
	for _, p := range []struct {
		name     string
		v        *int
		min, max int
	}{{"after", &after, 0, math.MaxInt}, {"limit", &limit, 1, maxEventsPage}} {
		s := q.Get(p.name)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < p.min || n > p.max {
			return badRequest("%s %q: want a whole number from %d to %d", p.name, s, p.min, p.max)
		}
		*p.v = n
	}
	es, err := c.cfg.Store.Events(r.Context(), id, after, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, nonNil(es))
	return nil
}

// listResults: GET /v1/results?source=&dest=&kind=&since=&limit=&docs=.
func (c *Controller) listResults(w http.ResponseWriter, r *http.Request, _ fleet.Token) error {
	q := r.URL.Query()
	f := fleet.ResultFilter{Source: q.Get("source"), Dest: q.Get("dest"), Kind: q.Get("kind"), Schedule: q.Get("schedule")}
	if f.Kind != "" && !kinds.Known(f.Kind) {
		return badRequest("kind %q: want one of %v", f.Kind, kinds.Names())
	}
	var err error
	if f.Since, err = timeParam(q, "since", time.Time{}); err != nil {
		return err
	}
	if f.Until, err = timeParam(q, "until", time.Time{}); err != nil {
		return err
	}
	if f.Limit, err = limitParam(q); err != nil {
		return err
	}
	docs, err := boolParam(q, "docs")
	if err != nil {
		return err
	}
	f.NoDoc = true
	rs, err := c.cfg.Store.Results(r.Context(), f)
	if err != nil {
		return err
	}
	if !docs {
		writeJSON(w, http.StatusOK, nonNil(rs))
		return nil
	}
	return c.streamDocs(w, r, rs)
}

// streamDocs answers rs with their documents, read from the store and
// written one at a time: the answer may be 1,000 documents of up to 16
// MiB, which the controller never holds together. A result gone since
// the list (pruned) is left out. A store error before the answer began
// is the answer; after, it cuts the answer short (the client sees JSON
// that does not end), as the status is sent.
func (c *Controller) streamDocs(w http.ResponseWriter, r *http.Request, rs []fleet.Result) error {
	enc, n := json.NewEncoder(w), 0
	for _, res := range rs {
		full, err := c.cfg.Store.Result(r.Context(), res.RunID)
		switch {
		case errors.Is(err, fleet.ErrNotFound):
			continue
		case err != nil && n == 0:
			return err
		case err != nil:
			c.cfg.Log.Error("results with documents cut short", "run", res.RunID, "error", err.Error())
			panic(http.ErrAbortHandler)
		}
		sep := ","
		if n == 0 {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(http.StatusOK)
			sep = "["
		}
		n++
		io.WriteString(w, sep)
		if err := enc.Encode(full); err != nil {
			return nil // the client went away
		}
	}
	if n == 0 {
		writeJSON(w, http.StatusOK, []fleet.Result{})
		return nil
	}
	io.WriteString(w, "]\n")
	return nil
}

// getResult: GET /v1/results/{id}, by run ID.
func (c *Controller) getResult(w http.ResponseWriter, r *http.Request, _ fleet.Token) error {
	res, err := c.cfg.Store.Result(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// timeParam is the query's RFC 3339 time k, or def when absent.
func timeParam(q url.Values, k string, def time.Time) (time.Time, error) {
	s := q.Get(k)
	if s == "" {
		return def, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return t, badRequest("%s %q: want an RFC 3339 time such as 2026-11-24T10:00:00Z", k, s)
	}
	return t, nil
}

// maxLimit is the most a list answers at once.
const maxLimit = 10_000

func limitParam(q url.Values) (int, error) {
	s := q.Get("limit")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxLimit {
		return 0, badRequest("limit %q: want 1 to %d", s, maxLimit)
	}
	return n, nil
}

func boolParam(q url.Values, k string) (bool, error) {
	s := q.Get(k)
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, badRequest("%s %q: want true or false", k, s)
	}
	return b, nil
}

// nonNil makes an empty list encode as [], not null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
