package web_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/testkit"
)

// TestLogin: pages need a session; a bad token, an agent's token and an
// empty one are refused with one clear line; a good one gets a cookie
// the page's script cannot read and that no other site's request
// carries; no page holds the token.
func TestLogin(t *testing.T) {
	f := newFixture(t)
	f.agents("a")
	b := f.browser()
	if a := b.get("/ui/"); a.code != http.StatusSeeOther || !strings.HasPrefix(a.h.Get("Location"), "/ui/login") {
		t.Fatalf("GET /ui/ without a session: %d %q, want a redirect to the login", a.code, a.h.Get("Location"))
	}
	for _, c := range []struct{ name, secret, want string }{
		{"unknown", "fp_nottoken", "unknown or revoked token"},
		{"empty", "", "unknown or revoked token"},
		{"agent", f.issue(fleet.RoleAgent, "a"), "an agent"},
	} {
		a := b.post("/ui/login", url.Values{"token": {c.secret}}, false)
		if a.code != http.StatusUnauthorized || !strings.Contains(a.body, c.want) {
			t.Errorf("%s token: %d, want 401 saying %q", c.name, a.code, c.want)
		}
	}
	a := b.post("/ui/login", url.Values{"token": {f.reader}, "next": {"https://evil.example/"}}, false)
	if a.code != http.StatusSeeOther || a.h.Get("Location") != "/ui/" {
		t.Fatalf("login: %d to %q, want 303 to /ui/ (an outside next refused)", a.code, a.h.Get("Location"))
	}
	ck := a.h.Get("Set-Cookie")
	for _, want := range []string{"HttpOnly", "Secure", "SameSite=Strict", "Path=/ui/"} {
		if !strings.Contains(ck, want) {
			t.Errorf("session cookie %q lacks %s", ck, want)
		}
	}
	for _, p := range []string{"/ui/", "/ui/agents/a", "/ui/mesh", "/ui/schedules"} {
		a := b.get(p)
		if a.code != 200 {
			t.Errorf("%s: %d %.200s", p, a.code, a.body)
		}
		if strings.Contains(a.body, f.reader) || strings.Contains(a.body, f.admin) {
			t.Errorf("%s holds a token's secret", p)
		}
		checkHeaders(t, p, a.h)
	}
	// Log out: the session is gone.
	if a := b.post("/ui/logout", url.Values{}, true); a.code != http.StatusSeeOther {
		t.Fatalf("logout: %d", a.code)
	}
	if a := b.get("/ui/"); a.code != http.StatusSeeOther {
		t.Errorf("after logout GET /ui/: %d, want a redirect to the login", a.code)
	}
}

// TestLoginLimit: an address that fails ten logins in a minute is
// refused even a good token until the minute passes, exactly (on the
// controller's clock, faked here), counted from its first failure.
func TestLoginLimit(t *testing.T) {
	clock := testkit.NewClock(time.Now())
	f := newFixtureAt(t, clock.Now)
	b := f.browser()
	for i := 0; i < 10; i++ {
		if c := b.login("fp_wrong"); c != http.StatusUnauthorized {
			t.Fatalf("failed login %d: %d, want 401", i+1, c)
		}
	}
	if c := b.login(f.reader); c != http.StatusTooManyRequests {
		t.Errorf("a good token after 10 failures: %d, want 429", c)
	}
	clock.Advance(time.Minute - time.Nanosecond)
	if c := b.login(f.reader); c != http.StatusTooManyRequests {
		t.Errorf("a good token 1 min − 1 ns after the first failure: %d, want 429", c)
	}
	clock.Advance(time.Nanosecond)
	if c := b.login(f.reader); c != http.StatusSeeOther {
		t.Errorf("a good token 1 min after the first failure: %d, want 303 (logged in)", c)
	}
}

