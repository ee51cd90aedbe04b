package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// fakeFleet is an in-memory controller for the agent's unit tests: it
// hands each agent the orders a test sets, stores uploads as the real
// store does (idempotent by run, a different second upload is a
// conflict), and can be made to fail every call on cue (down) to play
// a controller that is away. Each agent talks to it through its own
// fakeCtl, as each real agent has its own token.
type fakeFleet struct {
	mu       sync.Mutex
	down     bool
	orders   map[string]fleet.Orders // by agent
	regs     map[string]fleet.Registration
	beats    map[string][]fleet.Heartbeat
	starts   map[string]int
	noStart  map[string]bool // runs whose start is refused (conflict)
	noUpload bool            // uploads fail as if unreachable
	uploads  map[string]int  // acknowledged calls, by run
	stored   map[string]fleet.Upload
	refused  int // calls failed while down
	events   map[string][]fleet.Event
	uploaded chan struct{} // a store happened (capacity 1)
}

var errDown = errors.New("controller unreachable (test)")

func newFakeFleet() *fakeFleet {
	return &fakeFleet{orders: map[string]fleet.Orders{}, regs: map[string]fleet.Registration{}, beats: map[string][]fleet.Heartbeat{},
		starts: map[string]int{}, noStart: map[string]bool{}, uploads: map[string]int{}, stored: map[string]fleet.Upload{}, events: map[string][]fleet.Event{},
		uploaded: make(chan struct{}, 1)}
}

func (f *fakeFleet) ctl(name string) *fakeCtl { return &fakeCtl{f: f, name: name} }

func (f *fakeFleet) setDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

func (f *fakeFleet) setOrders(name string, o fleet.Orders) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.orders[name] = o
}

// call counts a call and fails it while down; f.mu is held.
func (f *fakeFleet) call(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if f.down {
		f.refused++
		return errDown
	}
	return nil
}

// waitUpload waits up to d for run id's first store.
func (f *fakeFleet) waitUpload(t *testing.T, id string, d time.Duration) fleet.Upload {
	t.Helper()
	deadline := time.After(d)
	for {
		f.mu.Lock()
		u, ok := f.stored[id]
		f.mu.Unlock()
		if ok {
			return u
		}
		select {
		case <-f.uploaded:
		case <-deadline:
			t.Fatalf("run %s: no upload within %v", id, d)
		}
	}
}

type fakeCtl struct {
	f    *fakeFleet
	name string
}

func (c *fakeCtl) Register(ctx context.Context, r fleet.Registration) (fleet.Agent, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if err := c.f.call(ctx); err != nil {
		return fleet.Agent{}, err
	}
	if r.Name != c.name {
		return fleet.Agent{}, fmt.Errorf("token of %s used by %s", c.name, r.Name)
	}
	c.f.regs[r.Name] = r
	return fleet.Agent{Registration: r, State: fleet.AgentUp}, nil
}

func (c *fakeCtl) Heartbeat(ctx context.Context, h fleet.Heartbeat) (fleet.Orders, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if err := c.f.call(ctx); err != nil {
		return fleet.Orders{}, err
	}
	c.f.beats[c.name] = append(c.f.beats[c.name], h)
	o := c.f.orders[c.name]
	o.Now = time.Now()
	if o.Interval == 0 {
		o.Interval = 50 * time.Millisecond
	}
	return o, nil
}

func (c *fakeCtl) Start(ctx context.Context, runID string) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if err := c.f.call(ctx); err != nil {
		return err
	}
	if c.f.noStart[runID] {
		return fmt.Errorf("run %s is cancelled, not scheduled: %w", runID, fleet.ErrConflict)
	}
	c.f.starts[runID]++
	return nil
}

func (c *fakeCtl) Upload(ctx context.Context, runID string, u fleet.Upload) (bool, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if err := c.f.call(ctx); err != nil {
		return false, err
	}
	if c.f.noUpload {
		c.f.refused++
		return false, errDown
	}
	if old, ok := c.f.stored[runID]; ok {
		if old.State != u.State || old.Error != u.Error || !bytes.Equal(old.Doc, u.Doc) {
			return false, fmt.Errorf("run %s: %w", runID, fleet.ErrConflict)
		}
		c.f.uploads[runID]++
		return false, nil
	}
	c.f.stored[runID] = u
	c.f.uploads[runID]++
	select {
	case c.f.uploaded <- struct{}{}:
	default:
	}
	return true, nil
}

func (c *fakeCtl) Events(ctx context.Context, runID string, es []fleet.Event) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if err := c.f.call(ctx); err != nil {
		return err
	}
	c.f.events[runID] = append(c.f.events[runID], es...)
	return nil
}

// testLog logs through t at debug level.
func testLog(t *testing.T) *slog.Logger {
	t.Helper()
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(b []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(b, "\n")))
	return len(b), nil
}

// startAgent makes and runs an agent on a loopback port until the test
// ends (or stop is called) and waits for Run to return.
func startAgent(t *testing.T, cfg Config) (*Agent, func()) {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Log == nil {
		cfg.Log = testLog(t)
	}
	if cfg.Backoff.Min == 0 {
		cfg.Backoff = Backoff{Min: 10 * time.Millisecond, Max: 100 * time.Millisecond}
	}
	cfg.EventEvery = 100 * time.Millisecond
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("agent %s: %v", cfg.Name, err)
				}
			case <-time.After(15 * time.Second):
				t.Errorf("agent %s did not stop within 15 s", cfg.Name)
			}
		})
	}
	t.Cleanup(stop)
	return a, stop
}

// spoolFiles lists a spool directory's files.
func spoolFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
