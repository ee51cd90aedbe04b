package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fullpipe/fullpipe/internal/certs"
	"github.com/fullpipe/fullpipe/internal/ctxtime"
	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/fleet/client"
	"github.com/fullpipe/fullpipe/internal/store"
)

// sim is one simulated agent.
type sim struct {
	name string
	cl   *client.Client
	done map[string]bool // runs uploaded
}

func load(ctx context.Context, o opts) (Out, error) {
	p, err := certs.PinFile(filepath.Join(o.stateDir, "tls.crt"))
	if err != nil {
		return Out{}, err
	}
	tok, err := os.ReadFile(o.stateDir + "/admin.token")
	if err != nil {
		return Out{}, err
	}
	copts := client.Options{Pin: p, Timeout: 30 * time.Second}
	admin, err := client.New(o.url, strings.TrimSpace(string(tok)), copts)
	if err != nil {
		return Out{}, err
	}
	doc, err := rttDoc(ctx)
	if err != nil {
		return Out{}, fmt.Errorf("measuring the rtt document: %w", err)
	}
	t := &timer{by: map[string][]time.Duration{}}
	out := Out{Agents: o.agents}

	start := time.Now()
	sims, err := enrol(ctx, o, admin, copts, t)
	if err != nil {
		return out, err
	}
	out.EnrolS = time.Since(start).Seconds()
	if out.RegisterS, err = register(ctx, sims, t); err != nil {
		return out, err
	}
	if err := steady(ctx, sims, o, t); err != nil {
		return out, err
	}
	if err := book(ctx, o, sims); err != nil {
		return out, fmt.Errorf("booking the runs: %w", err)
	}
	var hs []*hostile
	if o.hostile > 0 {
		if hs, err = enrolHostile(ctx, o, admin, copts, sims[0].name); err != nil {
			return out, fmt.Errorf("the hostile agents: %w", err)
		}
	}
	actx, stopAttacks := context.WithCancel(ctx)
	attacked := make(chan *Hostile, 1)
	go func() { attacked <- assault(actx, hs, doc) }()
	out.Results, out.IngestS, err = ingest(ctx, o, sims, doc, t)
	stopAttacks()
	if o.hostile > 0 {
		out.Hostile = <-attacked
	}
	if out.IngestS > 0 {
		out.ResultsPerS = float64(out.Results) / out.IngestS
	}
	out.LatencyMs, out.Calls = t.quants()
	out.Errors, out.Busy = t.errors.Load(), t.busy.Load()
	if err != nil {
		return out, err
	}
	out.InStore, err = inStore(ctx, o, sims)
	return out, err
}

// inStore counts the results of the agents' runs read back from the
// store.
func inStore(ctx context.Context, o opts, sims []*sim) (int, error) {
	st, err := store.Open(ctx, o.dsn)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	n := 0
	for _, s := range sims {
		rs, err := st.Results(ctx, fleet.ResultFilter{Source: s.name, NoDoc: true, Limit: o.runs + 1})
		if err != nil {
			return n, err
		}
		n += len(rs)
	}
	return n, nil
}