// checkHeaders: the security headers every page carries.
func checkHeaders(t *testing.T, p string, h http.Header) {
	t.Helper()
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "form-action 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("%s: CSP %q lacks %q", p, csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("%s: CSP allows inline or eval: %q", p, csp)
	}
	for k, v := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
		"Referrer-Policy": "no-referrer", "Strict-Transport-Security": "max-age=31536000", "Cache-Control": "no-store"} {
		if h.Get(k) != v {
			t.Errorf("%s: %s = %q, want %q", p, k, h.Get(k), v)
		}
	}
}

// TestRevokedTokenEndsSession: a session stands on its token, checked
// at each request. A token revoked straight in the store (as another
// replica would) is still trusted from the controller's cache until 1 s
// after it was accepted, and not a nanosecond longer (on the
// controller's clock, faked here).
func TestRevokedTokenEndsSession(t *testing.T) {
	clock := testkit.NewClock(time.Now())
	f := newFixtureAt(t, clock.Now)
	b := f.browser()
	sec := f.issue(fleet.RoleRead, "")
	if b.login(sec) != http.StatusSeeOther { // the token is accepted, and cached, now
		t.Fatal("login failed")
	}
	tok, err := f.st.Authenticate(context.Background(), sec)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.st.RevokeToken(context.Background(), tok.ID); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second - time.Nanosecond)
	if code := b.get("/ui/").code; code != http.StatusOK {
		t.Errorf("1 s − 1 ns after its acceptance the revoked token's session got %d, want 200 (the token cache)", code)
	}
	clock.Advance(time.Nanosecond)
	if code := b.get("/ui/").code; code != http.StatusSeeOther {
		t.Errorf("1 s after its acceptance the revoked token's session got %d, want 303 to the login", code)
	}
}

