package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/controller"
	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/fleet/client"
	"github.com/fullpipe/fullpipe/internal/store"
)

// testFleet is a real controller (package controller over its SQLite
// store in a temp dir, TLS with its own self-signed certificate, on
// 127.0.0.1) with an admin client. A controller can be stopped and
// started again on the same address, store and certificate.
type testFleet struct {
	t     *testing.T
	dir   string
	db    *store.DB
	addr  string // the controller's host:port, kept across restarts
	pin   string
	admin *client.Client

	mu   sync.Mutex // guards stop
	stop func()     // stops the running controller; nil when stopped
}

// Test timings: heartbeats and scheduler ticks fast enough that a run
// is booked and heard of within a second or two.
const (
	testHeartbeat = 200 * time.Millisecond
)

func newTestFleet(t *testing.T) *testFleet {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := store.Open(ctx, filepath.Join(dir, "fleet.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &testFleet{t: t, dir: dir, db: db, addr: "127.0.0.1:0"}
	f.start()
	t.Cleanup(f.halt)
	tok, err := os.ReadFile(filepath.Join(dir, "state", "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	if f.admin, err = client.New("https://"+f.addr, strings.TrimSpace(string(tok)), client.Options{Pin: f.pin, Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.admin.Close)
	return f
}

// start runs a controller on f.addr until halt.
func (f *testFleet) start() {
	f.t.Helper()
	c, err := controller.New(controller.Config{Listen: f.addr, Store: f.db, StateDir: filepath.Join(f.dir, "state"),
		Log: slog.New(slog.NewTextHandler(tWriter{f.t, "controller: "}, &slog.HandlerOptions{Level: slog.LevelWarn})), HeartbeatInterval: testHeartbeat,
		LeaseTTL: 5 * time.Second, LeaseRenew: testHeartbeat, DefaultRTT: time.Millisecond})
	if err != nil {
		f.t.Fatal(err)
	}
	f.addr, f.pin = c.Addr().String(), c.Pin()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stop = func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				f.t.Errorf("controller: %v", err)
			}
		case <-time.After(15 * time.Second):
			f.t.Error("the controller did not stop within 15 s")
		}
	}
}

// halt stops the controller, if it runs.
func (f *testFleet) halt() {
	f.mu.Lock()
	stop := f.stop
	f.stop = nil
	f.mu.Unlock()
	if stop != nil {
		stop()
	}
}

func (f *testFleet) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	f.t.Cleanup(cancel)
	return ctx
}

// enrol enrols an agent and returns its token.
func (f *testFleet) enrol(name string) string {
	f.t.Helper()
	iss, err := f.admin.Enrol(f.ctx(), fleet.Enrolment{Name: name})
	if err != nil {
		f.t.Fatal(err)
	}
	return iss.Secret
}

// client is an agent's client of the controller, with its token,
// pinned to the controller's certificate.
func (f *testFleet) client(token string) *client.Client {
	f.t.Helper()
	c, err := client.New("https://"+f.addr, token, client.Options{Pin: f.pin, Timeout: 5 * time.Second})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(c.Close)
	return c
}

// agent enrols name and runs it as an agent of f until the test ends.
func (f *testFleet) agent(name string, cfg Config) (*Agent, *recorder, func()) {
	f.t.Helper()
	rec := &recorder{Controller: f.client(f.enrol(name))}
	cfg.Controller, cfg.Name = rec, name
	if cfg.SpoolDir == "" {
		cfg.SpoolDir = f.t.TempDir()
	}
	a, stop := startAgent(f.t, cfg)
	return a, rec, stop
}

// book books a run directly in the store (as the scheduler would, but
// with the slot the test wants) and returns it with its key.
func (f *testFleet) book(src, dst string, test fleet.Test, exclusive bool, start time.Time, slot time.Duration) fleet.Run {
	f.t.Helper()
	start = start.UTC().Truncate(time.Millisecond)
	r := fleet.Run{Source: src, Dest: dst, Test: test, Exclusive: exclusive, Start: start, End: start.Add(slot),
		State: fleet.RunScheduled, Created: time.Now().UTC(), Key: []byte("Test-run-key-0123456789abcdef")}
	booked, err := f.db.Book(f.ctx(), r, start.Add(time.Hour))
	if err != nil {
		f.t.Fatal(err)
	}
	if !booked.Start.Equal(start) {
		f.t.Fatalf("booked at %v, want %v", booked.Start, start)
	}
	booked.Key = r.Key
	return booked
}

