package web_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/controller"
	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/kinds"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/store"
)

// fixture is a controller (TLS, 127.0.0.1:0, a real SQLite store) whose
// web page the tests drive, with tokens of each role.
type fixture struct {
	t                 *testing.T
	c                 *controller.Controller
	st                fleet.Store
	url               string
	admin, op, reader string // token secrets
	agentTok          string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureAt(t, time.Now)
}

// newFixtureAt is newFixture with the controller (and its page) on the
// clock now.
func newFixtureAt(t *testing.T, now func() time.Time) *fixture {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(dir, "fleet.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c, err := controller.New(controller.Config{Listen: "127.0.0.1:0", Store: st, StateDir: dir,
		HeartbeatInterval: time.Second, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = c.Run(rctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	f := &fixture{t: t, c: c, st: st, url: c.URL()}
	b, err := os.ReadFile(filepath.Join(dir, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	f.admin = strings.TrimSpace(string(b))
	f.op = f.issue(fleet.RoleOperate, "")
	f.reader = f.issue(fleet.RoleRead, "")
	return f
}

func (f *fixture) issue(role fleet.Role, agent string) string {
	f.t.Helper()
	iss, err := f.st.IssueToken(context.Background(), role, agent, "web test", time.Now())
	if err != nil {
		f.t.Fatal(err)
	}
	return iss.Secret
}

// agents enrols and registers agents named names (site lab, label
// fleet=lab), seen now.
func (f *fixture) agents(names ...string) {
	f.t.Helper()
	ctx := context.Background()
	for _, n := range names {
		if err := f.st.Enrol(ctx, n, time.Now()); err != nil {
			f.t.Fatal(err)
		}
		reg := fleet.Registration{Name: n, Site: "lab", Labels: map[string]string{"fleet": "lab"}, Version: "test",
			Capabilities: []string{"tcp", "rfc6349"}, Addresses: []string{"198.18.0.1:6349"}}
		if _, err := f.st.Register(ctx, reg, time.Now()); err != nil {
			f.t.Fatal(err)
		}
	}
}

// doc is a stored test document of kind (internal/result/testdata).
func doc(t *testing.T, kind string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "result", "testdata", kind+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// result books a finished run src→dst of kind (schedule sched, may be
// "") ending at at, and stores doc as its result with figures fg (the
// document's own when fg is nil); it returns the run's ID.
func (f *fixture) result(sched, src, dst, kind string, at time.Time, fg *fleet.Figures, d []byte) string {
	f.t.Helper()
	ctx := context.Background()
	run, err := f.st.Book(ctx, fleet.Run{ScheduleID: sched, Source: src, Dest: dst, Test: fleet.Test{Kind: kind},
		Start: at.Add(-time.Minute), End: at, State: fleet.RunScheduled, Created: at.Add(-time.Hour)}, at.Add(time.Hour))
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.st.SetRunState(ctx, run.ID, []fleet.RunState{fleet.RunScheduled}, fleet.RunFinished, "", at); err != nil {
		f.t.Fatal(err)
	}
	var figs fleet.Figures
	if fg != nil {
		figs = *fg
	} else {
		rd, err := result.Decode(bytes.NewReader(d))
		if err != nil {
			f.t.Fatal(err)
		}
		figs = kinds.Figures(rd)
	}
	if _, err := f.st.PutResult(ctx, fleet.Result{RunID: run.ID, ScheduleID: sched, Source: src, Dest: dst, Kind: kind,
		Received: at, Figures: figs, Doc: d}); err != nil {
		f.t.Fatal(err)
	}
	return run.ID
}

// browser is an HTTP client with its own cookie jar: one person's
// browser, logged in or not.
type browser struct {
	t    *testing.T
	f    *fixture
	http *http.Client
}

func (f *fixture) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: f.t, f: f, http: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, // the controller's self-signed certificate, on loopback
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// login logs in with secret and returns the answer's status.
func (b *browser) login(secret string) int {
	b.t.Helper()
	resp := b.post("/ui/login", url.Values{"token": {secret}}, false)
	return resp.code
}

type answer struct {
	code int
	h    http.Header
	body string
}

func (b *browser) do(req *http.Request) answer {
	b.t.Helper()
	resp, err := b.http.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return answer{code: resp.StatusCode, h: resp.Header, body: string(body)}
}

func (b *browser) get(path string) answer {
	b.t.Helper()
	req, _ := http.NewRequest("GET", b.f.url+path, nil)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return b.do(req)
}

// post sends a form as the page's own would (same origin); with csrf,
// the session's token is added, read from page /ui/schedules.
func (b *browser) post(path string, form url.Values, csrf bool) answer {
	b.t.Helper()
	if csrf {
		form.Set("csrf", b.csrf())
	}
	req, _ := http.NewRequest("POST", b.f.url+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.f.url)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return b.do(req)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// csrf is the session's CSRF token as its pages carry it.
func (b *browser) csrf() string {
	b.t.Helper()
	a := b.get("/ui/schedules")
	m := csrfField.FindStringSubmatch(a.body)
	if m == nil {
		b.t.Fatalf("no CSRF token in /ui/schedules (%d): %.300s", a.code, a.body)
	}
	return m[1]
}
