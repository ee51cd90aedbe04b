package controller

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// TestBadInput: malformed JSON, unknown fields, bodies past their caps,
// bad queries, unknown endpoints and methods: each refused with its
// status and one line in the API's shape.
func TestBadInput(t *testing.T) {
	e := start(t, Config{})
	admin := adminSecret(t, e)
	big := bytes.Repeat([]byte("x"), maxBody+1)
	cases := []struct {
		name, method, path, body string
		want                     int
		says                     string
	}{
		{"malformed", "POST", "/v1/tokens", `{"role": "read"`, 400, "request body"},
		{"unknown field", "POST", "/v1/tokens", `{"role": "read", "rol": "admin"}`, 400, "unknown field"},
		{"two values", "POST", "/v1/tokens", `{"role": "read"} {}`, 400, "more than one"},
		{"empty", "POST", "/v1/tokens", ``, 400, "empty body"},
		{"wrong type", "POST", "/v1/tokens", `{"role": 3}`, 400, "request body"},
		{"agent role by token", "POST", "/v1/tokens", `{"role": "agent"}`, 400, "role"},
		{"too large", "POST", "/v1/tokens", `{"note": "` + string(big) + `"}`, 413, "larger than"},
		{"bad agent name", "POST", "/v1/agents", `{"name": "../etc"}`, 400, "agent name"},
		{"bad limit", "GET", "/v1/runs?limit=0", ``, 400, "limit"},
		{"bad time", "GET", "/v1/runs?from=yesterday", ``, 400, "RFC 3339"},
		{"bad state", "GET", "/v1/runs?state=sleeping", ``, 400, "state"},
		{"bad kind", "GET", "/v1/results?kind=ftp", ``, 400, "kind"},
		{"unknown run", "GET", "/v1/runs/nope", ``, 404, "not found"},
		{"unknown endpoint", "GET", "/v1/nothing", ``, 404, "no such endpoint"},
		{"wrong method", "PATCH", "/v1/agents", `{}`, 405, "not allowed"},
	}
	for _, c := range cases {
		code, fe := e.raw(c.method, c.path, admin, strings.NewReader(c.body))
		if code != c.want || !strings.Contains(fe.Error, c.says) || strings.Contains(fe.Error, "\n") {
			t.Errorf("%s: %d %q, want %d saying %q", c.name, code, fe.Error, c.want, c.says)
		}
	}
	// A result body may be larger, up to 16 MiB.
	ag := agentSecret(t, e, "a")
	code, fe := e.raw("PUT", "/v1/agent/runs/x/result", ag, bytes.NewReader(bytes.Repeat([]byte(" "), maxResultBody+1)))
	if code != 404 && code != 413 {
		t.Errorf("17 MiB upload: %d %s", code, fe.Error)
	}
}

// TestResultTooLarge: an upload past 16 MiB is 413, one under it is
// read (and refused for what it says, not its size).
func TestResultTooLarge(t *testing.T) {
	e := start(t, Config{})
	a := e.agent("a", nil)
	e.agent("b", nil)
	if _, err := e.admin.CreateSchedule(ctx(t), pairSchedule("a", "b")); err != nil {
		t.Fatal(err)
	}
	id := waitOrders(t, a, func(o fleet.Orders) bool { return len(o.Runs) > 0 }).Runs[0].ID
	pad := strings.Repeat("x", maxResultBody)
	_, err := a.Upload(ctx(t), id, fleet.Upload{State: fleet.RunFinished, Doc: json.RawMessage(`{"schema":1,"test":"tcp","pad":"` + pad + `"}`)})
	wantStatus(t, "a 16 MiB document", err, http.StatusRequestEntityTooLarge)
	_, err = a.Upload(ctx(t), id, fleet.Upload{State: fleet.RunFinished, Doc: json.RawMessage(`{"schema":1,"test":"udp"}`)})
	wantStatus(t, "a udp document for a tcp run", err, http.StatusBadRequest)
	_, err = a.Upload(ctx(t), id, fleet.Upload{State: fleet.RunFinished, Doc: json.RawMessage(`{"schema":99,"test":"tcp"}`)})
	wantStatus(t, "a newer schema", err, http.StatusBadRequest)
	_, err = a.Upload(ctx(t), id, fleet.Upload{State: fleet.RunFinished})
	wantStatus(t, "finished without a document", err, http.StatusBadRequest)
	_, err = a.Upload(ctx(t), id, fleet.Upload{State: fleet.RunRunning})
	wantStatus(t, "state running", err, http.StatusBadRequest)
}

// TestScheduleValidation: what a schedule may not say.
func TestScheduleValidation(t *testing.T) {
	e := start(t, Config{})
	ok := pairSchedule("a", "b")
	cases := []struct {
		name string
		edit func(*fleet.Schedule)
		says string
	}{
		{"no kind", func(s *fleet.Schedule) { s.Test.Kind = "" }, "test.kind"},
		{"unknown kind", func(s *fleet.Schedule) { s.Test.Kind = "ftp" }, "ftp"},
		{"config of another kind", func(s *fleet.Schedule) { s.Test.Config = json.RawMessage(`{"rate_bps": 1}`) }, "unknown field"},
		{"invalid config", func(s *fleet.Schedule) { s.Test.Config = json.RawMessage(`{"reverse": true, "bidir": true}`) }, "bidir"},
		{"bad repeat", func(s *fleet.Schedule) { s.Repeat = "every so often" }, "repeat"},
		{"empty from", func(s *fleet.Schedule) { s.From = fleet.Selector{} }, "from: picks no agents"},
		{"empty to", func(s *fleet.Schedule) { s.To = fleet.Selector{} }, "to: picks no agents"},
		{"bad name in to", func(s *fleet.Schedule) { s.To.Agents = []string{"a b"} }, "agent name"},
		{"negative slip", func(s *fleet.Schedule) { s.Slip = -time.Second }, "slip"},
		{"long name", func(s *fleet.Schedule) { s.Name = strings.Repeat("n", 201) }, "name"},
		{"negative RTT limit", func(s *fleet.Schedule) { s.Thresholds = &fleet.Thresholds{MaxRTTMs: -1} }, "thresholds.max_rtt_ms: -1"},
		{"loss over 100 %", func(s *fleet.Schedule) { s.Thresholds = &fleet.Thresholds{MaxLossPct: 150} }, "thresholds.max_loss_pct"},
	}
	for _, c := range cases {
		s := ok
		c.edit(&s)
		_, err := e.admin.CreateSchedule(ctx(t), s)
		wantStatus(t, c.name, err, http.StatusBadRequest)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want it to say %q", c.name, err, c.says)
		}
	}
	if _, err := e.admin.CreateSchedule(ctx(t), ok); err != nil {
		t.Errorf("the valid schedule: %v", err)
	}
}

func adminSecret(t *testing.T, e *env) string {
	t.Helper()
	is, err := e.admin.IssueToken(ctx(t), fleet.TokenRequest{Role: fleet.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	return is.Secret
}

func agentSecret(t *testing.T, e *env, name string) string {
	t.Helper()
	is, err := e.admin.Enrol(ctx(t), fleet.Enrolment{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return is.Secret
}