// TestCSRF: a change needs the session's CSRF token and the page's own
// origin.
func TestCSRF(t *testing.T) {
	f := newFixture(t)
	f.agents("a", "b")
	b := f.browser()
	b.login(f.op)
	form := url.Values{"name": {"x"}, "kind": {"tcp"}, "from_agents": {"a"}, "to_agents": {"b"}, "duration": {"2s"}}
	if a := b.post("/ui/schedules", form, false); a.code != http.StatusForbidden || !strings.Contains(a.body, "CSRF") {
		t.Errorf("no CSRF token: %d %q, want 403 naming CSRF", a.code, a.body)
	}
	form.Set("csrf", b.csrf())
	req, _ := http.NewRequest("POST", f.url+"/ui/schedules", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if a := b.do(req); a.code != http.StatusForbidden {
		t.Errorf("cross-site post with the right token: %d, want 403", a.code)
	}
	big := url.Values{}
	for k, v := range form {
		big[k] = v
	}
	big.Set("config", `{"x":"`+strings.Repeat("a", 70<<10)+`"}`) // past the 64 KiB a form may be
	if a := b.post("/ui/schedules", big, false); a.code != http.StatusForbidden {
		t.Errorf("a 70 KiB form: %d, want 403 (its body is not read past 64 KiB)", a.code)
	}
	if ss, _ := f.st.Schedules(context.Background()); len(ss) != 0 {
		t.Fatalf("a refused post stored %d schedules", len(ss))
	}
	if a := b.post("/ui/schedules", form, false); a.code != http.StatusSeeOther {
		t.Errorf("same-origin post with the token: %d %s, want 303", a.code, regexp.MustCompile(`class="(err|error)"[^>]*>[^<]*`).FindAllString(a.body, -1))
	}
}

// TestReadOnly: a read token sees no edit control and cannot change
// anything by posting anyway.
func TestReadOnly(t *testing.T) {
	f := newFixture(t)
	f.agents("a", "b")
	sc, err := f.st.CreateSchedule(context.Background(), fleet.Schedule{Name: "s", Test: fleet.Test{Kind: "rtt"},
		From: fleet.Selector{Agents: []string{"a"}}, To: fleet.Selector{Agents: []string{"b"}}, Enabled: true, Created: time.Now(), Repeat: "R/PT1H", NextDue: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	b := f.browser()
	b.login(f.reader)
	for _, p := range []string{"/ui/schedules", "/ui/schedules/" + sc.ID} {
		a := b.get(p)
		for _, bad := range []string{"New schedule", ">Pause<", ">Delete<", `type="submit">Save`, `type="submit">Create`} {
			if strings.Contains(a.body, bad) {
				t.Errorf("%s shows %q to a read-only token", p, bad)
			}
		}
		if p != "/ui/schedules" && !strings.Contains(a.body, "<fieldset disabled") {
			t.Errorf("%s: the form's fields are not disabled for a read-only token", p)
		}
	}
	csrf := csrfField.FindStringSubmatch(b.get("/ui/schedules").body)[1] // the logout form's
	for _, p := range []string{"/ui/schedules/" + sc.ID + "/pause", "/ui/schedules/" + sc.ID + "/delete", "/ui/schedules"} {
		if a := b.post(p, url.Values{"csrf": {csrf}, "name": {"y"}}, false); a.code != http.StatusForbidden {
			t.Errorf("read-only POST %s: %d, want 403", p, a.code)
		}
	}
	if a := b.get("/ui/schedules/new"); a.code != http.StatusForbidden {
		t.Errorf("read-only GET new schedule: %d, want 403", a.code)
	}
	got, _ := f.st.Schedule(context.Background(), sc.ID)
	if !got.Enabled || got.Name != "s" {
		t.Errorf("the schedule changed under a read-only token: %+v", got)
	}
}

// fieldErr finds the error shown beside form field id.
func fieldErr(body, id string) string {
	m := regexp.MustCompile(`id="` + id + `-err">([^<]*)<`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestScheduleForm: each bad field is refused beside itself (the
// controller's own checks, not only the page's), the form keeps what
// was typed; a good one is created, edited, paused, resumed, deleted.
func TestScheduleForm(t *testing.T) {
	f := newFixture(t)
	f.agents("a", "b")
	b := f.browser()
	b.login(f.op)
	good := func() url.Values {
		return url.Values{"name": {"web"}, "kind": {"tcp"}, "duration": {"2s"}, "from_agents": {"a"}, "to_agents": {"b"},
			"repeat": {"R/PT1H"}, "thr_max_rtt": {"50"}}
	}
	for _, c := range []struct{ field, value, id, want string }{
		{"repeat", "every hour", "repeat", "repeat"},
		{"duration", "ten", "duration", "duration"},
		{"thr_max_loss", "150", "thr_max_loss", "0 (none) to 100"},
		{"thr_max_rtt", "-3", "thr_max_rtt", "0 (none)"},
		{"config", `{"streams": "four"}`, "config", ""},
		{"start", "tomorrow", "start", "UTC time"},
		{"slip", "48h", "slip", ""},
	} {
		form := good()
		form.Set(c.field, c.value)
		a := b.post("/ui/schedules", form, true)
		msg := fieldErr(a.body, c.id)
		if a.code != http.StatusUnprocessableEntity || msg == "" || !strings.Contains(msg, c.want) {
			t.Errorf("%s=%q: %d, error beside %s %q, want 422 and one containing %q", c.field, c.value, a.code, c.id, msg, c.want)
		}
		if !strings.Contains(a.body, `id="`+c.id+`"`) || !strings.Contains(a.body, `aria-invalid="true" aria-describedby="`+c.id+`-err"`) {
			t.Errorf("%s: the field is not marked invalid and tied to its message", c.field)
		}
		if !strings.Contains(a.body, `value="web"`) {
			t.Errorf("%s: the form lost what was typed", c.field)
		}
	}
	a := b.post("/ui/schedules", good(), true)
	if a.code != http.StatusSeeOther {
		t.Fatalf("create: %d %.400s", a.code, a.body)
	}
	id := strings.TrimPrefix(a.h.Get("Location"), "/ui/schedules/")
	sc, err := f.st.Schedule(context.Background(), id)
	if err != nil || sc.Thresholds == nil || sc.Thresholds.MaxRTTMs != 50 || sc.Repeat != "R/PT1H" || !sc.Enabled {
		t.Fatalf("created schedule %+v (%v)", sc, err)
	}
	edit := good()
	edit.Set("name", "web2")
	edit.Set("thr_max_rtt", "")
	edit.Set("thr_min_pct", "90")
	if a := b.post("/ui/schedules/"+id, edit, true); a.code != http.StatusSeeOther {
		t.Fatalf("edit: %d %.400s", a.code, a.body)
	}
	sc, _ = f.st.Schedule(context.Background(), id)
	if sc.Name != "web2" || sc.Thresholds == nil || sc.Thresholds.MinThroughputPct != 90 || sc.Thresholds.MaxRTTMs != 0 {
		t.Errorf("edited schedule %+v %+v", sc, sc.Thresholds)
	}
	b.post("/ui/schedules/"+id+"/pause", url.Values{}, true)
	if sc, _ = f.st.Schedule(context.Background(), id); sc.Enabled {
		t.Error("pause left the schedule enabled")
	}
	b.post("/ui/schedules/"+id+"/resume", url.Values{}, true)
	if sc, _ = f.st.Schedule(context.Background(), id); !sc.Enabled {
		t.Error("resume left the schedule paused")
	}
	// A one-off schedule that has run (disabled, nothing due) takes an
	// edit of its thresholds: the form keeps its start to the
	// millisecond, so nothing moves.
	once := good()
	once.Set("repeat", "")
	a = b.post("/ui/schedules", once, true)
	onceID := strings.TrimPrefix(a.h.Get("Location"), "/ui/schedules/")
	ran, _ := f.st.Schedule(context.Background(), onceID)
	if ok, err := f.st.AdvanceSchedule(context.Background(), onceID, ran.NextDue, time.Time{}, false); !ok || err != nil {
		t.Fatalf("marking the one-off run: %v %v", ok, err)
	}
	if a := b.post("/ui/schedules/"+onceID, formValues(b.get("/ui/schedules/"+onceID).body, "thr_max_rtt", "5"), true); a.code != http.StatusSeeOther {
		t.Errorf("editing a one-off that ran: %d %s", a.code, regexp.MustCompile(`class="(err|error)"[^>]*>[^<]*`).FindAllString(a.body, -1))
	}
	if got, _ := f.st.Schedule(context.Background(), onceID); got.Thresholds == nil || got.Thresholds.MaxRTTMs != 5 || !got.Start.Equal(ran.Start) {
		t.Errorf("the one-off after the edit: %+v", got)
	}
	b.post("/ui/schedules/"+id+"/delete", url.Values{}, true)
	if _, err := f.st.Schedule(context.Background(), id); err == nil {
		t.Error("delete left the schedule")
	}
}

// formValues reads the form's text fields as a page shows them, with
// one set to v (what a person editing one field posts).
func formValues(body, field, v string) url.Values {
	out := url.Values{}
	for _, m := range regexp.MustCompile(`<input id="([a-z_]+)" name="[a-z_]+" type="[a-z]+"\s+(?:step="any" min="0"\s+)?value="([^"]*)"`).FindAllStringSubmatch(body, -1) {
		out.Set(m[1], html.UnescapeString(m[2]))
	}
	if m := regexp.MustCompile(`<option value="([a-z0-9-]+)" selected>`).FindStringSubmatch(body); m != nil {
		out.Set("kind", m[1])
	}
	if m := regexp.MustCompile(`<textarea id="config"[^>]*>([^<]*)</textarea>`).FindStringSubmatch(body); m != nil {
		out.Set("config", html.UnescapeString(m[1]))
	}
	for _, m := range regexp.MustCompile(`<input type="checkbox" id="([a-z_]+)" name="[a-z_]+" value="1" checked>`).FindAllStringSubmatch(body, -1) {
		out.Set(m[1], "1")
	}
	out.Set(field, v)
	return out
}
