package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// The agent's calls: its token acts as its agent only.

// Register says what the agent is (POST /v1/agent/register).
func (c *Client) Register(ctx context.Context, r fleet.Registration) (fleet.Agent, error) {
	var a fleet.Agent
	err := c.do(ctx, http.MethodPost, "/v1/agent/register", nil, r, &a)
	return a, err
}

// Heartbeat reports what the agent runs and gets its orders (POST
// /v1/agent/heartbeat).
func (c *Client) Heartbeat(ctx context.Context, h fleet.Heartbeat) (fleet.Orders, error) {
	var o fleet.Orders
	err := c.do(ctx, http.MethodPost, "/v1/agent/heartbeat", nil, h, &o)
	return o, err
}

// Start marks the run running (POST /v1/agent/runs/{id}/start): a 409
// *Error when it is no longer scheduled.
func (c *Client) Start(ctx context.Context, runID string) error {
	return c.do(ctx, http.MethodPost, "/v1/agent/runs/"+url.PathEscape(runID)+"/start", nil, nil, nil)
}

// Upload sends the run's end (PUT /v1/agent/runs/{id}/result): stored
// is false when the same upload was stored before (a retry); a
// different one is a 409 *Error.
func (c *Client) Upload(ctx context.Context, runID string, u fleet.Upload) (stored bool, err error) {
	var s fleet.Stored
	err = c.do(ctx, http.MethodPut, "/v1/agent/runs/"+url.PathEscape(runID)+"/result", nil, u, &s)
	return s.Stored, err
}

// Events appends the run's progress (POST /v1/agent/runs/{id}/events);
// events already stored (same Seq) are skipped.
func (c *Client) Events(ctx context.Context, runID string, es []fleet.Event) error {
	return c.do(ctx, http.MethodPost, "/v1/agent/runs/"+url.PathEscape(runID)+"/events", nil, es, nil)
}

// The operator's calls: API tokens of role read, operate or admin.

// Agents lists the enrolled agents with their states (GET /v1/agents).
func (c *Client) Agents(ctx context.Context) ([]fleet.Agent, error) {
	var as []fleet.Agent
	err := c.do(ctx, http.MethodGet, "/v1/agents", nil, nil, &as)
	return as, err
}

// Agent is one agent (GET /v1/agents/{name}).
func (c *Client) Agent(ctx context.Context, name string) (fleet.Agent, error) {
	var a fleet.Agent
	err := c.do(ctx, http.MethodGet, "/v1/agents/"+url.PathEscape(name), nil, nil, &a)
	return a, err
}

// Enrol creates an agent and issues its token, shown once (POST
// /v1/agents; admin).
func (c *Client) Enrol(ctx context.Context, e fleet.Enrolment) (fleet.Issued, error) {
	var t fleet.Issued
	err := c.do(ctx, http.MethodPost, "/v1/agents", nil, e, &t)
	return t, err
}

// ApproveAgent lets peers dial the agent's pending addresses (POST
// /v1/agents/{name}/approve; admin).
func (c *Client) ApproveAgent(ctx context.Context, name string) (fleet.Agent, error) {
	var a fleet.Agent
	err := c.do(ctx, http.MethodPost, "/v1/agents/"+url.PathEscape(name)+"/approve", nil, nil, &a)
	return a, err
}

// RevokeAgent revokes the agent's tokens (DELETE
// /v1/agents/{name}/token; admin).
func (c *Client) RevokeAgent(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/v1/agents/"+url.PathEscape(name)+"/token", nil, nil, nil)
}

// Busy is the agent's booked slots in [from, to) and when it is next
// free (GET /v1/agents/{name}/busy); zero times: the controller's
// defaults (now, and a day later).
func (c *Client) Busy(ctx context.Context, name string, from, to time.Time) (fleet.Busy, error) {
	q := url.Values{}
	setTime(q, "from", from)
	setTime(q, "to", to)
	var b fleet.Busy
	err := c.do(ctx, http.MethodGet, "/v1/agents/"+url.PathEscape(name)+"/busy", q, nil, &b)
	return b, err
}

// IssueToken issues an API token, shown once (POST /v1/tokens; admin).
func (c *Client) IssueToken(ctx context.Context, r fleet.TokenRequest) (fleet.Issued, error) {
	var t fleet.Issued
	err := c.do(ctx, http.MethodPost, "/v1/tokens", nil, r, &t)
	return t, err
}

// Tokens lists every token, without secrets (GET /v1/tokens; admin).
func (c *Client) Tokens(ctx context.Context) ([]fleet.Token, error) {
	var ts []fleet.Token
	err := c.do(ctx, http.MethodGet, "/v1/tokens", nil, nil, &ts)
	return ts, err
}

// RevokeToken revokes a token by its ID (DELETE /v1/tokens/{id}; admin).
func (c *Client) RevokeToken(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/tokens/"+url.PathEscape(id), nil, nil, nil)
}

