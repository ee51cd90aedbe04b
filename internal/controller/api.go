package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// Body limits: a result carries its document; everything else is small.
const (
	maxResultBody = 16 << 20
	maxBody       = 64 << 10
)

// access is who may call a route.
type access int

const (
	public  access = iota // no token
	asAgent               // an agent token, acting as its agent
	read                  // an API token of at least read
	operate               // ... operate
	admin                 // ... admin
)

// handler serves one route for an authenticated caller (the zero Token
// on public routes). It writes its answer or returns an error, which
// the route writes as fleet.Error with the status statusOf gives.
type handler func(w http.ResponseWriter, r *http.Request, who fleet.Token) error

// route is one endpoint: the table is the API (TestOpenAPI checks it
// against docs/openapi.yaml both ways).
type route struct {
	method, path string
	access       access
	limit        int64 // body cap; 0: maxBody
	h            handler
}

// table lists every route the controller serves.
func (c *Controller) table() []route {
	return []route{
		{"GET", "/healthz", public, 0, c.healthz},
		{"GET", "/v1/openapi.yaml", public, 0, serveOpenAPI},
		{"GET", "/metrics", read, 0, c.serveMetrics},

		{"POST", "/v1/agent/register", asAgent, 0, c.register},
		{"POST", "/v1/agent/heartbeat", asAgent, 0, c.heartbeat},
		{"POST", "/v1/agent/runs/{id}/start", asAgent, 0, c.start},
		{"PUT", "/v1/agent/runs/{id}/result", asAgent, maxResultBody, c.upload},
		{"POST", "/v1/agent/runs/{id}/events", asAgent, maxEventsBody, c.addEvents},

		{"GET", "/v1/agents", read, 0, c.listAgents},
		{"POST", "/v1/agents", admin, 0, c.enrol},
		{"GET", "/v1/agents/{name}", read, 0, c.getAgent},
		{"DELETE", "/v1/agents/{name}/token", admin, 0, c.revokeAgent},
		{"POST", "/v1/agents/{name}/approve", admin, 0, c.approveAgent},
		{"GET", "/v1/agents/{name}/busy", read, 0, c.busy},

		{"GET", "/v1/tokens", admin, 0, c.listTokens},
		{"POST", "/v1/tokens", admin, 0, c.issueToken},
		{"DELETE", "/v1/tokens/{id}", admin, 0, c.revokeToken},

		{"GET", "/v1/schedules", read, 0, c.listSchedules},
		{"POST", "/v1/schedules", operate, 0, c.createSchedule},
		{"GET", "/v1/schedules/{id}", read, 0, c.getSchedule},
		{"PUT", "/v1/schedules/{id}", operate, 0, c.updateSchedule},
		{"DELETE", "/v1/schedules/{id}", operate, 0, c.deleteSchedule},

		{"GET", "/v1/runs", read, 0, c.listRuns},
		{"GET", "/v1/runs/{id}", read, 0, c.getRun},
		{"POST", "/v1/runs/{id}/cancel", operate, 0, c.cancelRun},
		{"GET", "/v1/runs/{id}/events", read, 0, c.runEvents},

		{"GET", "/v1/results", read, 0, c.listResults},
		{"GET", "/v1/results/{id}", read, 0, c.getResult},
	}
}

// routes is the API on the standard library's ServeMux (method and
// path patterns), each route wrapped in its auth, body cap and error
// writing; what no route matches is answered in the same error shape.
func (c *Controller) routes() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range c.table() {
		mux.Handle(rt.method+" "+rt.path, c.wrap(rt))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		// No route: the mux says 404 or 405 (with Allow); answer in
		// the API's shape.
		rec := &statusOnly{h: http.Header{}}
		mux.ServeHTTP(rec, r)
		if a := rec.h.Get("Allow"); a != "" {
			w.Header().Set("Allow", a)
		}
		msg := "no such endpoint: " + r.Method + " " + r.URL.Path
		if rec.code == http.StatusMethodNotAllowed {
			msg = r.Method + " is not allowed on " + r.URL.Path + ": allowed " + rec.h.Get("Allow")
		}
		writeError(w, rec.code, msg)
	})
}

// statusOnly keeps a handler's status and headers, not its body.
type statusOnly struct {
	h    http.Header
	code int
}

func (s *statusOnly) Header() http.Header { return s.h }
func (s *statusOnly) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
}
func (s *statusOnly) Write(b []byte) (int, error) {
	s.WriteHeader(http.StatusOK)
	return len(b), nil
}

