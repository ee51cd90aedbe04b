package web_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/testkit/chrome"
)

// startBrowser starts headless Chromium for the test, or skips (fails
// under FULLPIPE_REQUIRE_CHROMIUM=1, as CI sets it). Console errors
// (an uncaught exception, a policy's refusal) are gathered; fail them
// with noConsoleErrors.
func startBrowser(t *testing.T, o chrome.Options) (context.Context, *console) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	bctx, stop, err := chrome.Start(ctx, o)
	if errors.Is(err, chrome.ErrNoBrowser) && os.Getenv("FULLPIPE_REQUIRE_CHROMIUM") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	c := &console{}
	msgs := chromedp.Console(bctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				c.mu.Lock()
				c.errs = append(c.errs, m.String())
				c.mu.Unlock()
			}
		}
	}()
	return bctx, c
}

type console struct {
	mu   sync.Mutex
	errs []string
}

func (c *console) check(t *testing.T, page string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.errs {
		t.Errorf("%s: console: %s", page, e)
	}
	c.errs = nil
}

// unnamed lists the page's controls and links that have no accessible
// name (no label, aria-label, aria-labelledby, text or title), images
// without one, and what else a basic check finds (no lang, not one h1).
const unnamed = `(() => {
  const out = [];
  const byId = id => (document.getElementById(id) || {}).textContent || "";
  const name = el => {
    if ((el.getAttribute("aria-label") || "").trim()) return true;
    const lb = el.getAttribute("aria-labelledby");
    if (lb && lb.split(/\s+/).map(byId).join("").trim()) return true;
    if (el.id && document.querySelector('label[for="' + CSS.escape(el.id) + '"]')) return true;
    if (el.closest("label")) return true;
    if (["A", "BUTTON", "SUMMARY"].includes(el.tagName) && el.textContent.trim()) return true;
    return !!(el.getAttribute("title") || "").trim();
  };
  document.querySelectorAll('a[href], button, input:not([type=hidden]), select, textarea, [role=img], iframe, meter, [tabindex]:not(main)').forEach(el => {
    if (el.tagName === "IFRAME") { if (!el.title) out.push("iframe without title"); return; }
    if (!name(el)) out.push(el.outerHTML.slice(0, 140));
  });
  if (!document.documentElement.lang) out.push("html without lang");
  if (document.querySelectorAll("h1").length !== 1) out.push(document.querySelectorAll("h1").length + " h1 elements");
  return out;
})()`

// checkPage opens path, waits for sel, and checks names and the console.
func checkPage(t *testing.T, ctx context.Context, c *console, base, path, sel string) {
	t.Helper()
	var bad []string
	err := chromedp.Do(ctx, chromedp.Navigate(base+path), chromedp.WaitVisible(chromedp.CSS(sel)))
	if err == nil {
		bad, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](unnamed))
	}
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, b := range bad {
		t.Errorf("%s: no accessible name: %s", path, b)
	}
	c.check(t, path)
}

// TestBrowser logs in through the form in Chromium, opens every page,
// and checks that each control has a name, that the console stays
// clean (the CSP refuses nothing the page needs), that the charts draw
// and that the keyboard reaches every control of the schedule form in
// order. With FULLPIPE_SCREENSHOTS=DIR it saves the pages there (the
// README's come from docs/screenshots).
func TestBrowser(t *testing.T) {
	f := newFixture(t)
	names := []string{"ams-1", "fra-1", "lon-1", "nyc-1", "par-1", "sin-1"}
	f.agents(names...)
	sc := f.seedMesh(names)
	ctx, c := startBrowser(t, chrome.Options{Width: 1400, Height: 900})
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.url+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), f.op),
		chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("#agents")),
	); err != nil {
		t.Fatal(err)
	}
	shots := os.Getenv("FULLPIPE_SCREENSHOTS")
	run := f.latestRun(t, sc)
	pages := []struct{ name, path, sel string }{
		{"fleet", "/ui/", "#agents"},
		{"agent", "/ui/agents/ams-1", "dl.facts"},
		{"mesh", "/ui/mesh?schedule=" + sc, "table.mesh"},
		{"pair", "/ui/pair?pair=ams-1:fra-1&pair=lon-1:fra-1&range=30d", "body[data-drawn]"},
		{"pair-one", "/ui/pair?pair=ams-1:fra-1&range=6h", "body[data-drawn]"},   // one point
		{"pair-none", "/ui/pair?pair=ams-1:nobody&range=6h", "body[data-drawn]"}, // none
		{"run", "/ui/runs/" + run, "iframe.report"},
		{"schedules", "/ui/schedules", "#schedules"},
		{"schedule", "/ui/schedules/" + sc, "form.schedule"},
	}
	for _, p := range pages {
		checkPage(t, ctx, c, f.url, p.path, p.sel)
		if shots != "" {
			shot(t, ctx, filepath.Join(shots, p.name+".png"))
		}
	}
	keyboard(t, ctx, f.url)
	meshKeys(t, ctx, f.url, sc)
}

// active describes the focused element: a cell's label, else its id or
// text.
const active = `(e => e.getAttribute("aria-label") || e.id || e.tagName + ":" + e.textContent.trim())(document.activeElement)`