// parallel runs f(i) for i in [0, n) on w workers; the first error wins.
func parallel(n, w int, f func(i int) error) error {
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := f(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func enrol(ctx context.Context, o opts, admin *client.Client, copts client.Options, t *timer) ([]*sim, error) {
	sims := make([]*sim, o.agents)
	prefix := fmt.Sprintf("load-%d-", time.Now().UnixNano()%1e6)
	err := parallel(o.agents, o.workers, func(i int) error {
		name := fmt.Sprintf("%s%04d", prefix, i)
		var iss fleet.Issued
		err := t.time("enrol", func() (err error) { iss, err = admin.Enrol(ctx, fleet.Enrolment{Name: name}); return })
		if err != nil {
			return fmt.Errorf("enrol %s: %w", name, err)
		}
		cl, err := client.New(o.url, iss.Secret, copts)
		sims[i] = &sim{name: name, cl: cl, done: map[string]bool{}}
		return err
	})
	return sims, err
}

// register has every agent register at once (each its own goroutine,
// as 1,000 hosts coming up together would).
func register(ctx context.Context, sims []*sim, t *timer) (float64, error) {
	start := time.Now()
	err := parallel(len(sims), len(sims), func(i int) error {
		s := sims[i]
		reg := fleet.Registration{Name: s.name, Version: "load", Capabilities: []string{"rtt"}, Addresses: []string{fmt.Sprintf("127.0.0.1:%d", 10000+i)}}
		return t.time("register", func() error { _, err := s.cl.Register(ctx, reg); return err })
	})
	return time.Since(start).Seconds(), err
}

// steady has every agent heartbeat at its period, at a random phase,
// for o.steady: the load a fleet of this size puts on its controller
// all day (1,000 agents every 5 s: 200 calls/s).
func steady(ctx context.Context, sims []*sim, o opts, t *timer) error {
	end := time.Now().Add(o.steady)
	return parallel(len(sims), len(sims), func(i int) error {
		s := sims[i]
		if !ctxtime.Sleep(ctx, time.Duration(rand.Int64N(int64(o.heartbeat)))) {
			return ctx.Err()
		}
		for time.Now().Before(end) {
			next := time.Now().Add(o.heartbeat)
			if err := t.time("steady heartbeat", func() error { _, err := s.cl.Heartbeat(ctx, fleet.Heartbeat{}); return err }); err != nil {
				return fmt.Errorf("%s heartbeat: %w", s.name, err)
			}
			if !ctxtime.Sleep(ctx, time.Until(next)) {
				return ctx.Err()
			}
		}
		return nil
	})
}

// book stores each agent's runs to its neighbour, starting now.
func book(ctx context.Context, o opts, sims []*sim) error {
	st, err := store.Open(ctx, o.dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	now := time.Now().UTC()
	test := fleet.Test{Kind: "rtt"}
	return parallel(len(sims)*o.runs, 16, func(k int) error {
		i := k % len(sims)
		r := fleet.Run{Source: sims[i].name, Dest: sims[(i+1)%len(sims)].name, Test: test,
			Start: now, End: now.Add(time.Minute), State: fleet.RunScheduled, Created: now, Key: make([]byte, 32)}
		_, err := st.Book(ctx, r, now.Add(time.Hour))
		return err
	})
}

// ingest runs every agent's heartbeat loop until it has uploaded its
// runs' results: heartbeat, then for each new run start and upload.
func ingest(ctx context.Context, o opts, sims []*sim, doc []byte, t *timer) (int64, float64, error) {
	var stored atomic.Int64
	start := time.Now()
	err := parallel(len(sims), len(sims), func(i int) error {
		return sims[i].work(ctx, o, doc, t, &stored)
	})
	return stored.Load(), time.Since(start).Seconds(), err
}

func (s *sim) work(ctx context.Context, o opts, doc []byte, t *timer, stored *atomic.Int64) error {
	for len(s.done) < o.runs {
		var ord fleet.Orders
		if err := t.time("heartbeat", func() (err error) { ord, err = s.cl.Heartbeat(ctx, fleet.Heartbeat{}); return }); err != nil {
			return fmt.Errorf("%s heartbeat: %w", s.name, err)
		}
		for _, a := range ord.Runs {
			if s.done[a.ID] {
				continue
			}
			if err := t.time("start", func() error { return s.cl.Start(ctx, a.ID) }); err != nil {
				return fmt.Errorf("%s start %s: %w", s.name, a.ID, err)
			}
			ok, err := s.upload(ctx, a.ID, doc, t)
			if err != nil {
				return fmt.Errorf("%s upload %s: %w", s.name, a.ID, err)
			}
			if ok {
				stored.Add(1)
			}
			s.done[a.ID] = true
		}
		if len(s.done) < o.runs {
			if !ctxtime.Sleep(ctx, o.heartbeat) {
				return ctx.Err()
			}
		}
	}
	return nil
}

// upload uploads a finished run's doc, as the agent's uploader does: a
// 429 (the controller decoding its most uploads at once) is tried again
// after its Retry-After, 1 s, up to 60 times.
func (s *sim) upload(ctx context.Context, id string, doc []byte, t *timer) (bool, error) {
	up := fleet.Upload{State: fleet.RunFinished, Doc: doc}
	for try := 1; ; try++ {
		var ok bool
		err := t.time("upload", func() (err error) { ok, err = s.cl.Upload(ctx, id, up); return })
		if client.StatusOf(err) != http.StatusTooManyRequests || try == 60 {
			return ok, err
		}
		t.busy.Add(1)
		if !ctxtime.Sleep(ctx, time.Second) {
			return false, ctx.Err()
		}
	}
}
