// Command webrender measures how fast the controller's web page renders
// its two heaviest pages in headless Chromium: the mesh of AGENTS ×
// AGENTS (default 100 × 100: 9,900 pairs, each with a result measured
// both ways) and the history of PAIRS pairs overlaid (default 10) with a
// result every hour for a year (87,600 points). It seeds a fresh SQLite
// store, runs a controller on 127.0.0.1 in this process, and opens each
// page RUNS times in one browser, printing per page the median and the
// worst of: the server's time to the first byte, the page's size, and
// the time from navigation to the first frame drawn after the page (and
// for the history its charts) is complete. The target (issue 12) is
// under 1 s for both.
//
// Usage: go run ./bench/webrender [-agents 100] [-pairs 10] [-hours 8760] [-runs 5] [-db FILE]
// (-db keeps the seeded store to run again without seeding).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fullpipe/fullpipe/internal/controller"
	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/store"
	"github.com/fullpipe/fullpipe/internal/testkit/chrome"
)

func main() {
	agents := flag.Int("agents", 100, "agents: the mesh is this many squared, less the diagonal")
	pairs := flag.Int("pairs", 10, "pairs overlaid in the history")
	hours := flag.Int("hours", 8760, "hourly results per history pair (8,760: a year)")
	runs := flag.Int("runs", 5, "times each page is opened")
	dbFile := flag.String("db", "", "store file to keep (seeded only when it does not exist)")
	flag.Parse()
	if *agents < 2 || *agents > 1000 || *pairs < 1 || *pairs > 10 || *pairs > *agents-1 || *hours < 1 || *hours > 10_000 || *runs < 1 || *runs > 100 {
		fmt.Fprintln(os.Stderr, "webrender: -agents 2–1000, -pairs 1–10 (and below agents), -hours 1–10000, -runs 1–100")
		os.Exit(2)
	}
	if err := run(*agents, *pairs, *hours, *runs, *dbFile); err != nil {
		fmt.Fprintln(os.Stderr, "webrender:", err)
		os.Exit(1)
	}
}

func run(agents, pairs, hours, runs int, dbFile string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "webrender")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if dbFile == "" {
		dbFile = filepath.Join(dir, "fleet.db")
	}
	_, statErr := os.Stat(dbFile)
	st, err := store.Open(ctx, dbFile)
	if err != nil {
		return err
	}
	defer st.Close()
	names := agentNames(agents)
	if statErr != nil {
		t0 := time.Now()
		if err := seed(ctx, st, names, pairs, hours); err != nil {
			return err
		}
		fmt.Printf("seeded %d agents, %d mesh results, %d history results in %.1f s\n", agents, agents*(agents-1), pairs*hours, time.Since(t0).Seconds())
	}
	c, err := controller.New(controller.Config{Listen: "127.0.0.1:0", Store: st, StateDir: dir, HeartbeatInterval: time.Hour,
		DownAfter: 1000 * time.Hour, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	go c.Run(ctx)
	tok, err := st.IssueToken(ctx, fleet.RoleRead, "", "webrender", time.Now())
	if err != nil {
		return err
	}
	bctx, stop, err := chrome.Start(ctx, chrome.Options{Width: 1400, Height: 1000})
	if err != nil {
		return err
	}
	defer stop()
	if err := chromedp.Do(bctx, chromedp.Navigate(c.URL()+"/ui/login"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), tok.Secret), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("#agents"))); err != nil {
		return fmt.Errorf("login: %w", err)
	}
	hist := "/ui/pair?range=1y&kind=rfc6349"
	for i := 1; i <= pairs; i++ {
		hist += "&pair=" + names[0] + ":" + names[i]
	}
	fmt.Printf("%-40s %8s %8s %10s %10s %8s\n", "page", "TTFB p50", "max", "drawn p50", "drawn max", "size")
	for _, p := range []struct{ label, path, ready string }{
		{fmt.Sprintf("mesh %d×%d", agents, agents), "/ui/mesh?kind=rfc6349", "table.mesh"},
		{fmt.Sprintf("history %d pairs × %d h", pairs, hours), hist, "body[data-drawn]"},
	} {
		if err := measure(bctx, c.URL(), p.label, p.path, p.ready, runs); err != nil {
			return err
		}
	}
	return nil
}

// timing is one page load as the browser saw it (ms from navigation).
type timing struct {
	TTFB     float64 `json:"ttfb"`     // the server's first byte
	Received float64 `json:"received"` // its last
	Parsed   float64 `json:"parsed"`   // the document parsed (domInteractive)
	Scripted float64 `json:"scripted"` // its scripts run (DOMContentLoaded's end): the charts drawn into their canvas
	Drawn    float64 `json:"drawn"`    // the first frame after all of it
	Bytes    float64 `json:"bytes"`
	Marks    string  `json:"marks"` // the page's own marks (pair.js: parse, parsed, joined, charts-drawn)
}

