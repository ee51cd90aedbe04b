package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// Sessions' bounds.
const (
	maxForm       = 64 << 10 // a posted form's body (the schedule form's config is the largest field)
	sessionCookie = "fp_session"
	sessionTTL    = 12 * time.Hour // a login lasts this long, then asks again
	maxSessions   = 10_000         // more: the oldest are dropped
	// maxTokenSessions bounds one token's logins (browsers, tabs after a
	// logout's cookie was lost): more drop its own oldest, so one token
	// logged in again and again cannot log everyone else out.
	maxTokenSessions = 16
)

// session is one login: the token it authenticates as each request
// (kept here, never sent to the browser) and its CSRF token.
type session struct {
	secret  string
	csrf    string
	expires time.Time
}

// sessions are the live logins, by cookie value; mu guards m.
type sessions struct {
	mu sync.Mutex
	m  map[string]*session
}

func newSessions() *sessions { return &sessions{m: map[string]*session{}} }

// random is n random bytes, hex.
func random(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// add starts a session for secret and returns its cookie value.
func (ss *sessions) add(secret string, now time.Time) (string, *session) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var mine []string
	for id, s := range ss.m {
		if s.secret == secret {
			mine = append(mine, id)
		}
	}
	if len(mine) >= maxTokenSessions {
		ss.dropOldest(mine, len(mine)-maxTokenSessions+1)
	}
	if len(ss.m) >= maxSessions {
		ss.sweep(now)
	}
	if len(ss.m) >= maxSessions { // still full: the oldest logins go
		ss.dropOldest(slices.Collect(maps.Keys(ss.m)), len(ss.m)-maxSessions+1)
	}
	id := random(32)
	s := &session{secret: secret, csrf: random(32), expires: now.Add(sessionTTL)}
	ss.m[id] = s
	return id, s
}

// dropOldest drops the n of ids that expire first; mu is held.
func (ss *sessions) dropOldest(ids []string, n int) {
	slices.SortFunc(ids, func(a, b string) int { return ss.m[a].expires.Compare(ss.m[b].expires) })
	for _, id := range ids[:n] {
		delete(ss.m, id)
	}
}

// sweep drops expired sessions; mu is held.
func (ss *sessions) sweep(now time.Time) {
	for id, s := range ss.m {
		if now.After(s.expires) {
			delete(ss.m, id)
		}
	}
}

func (ss *sessions) get(id string, now time.Time) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.m[id]
	if s == nil || now.After(s.expires) {
		delete(ss.m, id)
		return nil
	}
	return s
}

func (ss *sessions) drop(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.m, id)
}

// viewer is who asks for a page: their token (never its secret) and
// their session's CSRF token, for the forms.
type viewer struct {
	fleet.Token
	CSRF    string
	session string
}

// CanOperate says whether to show edit controls.
func (v *viewer) CanOperate() bool { return v.Role.Allows(fleet.RoleOperate) }

// guard authenticates the session, checks the role and, on a POST, the
// CSRF token and the origin, then runs h and writes its error.
func (s *Site) guard(need fleet.Role, h func(http.ResponseWriter, *http.Request, *viewer) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, ok := s.viewer(r)
		if !ok {
			if r.Method == http.MethodGet && !strings.HasSuffix(r.URL.Path, "/progress") {
				http.Redirect(w, r, Prefix+"login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			http.Error(w, "not logged in, or the session ended: log in again", http.StatusUnauthorized)
			return
		}
		if !v.Role.Allows(need) {
			http.Error(w, "your token's role is "+string(v.Role)+": this needs "+string(need), http.StatusForbidden)
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxForm)
			if err := checkPost(r, v); err != nil {
				http.Error(w, err.Error(), http.StatusForbidden)
				return
			}
		}
		if err := h(w, r, v); err != nil {
			s.fail(w, r, err)
		}
	})
}

