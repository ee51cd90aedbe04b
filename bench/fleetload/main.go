// Command fleetload is bench/fleet.sh's load: N simulated agents (each
// a goroutine with its own agent token and client) that enrol,
// register, heartbeat and upload results into one running controller,
// timing every API call. It is a benchmark, not a test.
//
// The runs whose results the agents upload are booked straight into
// the controller's store (non-exclusive rtt runs, agent i to agent
// i+1, RUNS per agent, their slots starting now): the benchmark
// measures the API's ingestion, not the scheduler's pace. Every upload
// carries one real rtt document, measured once at start against an
// in-process responder on 127.0.0.1.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/serve"
	"github.com/fullpipe/fullpipe/internal/tester"
)

type opts struct {
	url, stateDir, dsn string
	agents, runs       int
	workers            int
	heartbeat          time.Duration
	steady             time.Duration
	timeout            time.Duration
	hostile, rounds    int // rogue agents and their rounds of attacks during the ingest
}

func main() {
	var o opts
	flag.StringVar(&o.url, "url", "", "the controller, https://127.0.0.1:PORT")
	flag.StringVar(&o.stateDir, "state-dir", "", "the controller's state directory (admin.token, tls.crt)")
	flag.StringVar(&o.dsn, "db", "", "the controller's store, to book the runs")
	flag.IntVar(&o.agents, "agents", 1000, "simulated agents")
	flag.IntVar(&o.runs, "runs", 10, "results each agent uploads")
	flag.IntVar(&o.workers, "workers", 64, "concurrent enrolments")
	flag.DurationVar(&o.heartbeat, "heartbeat", 5*time.Second, "each agent's heartbeat period")
	flag.DurationVar(&o.steady, "steady", 20*time.Second, "how long all agents heartbeat at their period before the results come")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "bound on the whole load")
	flag.IntVar(&o.hostile, "hostile", 0, "rogue agents sending issue 22's attacks while the others ingest (0: none)")
	flag.IntVar(&o.rounds, "rounds", 20, "rounds of attacks each rogue agent sends at most")
	flag.Parse()
	if o.url == "" || o.stateDir == "" || o.dsn == "" || o.agents < 2 || o.agents > 100000 || o.runs < 1 || o.runs > 1000 ||
		o.hostile < 0 || o.hostile > 100 || o.rounds < 1 || o.rounds > 1000 {
		fmt.Fprintln(os.Stderr, "usage: fleetload -url URL -state-dir DIR -db DSN [-agents 2..100000] [-runs 1..1000] [-hostile 0..100 [-rounds 1..1000]]")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	out, err := load(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleetload:", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
}

// Out is what one load measured.
type Out struct {
	Agents      int               `json:"agents"`
	EnrolS      float64           `json:"enrol_s"`    // admin enrolments of all agents
	RegisterS   float64           `json:"register_s"` // from the first register call to the last answer
	Results     int64             `json:"results"`    // stored (answered stored=true)
	IngestS     float64           `json:"ingest_s"`   // from the first upload to the last answer
	ResultsPerS float64           `json:"results_per_s"`
	Calls       int64             `json:"calls"`
	Errors      int64             `json:"errors"`
	LatencyMs   map[string]Quants `json:"latency_ms"` // per call kind, and "all"
	// Busy counts uploads answered 429 and tried again.
	Busy int64 `json:"busy"`
	// InStore counts the legitimate agents' results read back from the
	// store at the end: every stored one must be there.
	InStore int      `json:"in_store"`
	Hostile *Hostile `json:"hostile,omitempty"`
}

// Quants are a latency distribution's p50, p99 and max.
type Quants struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// timer records every call's latency by kind.
type timer struct {
	mu     sync.Mutex
	by     map[string][]time.Duration
	errors atomic.Int64
	busy   atomic.Int64 // uploads answered 429, tried again
}

func (t *timer) time(kind string, f func() error) error {
	start := time.Now()
	err := f()
	d := time.Since(start)
	t.mu.Lock()
	t.by[kind] = append(t.by[kind], d)
	t.mu.Unlock()
	if err != nil {
		t.errors.Add(1)
	}
	return err
}

// quants are each kind's latencies, and "ingest": every call of the
// ingest phase (heartbeat, start, upload) at saturation.
func (t *timer) quants() (map[string]Quants, int64) {
	out := map[string]Quants{}
	var ingest []time.Duration
	n := 0
	for k, ds := range t.by {
		out[k] = quants(ds)
		n += len(ds)
		if k == "heartbeat" || k == "start" || k == "upload" {
			ingest = append(ingest, ds...)
		}
	}
	out["ingest"] = quants(ingest)
	return out, int64(n)
}

func quants(ds []time.Duration) Quants {
	if len(ds) == 0 {
		return Quants{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	at := func(q float64) float64 { return ms(s[min(len(s)-1, int(q*float64(len(s))))]) }
	return Quants{N: len(s), P50: at(0.50), P99: at(0.99), Max: ms(s[len(s)-1])}
}

// rttDoc measures one real rtt document on loopback.
func rttDoc(ctx context.Context) (json.RawMessage, error) {
	srv, err := serve.Listen(serve.Config{Listen: "127.0.0.1:0"})
	if err != nil {
		return nil, err
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = srv.Serve(sctx) }()
	doc, err := tester.RunRTT(ctx, tester.Target{Addr: srv.Addr().String()}, result.RTTConfig{Count: 5, Interval: 10 * time.Millisecond}.WithDefaults(), nil)
	if err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}