// drawn waits two frames after the page is complete (the second frame
// begins once the first, with everything laid out, was drawn) and reads
// the navigation's timing.
const drawn = `new Promise(res => requestAnimationFrame(() => requestAnimationFrame(() => {
  const n = performance.getEntriesByType("navigation")[0];
  res({ttfb: n.responseStart, received: n.responseEnd, parsed: n.domInteractive, scripted: n.domContentLoadedEventEnd,
       drawn: performance.now(), bytes: n.decodedBodySize,
       marks: performance.getEntriesByType("mark").map(m => m.name.replace("fullpipe-", "") + " " + Math.round(m.startTime) + " ms").join(", ")});
})))`

func measure(ctx context.Context, base, label, path, ready string, runs int) error {
	var ts []timing
	for range runs {
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
			return err
		}
		if err := chromedp.Do(ctx, chromedp.Navigate(base+path), chromedp.WaitReady(chromedp.CSS(ready))); err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		t, err := chromedp.Run(ctx, chromedp.Evaluate[timing](drawn, chromedp.EvalAwaitPromise))
		if err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		ts = append(ts, t)
	}
	med := func(f func(timing) float64) (float64, float64) {
		v := make([]float64, len(ts))
		for i, t := range ts {
			v[i] = f(t)
		}
		slices.Sort(v)
		return v[len(v)/2], v[len(v)-1]
	}
	t50, tmax := med(func(t timing) float64 { return t.TTFB })
	d50, dmax := med(func(t timing) float64 { return t.Drawn })
	r50, _ := med(func(t timing) float64 { return t.Received })
	p50, _ := med(func(t timing) float64 { return t.Parsed })
	s50, _ := med(func(t timing) float64 { return t.Scripted })
	fmt.Printf("%-40s %6.0f ms %5.0f ms %7.0f ms %7.0f ms %6.2f MB\n", label, t50, tmax, d50, dmax, ts[0].Bytes/1e6)
	fmt.Printf("  p50 from navigation: first byte %.0f ms, last byte %.0f ms, parsed %.0f ms, scripts run %.0f ms, drawn %.0f ms\n", t50, r50, p50, s50, d50)
	if m := ts[len(ts)-1].Marks; m != "" {
		fmt.Printf("  the page's marks (last run): %s\n", m)
	}
	if dmax >= 1000 {
		fmt.Printf("  over the 1 s target\n")
	}
	return nil
}

func agentNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("agent-%03d", i)
	}
	return out
}

// seed enrols and registers the agents, stores one result for every
// ordered pair (measured both ways) and a result every hour for hours
// for the history's pairs (agent 0 to agents 1..pairs).
func seed(ctx context.Context, st fleet.Store, names []string, pairs, hours int) error {
	now := time.Now()
	for _, n := range names {
		if err := st.Enrol(ctx, n, now); err != nil {
			return err
		}
		if _, err := st.Register(ctx, fleet.Registration{Name: n, Site: "s" + n[len(n)-1:], Version: "bench", Capabilities: []string{"rfc6349"}, Addresses: []string{"198.18.0.1:6349"}}, now); err != nil {
			return err
		}
	}
	rng := rand.New(rand.NewPCG(12, 0))
	doc := json.RawMessage(`{"schema":1,"test":"rfc6349"}`) // the pages read figures only
	put := func(src, dst string, at time.Time, i int) error {
		ideal := 100e6
		f := fleet.Figures{IdealBps: ideal, ThroughputBps: ideal * (0.6 + 0.4*rng.Float64()), RTTMs: 5 + 50*rng.Float64(),
			LossPct: rng.Float64(), BufferDelayPct: 100 * rng.Float64(), DownThroughputBps: ideal * (0.6 + 0.4*rng.Float64()), Verdict: "pass"}
		f.RTTLoadedMs = f.RTTMs * (1 + f.BufferDelayPct/100)
		h := fleet.HealthOK
		if f.ThroughputBps < 0.8*ideal {
			h = fleet.HealthAlert
		}
		_, err := st.PutResult(ctx, fleet.Result{RunID: fmt.Sprintf("r%s%s%06d", src, dst, i), Source: src, Dest: dst, Kind: "rfc6349",
			Received: at, Figures: f, Health: h, Doc: doc})
		return err
	}
	for _, a := range names {
		for _, b := range names {
			if a != b {
				if err := put(a, b, now.Add(-time.Minute), 0); err != nil {
					return err
				}
			}
		}
	}
	for p := 1; p <= pairs; p++ {
		for h := 1; h <= hours; h++ {
			if err := put(names[0], names[p], now.Add(-time.Duration(h)*time.Hour), h); err != nil {
				return err
			}
		}
	}
	return nil
}
