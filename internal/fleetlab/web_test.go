package fleetlab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/testkit/chrome"
)

// The mesh's colours (internal/web/static/app.css), as the browser
// computes them.
const (
	green = "rgb(46, 133, 64)"
	red   = "rgb(216, 57, 51)"
)

// TestWebInTheLab drives the controller's web page in Chromium, itself
// in the controller's site: an operator logs in with the controller's
// admin token, creates a schedule (a→b, both ways, tcp 3 s, at least
// 5 Mbit/s) in the form, watches the run's progress live, sees the
// mesh cell go from empty to green when the first run ends, raises the
// threshold past the path's 20 Mbit/s and sees it turn red, opens the
// run's report from the pair's history; then a read-only token sees the
// same schedule with no control to change it.
func TestWebInTheLab(t *testing.T) {
	f := newFixture(t)
	var reader fleet.Issued
	if err := f.fleetCLI(t, &reader, "tokens", "issue", "read"); err != nil {
		t.Fatal(err)
	}
	adminB, err := os.ReadFile(f.admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx := f.browser(t)
	shots := os.Getenv("FULLPIPE_SCREENSHOTS")
	login(t, ctx, f.url, strings.TrimSpace(string(adminB)))

	sched := createInForm(t, ctx, f.url)
	mesh := f.url + "/ui/mesh?schedule=" + sched
	if got := cellColour(t, ctx, mesh, "a", "b"); got != "" {
		t.Errorf("before any run the a→b cell is %q, want none", got)
	}
	f.watchLive(t, ctx, sched)
	runs := f.waitRuns(t, sched, 2, 90*time.Second)
	for _, r := range runs {
		if r.State != fleet.RunFinished {
			t.Fatalf("run %s→%s: %s %s", r.Source, r.Dest, r.State, r.Error)
		}
	}
	if got := cellColour(t, ctx, mesh, "a", "b"); got != green {
		t.Errorf("after the run a→b (about 18.8 Mbit/s, at least 5 wanted) is %q, want green %s", got, green)
	}
	if shots != "" {
		shotTo(t, ctx, filepath.Join(shots, "lab-mesh.png"))
	}
	// Raise the bar past the path: the same result is now an alert.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.url+"/ui/schedules/"+sched), chromedp.WaitVisible(chromedp.CSS("#thr_min_mbps")),
		setValue("thr_min_mbps", "100"), chromedp.Submit(chromedp.CSS("#thr_min_mbps")),
		chromedp.WaitVisible(chromedp.CSS(".summary")),
	); err != nil {
		t.Fatal(err)
	}
	if got := cellColour(t, ctx, mesh, "a", "b"); got != red {
		t.Errorf("with at least 100 Mbit/s wanted, a→b is %q, want red %s", got, red)
	}
	if shots != "" {
		shotTo(t, ctx, filepath.Join(shots, "lab-mesh-alert.png"))
	}
	openReport(t, ctx, f.url, shots)
	readOnly(t, ctx, f.url, reader.Secret, sched)
}

// browser starts Chromium inside the controller's site (ip netns exec
// under a wrapper; chromedp talks to it over a pipe, so no port need
// cross the namespace).
func (f *fixture) browser(t *testing.T) context.Context {
	t.Helper()
	path := chrome.Path()
	if path == "" {
		t.Fatal(chrome.ErrNoBrowser) // root runs are CI's, which installs it
	}
	wrap := filepath.Join(t.TempDir(), "chromium-in-ctl")
	script := fmt.Sprintf("#!/bin/sh\nexec ip netns exec %s %s \"$@\"\n", f.s.NetNS(0), path)
	if err := os.WriteFile(wrap, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	ctx, stop, err := chrome.Start(tctx, chrome.Options{Exec: wrap, Width: 1300, Height: 900})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return ctx
}

func login(t *testing.T, ctx context.Context, base, secret string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), secret), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("#agents")),
	); err != nil {
		t.Fatal(err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".summary")))
	if err != nil || !strings.Contains(text, "3 agents") {
		t.Errorf("the fleet page says %q (%v), want 3 agents", text, err)
	}
}

// createInForm fills the new-schedule form, first wrongly (a repeat
// that is not one: the error must show beside it), then rightly, and
// returns the new schedule's ID.
func createInForm(t *testing.T, ctx context.Context, base string) string {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/ui/schedules/new"), chromedp.WaitVisible(chromedp.CSS("#name")),
		chromedp.SendKeys(chromedp.CSS("#name"), "web lab"),
		setValue("kind", "tcp"),
		chromedp.SendKeys(chromedp.CSS("#duration"), "3s"),
		chromedp.SendKeys(chromedp.CSS("#from_agents"), "a"),
		chromedp.SendKeys(chromedp.CSS("#to_agents"), "b"),
		chromedp.SendKeys(chromedp.CSS("#repeat"), "every hour"),
		chromedp.SendKeys(chromedp.CSS("#thr_min_mbps"), "5"),
		chromedp.Submit(chromedp.CSS("#name")),
		chromedp.WaitVisible(chromedp.CSS("#repeat-err")),
	); err != nil {
		t.Fatal(err)
	}
	msg, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#repeat-err")))
	if !strings.Contains(msg, "every hour") {
		t.Errorf("the error beside repeat says %q", msg)
	}
	if err := chromedp.Do(ctx,
		setValue("repeat", ""), chromedp.Submit(chromedp.CSS("#name")),
		chromedp.WaitVisible(chromedp.CSS(".summary")),
	); err != nil {
		t.Fatal(err)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || !strings.Contains(loc, "/ui/schedules/") {
		t.Fatalf("after creating: at %q (%v)", loc, err)
	}
	return loc[strings.LastIndex(loc, "/")+1:]
}

