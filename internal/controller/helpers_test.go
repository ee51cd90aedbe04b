package controller

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/fleet/client"
	"github.com/fullpipe/fullpipe/internal/kinds"
	"github.com/fullpipe/fullpipe/internal/store"
	"github.com/fullpipe/fullpipe/internal/testkit"
)

// env is one controller under test: on TLS, on 127.0.0.1:0, over a
// real store, with its admin client.
type env struct {
	t     *testing.T
	c     *Controller
	st    fleet.Store
	admin *client.Client
	logs  *testkit.Buffer // the controller's JSON log
	rec   *recorder
}

// sqliteStore is a fresh SQLite store in the test's directory.
func sqliteStore(t *testing.T) fleet.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "fleet.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// testConfig are short intervals for tests: a 1 s heartbeat, a tick
// every 200 ms.
func testConfig(st fleet.Store, dir string) Config {
	return Config{Listen: "127.0.0.1:0", Store: st, StateDir: dir, HeartbeatInterval: time.Second,
		Lookahead: 3 * time.Second, LeaseRenew: 200 * time.Millisecond, LeaseTTL: 3 * time.Second}
}

// start runs a controller on cfg (Store, StateDir and Log filled when
// empty) until the test ends, and returns it with its admin client.
func start(t *testing.T, cfg Config) *env {
	t.Helper()
	if cfg.Store == nil {
		cfg.Store = sqliteStore(t)
	}
	if cfg.StateDir == "" {
		cfg.StateDir = t.TempDir()
	}
	if cfg.Listen == "" {
		cfg = mergeTest(cfg)
	}
	logs := &testkit.Buffer{}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, c: c, st: cfg.Store, logs: logs, rec: &recorder{}}
	c.srv.Handler = e.rec.routes(c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("controller did not stop within 15 s")
		}
		e.rec.validate(t)
		if t.Failed() {
			t.Logf("controller log:\n%s", tail(logs.String(), 60))
		}
	})
	secret, err := os.ReadFile(filepath.Join(cfg.StateDir, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	e.admin = e.client(strings.TrimSpace(string(secret)))
	return e
}

// mergeTest fills cfg's zero fields from testConfig.
func mergeTest(cfg Config) Config {
	d := testConfig(cfg.Store, cfg.StateDir)
	d.Webhook, d.MaxPairs, d.DefaultRTT, d.Horizon, d.webhookBackoff = cfg.Webhook, cfg.MaxPairs, cfg.DefaultRTT, cfg.Horizon, cfg.webhookBackoff
	d.WebhookChanges, d.Now = cfg.WebhookChanges, cfg.Now
	if cfg.HeartbeatInterval != 0 {
		d.HeartbeatInterval = cfg.HeartbeatInterval
	}
	return d
}

// client is a client of the controller with token, pinning its
// certificate.
func (e *env) client(token string) *client.Client {
	e.t.Helper()
	cl, err := client.New(e.c.URL(), token, client.Options{Pin: e.c.Pin(), Timeout: 10 * time.Second})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(cl.Close)
	return cl
}

// token issues an API token of role r and returns its client.
func (e *env) token(r fleet.Role) (*client.Client, fleet.Issued) {
	e.t.Helper()
	is, err := e.admin.IssueToken(ctx(e.t), fleet.TokenRequest{Role: r, Note: "test " + string(r)})
	if err != nil {
		e.t.Fatal(err)
	}
	return e.client(is.Secret), is
}

// agent enrols and registers an agent that runs every kind, with a
// responder address on loopback (never dialled here).
func (e *env) agent(name string, labels map[string]string) *client.Client {
	e.t.Helper()
	return e.client(e.enrolSecret(name, labels))
}

// enrolSecret enrols and registers agent name (as agent) and returns
// its token's secret, for a client of its own or an attacker process.
func (e *env) enrolSecret(name string, labels map[string]string) string {
	e.t.Helper()
	is, err := e.admin.Enrol(ctx(e.t), fleet.Enrolment{Name: name})
	if err != nil {
		e.t.Fatal(err)
	}
	_, err = e.client(is.Secret).Register(ctx(e.t), fleet.Registration{Name: name, Version: "test", Capabilities: kinds.Names(),
		Addresses: []string{"127.0.0.1:5201"}, Labels: labels, ResponderPin: strings.Repeat("ab", 32)})
	if err != nil {
		e.t.Fatal(err)
	}
	return is.Secret
}

// cancelledRun books a run from a to b at start and cancels it.
func (e *env) cancelledRun(start time.Time) fleet.Run {
	e.t.Helper()
	r, err := e.st.Book(ctx(e.t), fleet.Run{Source: "a", Dest: "b", Test: fleet.Test{Kind: "rtt"},
		Start: start, End: start.Add(time.Minute), State: fleet.RunScheduled, Created: start}, start.Add(time.Hour))
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.admin.CancelRun(ctx(e.t), r.ID); err != nil {
		e.t.Fatal(err)
	}
	return r
}

// ctx is a context that ends with the test, at most 60 s on.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// wantStatus fails unless err is an API error of status code.
func wantStatus(t *testing.T, what string, err error, code int) {
	t.Helper()
	if got := client.StatusOf(err); got != code {
		t.Errorf("%s: got %v (status %d), want status %d", what, err, got, code)
		return
	}
	var ae *client.Error
	if errors.As(err, &ae) && (ae.Message == "" || strings.Contains(ae.Message, "\n")) {
		t.Errorf("%s: error %q is not one line", what, ae.Message)
	}
}

// raw sends body to path with token and returns the status and the
// answer, for what the typed client cannot send.
func (e *env) raw(method, path, token string, body io.Reader) (int, fleet.Error) {
	e.t.Helper()
	req, err := http.NewRequestWithContext(ctx(e.t), method, e.c.URL()+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.httpClient().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var fe fleet.Error
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		if err := json.Unmarshal(b, &fe); err != nil || fe.Error == "" {
			e.t.Errorf("%s %s: %d answer %q is not the API's error shape", method, path, resp.StatusCode, b)
		}
	}
	return resp.StatusCode, fe
}

// httpClient trusts the controller's own certificate file (not the pin).
func (e *env) httpClient() *http.Client {
	pem, err := os.ReadFile(filepath.Join(e.c.cfg.StateDir, certFile))
	if err != nil {
		e.t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// poll calls cond every 50 ms until it holds or d passes.
func poll(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if cond() {
			return true
		}
		time.Sleep(50 * time.Millisecond) // real time: polls a real controller over TLS sockets (or its store), whose work no bubble holds
	}
	return cond()
}

// outboxEmpty says whether the webhook's outbox holds no file: each
// stored result's file goes only once its delivery is over (or it is
// passed over), so with the uploads answered, no delivery is left.
func (e *env) outboxEmpty() bool {
	es, err := os.ReadDir(filepath.Join(e.c.cfg.StateDir, "outbox"))
	if err != nil {
		e.t.Fatal(err)
	}
	return len(es) == 0
}

// ticks counts the scheduler's ticks so far (each counted as it ends).
func (e *env) ticks() uint64 {
	e.t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(e.c.metrics.tickSeconds)
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 {
		e.t.Fatalf("tick histogram: %v", err)
	}
	return mfs[0].GetMetric()[0].GetHistogram().GetSampleCount()
}

// tail is the last n lines of s but for routine requests.
func tail(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if !strings.Contains(l, `"level":"DEBUG"`) {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