// wrap authenticates, checks the role, caps the body and writes the
// handler's error.
func (c *Controller) wrap(rt route) http.Handler {
	limit := rt.limit
	if limit == 0 {
		limit = maxBody
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		w = sw
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		var who fleet.Token
		err := error(nil)
		if rt.access != public {
			who, err = c.authorize(r, rt.access)
		}
		if err == nil {
			err = rt.h(w, r, who)
		}
		code := sw.code
		if err != nil {
			code = statusOf(err)
			if code == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="fullpipe"`)
			}
			writeError(w, code, oneLine(err))
		}
		c.logRequest(r, rt, who, code, err, time.Since(t0))
	})
}

func (c *Controller) logRequest(r *http.Request, rt route, who fleet.Token, code int, err error, d time.Duration) {
	level := slog.LevelDebug
	switch {
	case code >= 500:
		level = slog.LevelError
	case code >= 400 || r.Method != http.MethodGet && rt.access != asAgent:
		level = slog.LevelInfo
	}
	attrs := []slog.Attr{slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", code),
		slog.Duration("took", d), slog.String("token", who.ID)}
	if who.Agent != "" {
		attrs = append(attrs, slog.String("agent", who.Agent))
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	c.cfg.Log.LogAttrs(r.Context(), level, "request", attrs...)
}

// statusWriter keeps the status a handler wrote, for the log.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// authorize finds the bearer token and checks it may call a route of
// access a.
func (c *Controller) authorize(r *http.Request, a access) (fleet.Token, error) {
	h := r.Header.Get("Authorization")
	secret, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || strings.TrimSpace(secret) == "" {
		return fleet.Token{}, httpErr(http.StatusUnauthorized, "no token: send Authorization: Bearer <token>")
	}
	t, err := c.tokens.authenticate(r.Context(), c.cfg.Store, strings.TrimSpace(secret), c.cfg.Now())
	if err != nil {
		return t, err
	}
	switch {
	case a == asAgent && t.Role != fleet.RoleAgent:
		return t, httpErr(http.StatusForbidden, "this endpoint is for agents: use the agent's token")
	case a != asAgent && t.Role == fleet.RoleAgent:
		return t, httpErr(http.StatusForbidden, "an agent token may only call /v1/agent/ endpoints")
	case a != asAgent && rank(t.Role) < int(a-read)+1:
		return t, httpErr(http.StatusForbidden, fmt.Sprintf("role %s may not do this: it needs %s", t.Role, needs(a)))
	}
	return t, nil
}

// rank orders the API roles: read 1 < operate 2 < admin 3.
func rank(r fleet.Role) int {
	switch r {
	case fleet.RoleRead:
		return 1
	case fleet.RoleOperate:
		return 2
	case fleet.RoleAdmin:
		return 3
	}
	return 0
}

func needs(a access) fleet.Role {
	return [...]fleet.Role{read: fleet.RoleRead, operate: fleet.RoleOperate, admin: fleet.RoleAdmin}[a]
}

// apiError is an error with its status.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return e.msg }

func httpErr(code int, msg string) error { return &apiError{code, msg} }

func badRequest(format string, args ...any) error {
	return &apiError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// statusOf maps an error to its status: the API's own, the store's
// typed errors, a body past its cap; anything else is 500.
func statusOf(err error) int {
	var (
		ae *apiError
		fe *fleet.FieldError
		mb *http.MaxBytesError
	)
	switch {
	case errors.As(err, &ae):
		return ae.code
	case errors.As(err, &fe):
		return http.StatusBadRequest
	case errors.As(err, &mb):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, fleet.ErrUnauthorized):
		return http.StatusUnauthorized
	case errors.Is(err, fleet.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, fleet.ErrExists), errors.Is(err, fleet.ErrConflict), errors.Is(err, fleet.ErrNoSlot):
		return http.StatusConflict
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// oneLine is err's message on one line.
func oneLine(err error) string {
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		return fmt.Sprintf("request body is larger than the %d bytes this endpoint takes", mb.Limit)
	}
	if statusOf(err) == http.StatusInternalServerError {
		return "internal error: " + strings.Join(strings.Fields(err.Error()), " ")
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, fleet.Error{Error: msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":"internal error: encoding the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

// decode reads the body into v: one JSON value, no unknown fields.
func decode(r *http.Request, v any) error {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return badRequest("empty body: want a JSON document")
		}
		return badRequest("request body: %v", err)
	}
	if d.More() {
		return badRequest("request body: more than one JSON value")
	}
	return nil
}

// healthz: GET /healthz, unauthenticated. It reads nothing per call:
// the store is healthy when it answered the scheduler's lease renewal
// (every LeaseRenew) within LeaseTTL; and it says nothing of the host
// (no name, no store error), only whether this replica schedules.
func (c *Controller) healthz(w http.ResponseWriter, r *http.Request, _ fleet.Token) error {
	seen := c.sched.storeSeen.Load()
	if seen == 0 || c.cfg.Now().Sub(time.Unix(0, seen)) > c.cfg.LeaseTTL {
		return httpErr(http.StatusServiceUnavailable, "the store has not answered within "+c.cfg.LeaseTTL.String())
	}
	writeJSON(w, http.StatusOK, Health{OK: true, Scheduler: c.sched.active.Load()})
	return nil
}

// Health is /healthz's answer: the store answers; whether this replica
// schedules.
type Health struct {
	OK        bool `json:"ok"`
	Scheduler bool `json:"scheduler"`
}