// viewer is the request's logged-in viewer, if any.
func (s *Site) viewer(r *http.Request) (*viewer, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil, false
	}
	ses := s.sessions.get(c.Value, s.cfg.Now())
	if ses == nil {
		return nil, false
	}
	tok, err := s.cfg.Ops.Authenticate(r.Context(), ses.secret)
	if err != nil || tok.Role == fleet.RoleAgent {
		s.sessions.drop(c.Value)
		return nil, false
	}
	return &viewer{Token: tok, CSRF: ses.csrf, session: c.Value}, true
}

// checkPost refuses a form without the session's CSRF token, or sent
// from another origin (the browser says which in Origin or
// Sec-Fetch-Site; SameSite=Strict already keeps the cookie from
// cross-site requests).
func checkPost(r *http.Request, v *viewer) error {
	if err := sameOrigin(r); err != nil {
		return err
	}
	got := r.PostFormValue("csrf")
	if subtle.ConstantTimeCompare([]byte(got), []byte(v.CSRF)) != 1 {
		return errors.New("the form's CSRF token is missing or stale: reload the page and submit again")
	}
	return nil
}

// sameOrigin refuses a request the browser says came from elsewhere.
func sameOrigin(r *http.Request) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return errors.New("refused: the form was sent from another site (" + site + ")")
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return errors.New("refused: the form was sent from another origin (" + o + ")")
		}
	}
	return nil
}

func (s *Site) loginPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, "login", nil, loginData{Next: safeNext(r.URL.Query().Get("next"))})
}

type loginData struct {
	Next  string
	Error string
}

// login checks the token and starts a session.
func (s *Site) login(w http.ResponseWriter, r *http.Request) {
	if err := sameOrigin(r); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	if s.logins.blocked(host(r), s.cfg.Now()) {
		http.Error(w, "too many failed logins from your address: wait a minute", http.StatusTooManyRequests)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	secret := strings.TrimSpace(r.PostFormValue("token"))
	next := safeNext(r.PostFormValue("next"))
	tok, err := s.cfg.Ops.Authenticate(r.Context(), secret)
	if err != nil || secret == "" || tok.Role == fleet.RoleAgent {
		msg := "unknown or revoked token"
		if err == nil && tok.Role == fleet.RoleAgent {
			msg = "that is an agent's token: log in with an API token (read, operate or admin)"
		}
		s.logins.fail(host(r), s.cfg.Now())
		w.WriteHeader(http.StatusUnauthorized)
		s.render(w, r, "login", nil, loginData{Next: next, Error: msg})
		return
	}
	id, _ := s.sessions.add(secret, s.cfg.Now())
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: Prefix, HttpOnly: true,
		Secure: s.cfg.Secure, SameSite: http.SameSiteStrictMode, MaxAge: int(sessionTTL.Seconds())})
	s.cfg.Log.Info("web login", "token", tok.ID, "role", tok.Role)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Site) logout(w http.ResponseWriter, r *http.Request, v *viewer) error {
	s.sessions.drop(v.session)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: Prefix, HttpOnly: true,
		Secure: s.cfg.Secure, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
	return nil
}

// safeNext keeps a redirect on this site's pages.
func safeNext(n string) string {
	if !strings.HasPrefix(n, Prefix) || strings.HasPrefix(n, "//") || strings.ContainsAny(n, "\\\r\n") {
		return Prefix
	}
	return n
}

// headers sets the security headers on every answer: a strict content
// security policy (scripts and styles only from this site, no inline
// ones), no framing, no sniffing, no referrer, and HSTS under TLS.
// Reports set their own, stricter policy (runReport).
func headers(secure bool, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"connect-src 'self'; form-action 'self'; frame-src 'self'; frame-ancestors 'none'; base-uri 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cross-Origin-Opener-Policy", "same-origin")
		hd.Set("Cross-Origin-Resource-Policy", "same-origin")
		hd.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
		hd.Set("Cache-Control", "no-store")
		if secure {
			hd.Set("Strict-Transport-Security", "max-age=31536000")
		}
		h.ServeHTTP(w, r)
	})
}

func itoa(n int) string { return strconv.Itoa(n) }