// meshKeys: the grid is one Tab stop, the arrows move in it, the
// focused cell's numbers show, Enter opens its pair, and the next Tab
// leaves the grid.
func meshKeys(t *testing.T, ctx context.Context, base, sc string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/ui/mesh?schedule="+sc), chromedp.WaitVisible(chromedp.CSS("table.mesh"))); err != nil {
		t.Fatal(err)
	}
	press := func(key string) string {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.KeyEvent(key)); err != nil {
			t.Fatal(err)
		}
		a, err := chromedp.Run(ctx, chromedp.Evaluate[string](active))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	var at string
	for i := 0; i < 30 && !strings.Contains(at, "→"); i++ {
		at = press("\t")
	}
	if !strings.HasPrefix(at, "ams-1 → fra-1: ") {
		t.Fatalf("Tab into the grid reached %q, want its first result, ams-1 → fra-1", at)
	}
	if at = press(kb.ArrowDown); at != "TD:" {
		t.Errorf("ArrowDown from ams-1 → fra-1 reached %q, want the empty fra-1 → fra-1", at)
	}
	if at = press(kb.ArrowDown); !strings.HasPrefix(at, "lon-1 → fra-1: ") {
		t.Errorf("ArrowDown again reached %q, want lon-1 → fra-1", at)
	}
	tipCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := chromedp.Do(tipCtx, chromedp.WaitVisible(chromedp.CSS("#tip"))); err != nil {
		t.Errorf("no tooltip for the focused cell: %v", err)
	} else if tip, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#tip"))); !strings.Contains(tip, "Mbit/s") {
		t.Errorf("the tooltip says %q, want the numbers", tip)
	}
	if dir := os.Getenv("FULLPIPE_SCREENSHOTS"); dir != "" {
		shot(t, ctx, filepath.Join(dir, "mesh-focus.png"))
	}
	if at = press(kb.End); !strings.HasPrefix(at, "lon-1 → sin-1: ") {
		t.Errorf("End reached %q, want lon-1 → sin-1", at)
	}
	press("\t")
	if tag, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.tagName`)); tag == "TD" {
		t.Error("Tab from the grid stayed in it, want out of it")
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent("\t", chromedp.KeyModifiers(chromedp.ModifierShift))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS("body[data-drawn]"))); err != nil {
		t.Fatal(err)
	}
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); !strings.Contains(loc, "pair=lon-1%3Asin-1") {
		t.Errorf("Enter on lon-1 → sin-1 opened %s", loc)
	}
}

// keyboard tabs through the new-schedule form from the page's top: the
// skip link first, then every field in the order it is drawn.
func keyboard(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/ui/schedules/new"), chromedp.WaitVisible(chromedp.CSS("form.schedule"))); err != nil {
		t.Fatal(err)
	}
	want, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll("form.schedule input:not([type=hidden]), form.schedule select, form.schedule textarea, form.schedule button")).map(e => e.id || e.textContent.trim())`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := 0; i < 60; i++ {
		if err := chromedp.Do(ctx, chromedp.KeyEvent("\t")); err != nil {
			t.Fatal(err)
		}
		id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(e => e.id || e.textContent.trim())(document.activeElement)`))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	if got[0] != "Skip to content" {
		t.Errorf("the first Tab reaches %q, want the skip link", got[0])
	}
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	if i < len(want) {
		t.Errorf("Tab reached the form's controls only up to %d of %d (%v); the order was %v", i, len(want), want, got)
	}
}

func shot(t *testing.T, ctx context.Context, file string) {
	t.Helper()
	b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// seedMesh makes a schedule over names (both ways, thresholds: 80 % of
// ideal, RTT loaded under 60 ms) and a month of six-hourly results for
// each pair, a few of them over the limits; it returns the schedule.
func (f *fixture) seedMesh(names []string) string {
	f.t.Helper()
	ctx := context.Background()
	sc, err := f.st.CreateSchedule(ctx, fleet.Schedule{Name: "mesh every 6 h", Test: fleet.Test{Kind: "rfc6349"}, Both: true,
		From: fleet.Selector{Labels: map[string]string{"fleet": "lab"}}, To: fleet.Selector{Labels: map[string]string{"fleet": "lab"}},
		Enabled: true, Created: time.Now(), Repeat: "R/PT6H", NextDue: time.Now().Add(time.Hour), Thresholds: &fleet.Thresholds{MinThroughputPct: 80, MaxRTTLoadedMs: 60}})
	if err != nil {
		f.t.Fatal(err)
	}
	d := doc(f.t, "rfc6349")
	now := time.Now().Add(-time.Minute)
	for i, a := range names {
		for j, b := range names {
			if a == b {
				continue
			}
			ideal := float64(20+10*((i+j)%5)) * 1e6
			for k := 0; k < 30*4; k += 1 + (i+j)%3*5 {
				at := now.Add(-time.Duration(k) * 6 * time.Hour)
				share := 0.97 - 0.02*float64((k+i)%4)
				if (i*7+j*3+k)%11 == 0 {
					share = 0.6 // a policer's bad day
				}
				down := share - 0.01
				if (i+2*j)%5 == 1 {
					down = 0.55 // a slow way back
				}
				rtt := float64(5 + 3*i + 2*j)
				fg := fleet.Figures{ThroughputBps: ideal * share, IdealBps: ideal, RTTMs: rtt, RTTLoadedMs: rtt * (1.2 + 0.1*float64(k%5)),
					BufferDelayPct: 20 + 10*float64(k%5), LossPct: 0.01 * float64(k%3), Verdict: "pass",
					DownThroughputBps: ideal * down, DownRTTLoadedMs: rtt * 1.3, DownBufferDelayPct: 30}
				if share < 0.8 {
					fg.Verdict = "fail"
				}
				f.result(sc.ID, a, b, "rfc6349", at, &fg, d)
			}
		}
	}
	return sc.ID
}

// latestRun is a finished run of schedule sc.
func (f *fixture) latestRun(t *testing.T, sc string) string {
	t.Helper()
	rs, err := f.st.Runs(context.Background(), fleet.RunFilter{Schedule: sc, Limit: 1})
	if err != nil || len(rs) == 0 {
		t.Fatalf("no run of %s: %v", sc, err)
	}
	return rs[0].ID
}