// CreateSchedule stores a schedule (POST /v1/schedules; operate): the
// controller assigns ID, Created and NextDue.
func (c *Client) CreateSchedule(ctx context.Context, s fleet.Schedule) (fleet.Schedule, error) {
	var out fleet.Schedule
	err := c.do(ctx, http.MethodPost, "/v1/schedules", nil, s, &out)
	return out, err
}

// Schedules lists the schedules (GET /v1/schedules).
func (c *Client) Schedules(ctx context.Context) ([]fleet.Schedule, error) {
	var ss []fleet.Schedule
	err := c.do(ctx, http.MethodGet, "/v1/schedules", nil, nil, &ss)
	return ss, err
}

// Schedule is one schedule (GET /v1/schedules/{id}).
func (c *Client) Schedule(ctx context.Context, id string) (fleet.Schedule, error) {
	var s fleet.Schedule
	err := c.do(ctx, http.MethodGet, "/v1/schedules/"+url.PathEscape(id), nil, nil, &s)
	return s, err
}

// UpdateSchedule replaces schedule s.ID (PUT /v1/schedules/{id};
// operate): s is the whole schedule, as Schedule gave it and changed.
// The controller keeps ID and Created, recomputes NextDue when Repeat or
// Start changed, and takes Enabled: false pauses, true resumes (from
// the next occurrence after now).
func (c *Client) UpdateSchedule(ctx context.Context, s fleet.Schedule) (fleet.Schedule, error) {
	var out fleet.Schedule
	err := c.do(ctx, http.MethodPut, "/v1/schedules/"+url.PathEscape(s.ID), nil, s, &out)
	return out, err
}

// DeleteSchedule removes a schedule and cancels its runs not yet
// started (DELETE /v1/schedules/{id}; operate).
func (c *Client) DeleteSchedule(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/schedules/"+url.PathEscape(id), nil, nil, nil)
}

// Runs lists runs, newest slot first (GET /v1/runs).
func (c *Client) Runs(ctx context.Context, f fleet.RunFilter) ([]fleet.Run, error) {
	q := url.Values{}
	set(q, "agent", f.Agent)
	set(q, "schedule", f.Schedule)
	for _, s := range f.States {
		q.Add("state", string(s))
	}
	setTime(q, "from", f.From)
	setTime(q, "to", f.To)
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var rs []fleet.Run
	err := c.do(ctx, http.MethodGet, "/v1/runs", q, nil, &rs)
	return rs, err
}

// Run is one run (GET /v1/runs/{id}).
func (c *Client) Run(ctx context.Context, id string) (fleet.Run, error) {
	var r fleet.Run
	err := c.do(ctx, http.MethodGet, "/v1/runs/"+url.PathEscape(id), nil, nil, &r)
	return r, err
}

// CancelRun cancels a scheduled or running run (POST
// /v1/runs/{id}/cancel; operate): a 409 *Error when it has ended.
func (c *Client) CancelRun(ctx context.Context, id string) (fleet.Run, error) {
	var r fleet.Run
	err := c.do(ctx, http.MethodPost, "/v1/runs/"+url.PathEscape(id)+"/cancel", nil, nil, &r)
	return r, err
}

// RunEvents is a run's progress after seq afterSeq (GET
// /v1/runs/{id}/events), all of it: page after page of eventsPage (the
// controller keeps at most 10,000 events of a run).
func (c *Client) RunEvents(ctx context.Context, id string, afterSeq int) ([]fleet.Event, error) {
	const eventsPage = 1000
	var all []fleet.Event
	for {
		q := url.Values{"limit": {strconv.Itoa(eventsPage)}}
		if afterSeq > 0 {
			q.Set("after", strconv.Itoa(afterSeq))
		}
		var es []fleet.Event
		if err := c.do(ctx, http.MethodGet, "/v1/runs/"+url.PathEscape(id)+"/events", q, nil, &es); err != nil {
			return all, err
		}
		all = append(all, es...)
		if len(es) < eventsPage {
			return all, nil
		}
		afterSeq = es[len(es)-1].Seq
	}
}

// Results lists results, newest first, without their documents unless
// docs (GET /v1/results).
func (c *Client) Results(ctx context.Context, f fleet.ResultFilter, docs bool) ([]fleet.Result, error) {
	q := url.Values{}
	set(q, "source", f.Source)
	set(q, "dest", f.Dest)
	set(q, "kind", f.Kind)
	set(q, "schedule", f.Schedule)
	setTime(q, "since", f.Since)
	setTime(q, "until", f.Until)
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	if docs {
		q.Set("docs", "true")
	}
	var rs []fleet.Result
	err := c.do(ctx, http.MethodGet, "/v1/results", q, nil, &rs)
	return rs, err
}

// Result is a run's result with its document (GET /v1/results/{run}).
func (c *Client) Result(ctx context.Context, runID string) (fleet.Result, error) {
	var r fleet.Result
	err := c.do(ctx, http.MethodGet, "/v1/results/"+url.PathEscape(runID), nil, nil, &r)
	return r, err
}

func set(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}

func setTime(q url.Values, k string, t time.Time) {
	if !t.IsZero() {
		q.Set(k, t.UTC().Format(time.RFC3339Nano))
	}
}
