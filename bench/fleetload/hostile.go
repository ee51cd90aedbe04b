package main

// The hostile agents of bench/soak.sh's fleet part (issue 22): agents
// whose tokens are stolen or whose code is wrong, sending the issue's
// attacks over and over while the legitimate agents ingest, each attack
// counted by the controller's answer.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/fullpipe/fullpipe/internal/controller"
	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/fleet/client"
	"github.com/fullpipe/fullpipe/internal/fleet/fleettest"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/store"
)

// attack is one hostile call and the answer the controller owes it.
type attack struct {
	name string
	want int // HTTP status
	call func(ctx context.Context, h *hostile, run string) error
}

// hostile is one rogue agent: its client, the runs booked for it (one
// per round), and a run cancelled before it started.
type hostile struct {
	name      string
	cl        *client.Client
	runs      []string
	cancelled string
}

// Hostile tallies each attack's answers: as owed, 429 (the controller's
// limit on uploads at once, owed to anyone then), and otherwise (the
// first few answers not owed, in words).
type Hostile struct {
	Agents  int                       `json:"agents"`
	Rounds  int                       `json:"rounds"`
	Answers map[string]map[string]int `json:"answers"` // attack → "as owed" / "busy" / "other" → count
	Other   []string                  `json:"other,omitempty"`
	mu      sync.Mutex
}

func (h *Hostile) count(a attack, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	got := 200
	if err != nil {
		got = client.StatusOf(err)
	}
	m := h.Answers[a.name]
	if m == nil {
		m = map[string]int{}
		h.Answers[a.name] = m
	}
	switch got {
	case a.want:
		m["as owed"]++
		return
	case http.StatusTooManyRequests: // the uploads' limit: an answer owed to anyone at the time
		m["busy"]++
		return
	}
	m["other"]++
	if len(h.Other) < 10 {
		h.Other = append(h.Other, fmt.Sprintf("%s: %d (%v), owed %d", a.name, got, err, a.want))
	}
}

// eventBatch is how many events one call carries, up to a run's cap
// (controller.MaxRunEvents).
const eventBatch = 2_500

// attacks are the issue's, in the order each round sends them.
func attacks(doc []byte) []attack {
	forged := forgedRTT(doc)
	huge := fleettest.EmptyStreams(15 << 20)
	ids := make([]string, 257)
	for i := range ids {
		ids[i] = fmt.Sprintf("%032x", i)
	}
	up := func(d []byte) fleet.Upload { return fleet.Upload{State: fleet.RunFinished, Doc: d} }
	return []attack{
		{"15 MiB of empty streams", 413, func(ctx context.Context, h *hostile, run string) error {
			_, err := h.cl.Upload(ctx, run, up(huge))
			return err
		}},
		{"events past the run's cap", 413, func(ctx context.Context, h *hostile, run string) error {
			for from := 1; from <= controller.MaxRunEvents; from += eventBatch {
				if err := h.cl.Events(ctx, run, fleettest.LineEvents(time.Now().UTC(), from, eventBatch)); err != nil {
					return fmt.Errorf("within the cap: %w", err)
				}
			}
			return h.cl.Events(ctx, run, fleettest.LineEvents(time.Now().UTC(), controller.MaxRunEvents+1, 1))
		}},
		{"an RTT of 11.6 days (stored, marked)", 200, func(ctx context.Context, h *hostile, run string) error {
			_, err := h.cl.Upload(ctx, run, up(forged))
			return err
		}},
		{"a result for a cancelled run", 409, func(ctx context.Context, h *hostile, _ string) error {
			_, err := h.cl.Upload(ctx, h.cancelled, up(doc))
			return err
		}},
		{"a heartbeat naming 257 runs", 400, func(ctx context.Context, h *hostile, _ string) error {
			_, err := h.cl.Heartbeat(ctx, fleet.Heartbeat{Running: ids})
			return err
		}},
		{"the metadata service's address", 400, func(ctx context.Context, h *hostile, _ string) error {
			_, err := h.cl.Register(ctx, fleet.Registration{Name: h.name, Version: "hostile", Capabilities: []string{"rtt"}, Addresses: []string{"169.254.169.254:80"}})
			return err
		}},
		{"approving itself", 403, func(ctx context.Context, h *hostile, _ string) error {
			_, err := h.cl.ApproveAgent(ctx, h.name)
			return err
		}},
	}
}

// enrolHostile enrols n rogue agents, books rounds runs for each (to the
// first legitimate agent) and one more that the admin cancels.
func enrolHostile(ctx context.Context, o opts, admin *client.Client, copts client.Options, dest string) ([]*hostile, error) {
	st, err := store.Open(ctx, o.dsn)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var hs []*hostile
	now := time.Now().UTC()
	for i := range o.hostile {
		h := &hostile{name: fmt.Sprintf("hostile-%d-%d", now.UnixNano()%1e6, i)}
		iss, err := admin.Enrol(ctx, fleet.Enrolment{Name: h.name})
		if err != nil {
			return nil, fmt.Errorf("enrol %s: %w", h.name, err)
		}
		if h.cl, err = client.New(o.url, iss.Secret, copts); err != nil {
			return nil, err
		}
		if _, err := h.cl.Register(ctx, fleet.Registration{Name: h.name, Version: "hostile", Capabilities: []string{"rtt"}, Addresses: []string{"127.0.0.1:9"}}); err != nil {
			return nil, fmt.Errorf("register %s: %w", h.name, err)
		}
		for r := range o.rounds + 1 {
			run, err := st.Book(ctx, fleet.Run{Source: h.name, Dest: dest, Test: fleet.Test{Kind: "rtt"},
				Start: now, End: now.Add(time.Hour), State: fleet.RunScheduled, Created: now, Key: make([]byte, 32)}, now.Add(2*time.Hour))
			if err != nil {
				return nil, fmt.Errorf("booking %s's run: %w", h.name, err)
			}
			if r == o.rounds {
				if _, err := admin.CancelRun(ctx, run.ID); err != nil {
					return nil, err
				}
				h.cancelled = run.ID
				continue
			}
			h.runs = append(h.runs, run.ID)
		}
		hs = append(hs, h)
	}
	return hs, nil
}

// assault runs every hostile agent's rounds until they are done or ctx
// ends (the legitimate agents finished).
func assault(ctx context.Context, hs []*hostile, doc []byte) *Hostile {
	out := &Hostile{Agents: len(hs), Answers: map[string]map[string]int{}}
	as := attacks(doc)
	var wg sync.WaitGroup
	for _, h := range hs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r, run := range h.runs {
				for _, a := range as {
					if ctx.Err() != nil {
						return
					}
					err := a.call(ctx, h, run)
					if ctx.Err() != nil {
						return // cut short when the legitimate agents were done: not an answer
					}
					out.count(a, err)
				}
				out.mu.Lock()
				out.Rounds = max(out.Rounds, r+1)
				out.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

// forgedRTT is doc (an rtt document) with a minimum RTT of 10^12 µs.
func forgedRTT(doc []byte) []byte {
	var d result.RTT
	if err := json.Unmarshal(doc, &d); err != nil {
		panic(err) // doc is the one this program measured
	}
	d.Summary.MinUs = 1e12
	b, _ := json.Marshal(d)
	return b
}