// cellColour opens the mesh and reads the a→b cell's colour ("" when
// there is no cell).
func cellColour(t *testing.T, ctx context.Context, mesh, src, dst string) string {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(mesh), chromedp.WaitVisible(chromedp.CSS("table.mesh"))); err != nil {
		t.Fatal(err)
	}
	js := fmt.Sprintf(`(c => c ? getComputedStyle(c).backgroundColor : "")(document.querySelector('td.c[aria-label^="%s → %s:"]'))`, src, dst)
	c, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// watchLive opens the second run (b→a, which waits for a→b's slot) and
// sees its progress lines arrive while it runs, then its report.
func (f *fixture) watchLive(t *testing.T, ctx context.Context, sched string) {
	t.Helper()
	var runs []fleet.Run
	if !pollEvery(30*time.Second, time.Second, func() bool {
		return f.fleetCLI(t, &runs, "runs", "list", "--schedule", sched) == nil && len(runs) == 2
	}) {
		t.Fatalf("the schedule booked %d runs in 30 s, want 2", len(runs))
	}
	second := runs[0] // newest slot first
	if err := chromedp.Do(ctx, chromedp.Navigate(f.url+"/ui/runs/"+second.ID), chromedp.WaitVisible(chromedp.CSS("#run-state"))); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// Lines arrive by the page's own polling; at the end it reloads
	// itself and shows the report.
	if err := chromedp.Do(wctx, chromedp.WaitVisible(chromedp.CSS("#progress li")), chromedp.WaitVisible(chromedp.CSS("iframe.report"))); err != nil {
		t.Fatalf("run %s's page showed no live progress and then report within 60 s: %v", second.ID, err)
	}
	n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#progress li").length`))
	t.Logf("run %s (%s→%s): %d progress lines, then its report", second.ID, second.Source, second.Dest, n)
}

// openReport opens a→b's history from the mesh and its newest run's
// report from there.
func openReport(t *testing.T, ctx context.Context, base, shots string) {
	t.Helper()
	for _, step := range []struct {
		what string
		do   chromedp.Action[chromedp.Void]
	}{
		{"open a→b's history from its cell", chromedp.Click(chromedp.CSS(`td.c[aria-label^="a → b:"]`))},
		{"the history's charts drawn", chromedp.WaitVisible(chromedp.CSS("body[data-drawn]"))},
		{"open its newest run", chromedp.Click(chromedp.CSS(`table.list tbody a`))},
		{"the run's report", chromedp.WaitVisible(chromedp.CSS("iframe.report"))},
	} {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := chromedp.Do(sctx, step.do)
		cancel()
		if err != nil {
			loc, _ := chromedp.Run(ctx, chromedp.Location())
			t.Fatalf("%s: %v (at %s)", step.what, err, loc)
		}
	}
	if shots != "" {
		shotTo(t, ctx, filepath.Join(shots, "lab-run.png"))
	}
	src, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("iframe.report").getAttribute("src")`))
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+src), chromedp.WaitVisible(chromedp.CSS("h1"))); err != nil {
		t.Fatal(err)
	}
	body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	if !strings.Contains(body, "Mbit/s") {
		t.Errorf("the report has no throughput: %.300s", body)
	}
}

// readOnly logs out, logs in with a read token and finds no control
// that changes the schedule.
func readOnly(t *testing.T, ctx context.Context, base, secret, sched string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible(chromedp.CSS("form.who button")),
		chromedp.Click(chromedp.CSS("form.who button")), chromedp.WaitVisible(chromedp.CSS("#token"))); err != nil {
		t.Fatal(err)
	}
	login(t, ctx, base, secret)
	for _, p := range []string{"/ui/schedules", "/ui/schedules/" + sched} {
		if err := chromedp.Do(ctx, chromedp.Navigate(base+p), chromedp.WaitVisible(chromedp.CSS("main"))); err != nil {
			t.Fatal(err)
		}
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](
			`Array.from(document.querySelectorAll("main button, main a.button, main input:not([type=hidden]):not(:disabled), main select:not(:disabled), main textarea:not(:disabled)")).length`))
		if err != nil || n != 0 {
			t.Errorf("%s: a read-only token sees %d enabled controls (%v), want none", p, n, err)
		}
	}
}

func shotTo(t *testing.T, ctx context.Context, file string) {
	t.Helper()
	b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err == nil {
		err = os.WriteFile(file, b, 0o644)
	}
	if err != nil {
		t.Error(err)
	}
}

// setValue sets a form control's value, as choosing or clearing it
// would (chromedp's SetValue does not take a select).
func setValue(id, v string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[any](fmt.Sprintf(`document.getElementById(%q).value = %q`, id, v))(ctx, t)
		return err
	})
}