// waitRun waits up to d for run id to reach one of states.
func (f *testFleet) waitRun(id string, d time.Duration, states ...fleet.RunState) fleet.Run {
	f.t.Helper()
	var r fleet.Run
	deadline := time.Now().Add(d)
	for {
		var err error
		r, err = f.db.Run(context.Background(), id)
		if err != nil {
			f.t.Fatal(err)
		}
		for _, s := range states {
			if r.State == s {
				return r
			}
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("run %s is %s after %v, want %v", id, r.State, d, states)
		}
		time.Sleep(20 * time.Millisecond) // real time: polls a real controller's store while real agents run real TCP tests
	}
}

// waitResult waits up to d for run id's result.
func (f *testFleet) waitResult(id string, d time.Duration) fleet.Result {
	f.t.Helper()
	deadline := time.Now().Add(d)
	for {
		res, err := f.db.Result(context.Background(), id)
		if err == nil {
			return res
		}
		if !errors.Is(err, fleet.ErrNotFound) {
			f.t.Fatal(err)
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("run %s: no result within %v", id, d)
		}
		time.Sleep(20 * time.Millisecond) // real time: polls a real controller's store while real agents run real TCP tests
	}
}

// recorder passes an agent's calls to its real client and records
// them: the uploads' answers, the heartbeats, the event batches.
type recorder struct {
	Controller
	mu      sync.Mutex
	uploads []uploadCall
	beats   []fleet.Heartbeat
	batches map[string][]int // run → sizes of the event batches taken
}

type uploadCall struct {
	runID  string
	stored bool
	err    error
}

func (r *recorder) Heartbeat(ctx context.Context, h fleet.Heartbeat) (fleet.Orders, error) {
	o, err := r.Controller.Heartbeat(ctx, h)
	if err == nil {
		r.mu.Lock()
		r.beats = append(r.beats, h)
		r.mu.Unlock()
	}
	return o, err
}

func (r *recorder) Upload(ctx context.Context, runID string, u fleet.Upload) (bool, error) {
	stored, err := r.Controller.Upload(ctx, runID, u)
	r.mu.Lock()
	r.uploads = append(r.uploads, uploadCall{runID, stored, err})
	r.mu.Unlock()
	return stored, err
}

func (r *recorder) Events(ctx context.Context, runID string, es []fleet.Event) error {
	err := r.Controller.Events(ctx, runID, es)
	if err == nil {
		r.mu.Lock()
		if r.batches == nil {
			r.batches = map[string][]int{}
		}
		r.batches[runID] = append(r.batches[runID], len(es))
		r.mu.Unlock()
	}
	return err
}

// acknowledged counts run id's uploads the controller took, and of
// them those that stored it.
func (r *recorder) acknowledged(id string) (acked, stored int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, u := range r.uploads {
		if u.runID == id && u.err == nil {
			acked++
			if u.stored {
				stored++
			}
		}
	}
	return acked, stored
}

// gate is an HTTP proxy in front of a real controller that passes its
// agents' calls, or refuses them (503) or swallows them (no answer until
// the caller gives up) on cue: a controller that is down or vanishes.
// Only the spool and retry tests use it.
type gate struct {
	srv  *httptest.Server
	mu   sync.Mutex
	mode gateMode
	only string // when set, the mode applies only to paths containing it
}

type gateMode int

const (
	gatePass gateMode = iota
	gateRefuse
	gateSwallow
)

func (f *testFleet) gate() *gate {
	f.t.Helper()
	target, _ := url.Parse("https://" + f.addr)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} // the test's own controller
	g := &gate{}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		mode, only := g.mode, g.only
		g.mu.Unlock()
		if only != "" && !strings.Contains(r.URL.Path, only) {
			mode = gatePass
		}
		switch mode {
		case gateRefuse:
			http.Error(w, `{"error":"gate closed (test)"}`, http.StatusServiceUnavailable)
		case gateSwallow:
			// Read the body so that the server notices the caller
			// leaving; answer nothing until then (bounded).
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		default:
			rp.ServeHTTP(w, r)
		}
	}))
	f.t.Cleanup(g.srv.Close)
	return g
}

func (g *gate) set(mode gateMode, only string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.mode, g.only = mode, only
}

// gatedClient is an agent's client behind g (plain HTTP: the gate is
// on loopback, in the test) with a short timeout, so that a swallowed
// call fails within a second.
func (f *testFleet) gatedClient(g *gate, token string) *recorder {
	f.t.Helper()
	c, err := client.New(g.srv.URL, token, client.Options{Insecure: true, Timeout: time.Second})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(c.Close)
	return &recorder{Controller: c}
}

// gatedAgent enrols name and runs it behind g.
func (f *testFleet) gatedAgent(g *gate, name string, cfg Config) (*Agent, *recorder, func()) {
	f.t.Helper()
	rec := f.gatedClient(g, f.enrol(name))
	cfg.Controller, cfg.Name = rec, name
	if cfg.SpoolDir == "" {
		cfg.SpoolDir = f.t.TempDir()
	}
	a, stop := startAgent(f.t, cfg)
	return a, rec, stop
}
