// Package web is the controller's web page: the fleet, the mesh of
// latest results, each pair's history, each run with its report, and
// the schedules, served under /ui/ from templates and assets embedded in
// the binary (no CDN, no fetch beyond the controller: it works offline).
//
// Pages are rendered on the server (html/template); a little JavaScript
// (static/app.js) draws the history charts with uPlot (vendored, MIT,
// 51 kB: canvas, not one DOM node per point, so a year of hourly results
// for ten pairs draws in milliseconds) and polls a running run's
// progress, and makes the mesh a keyboard grid. Every page works
// without it, save the charts and the mesh's click.
//
// Access is the fleet's: an operator logs in with an API token (read,
// operate or admin; never an agent's). The token stays on the server,
// in a session the browser holds a random cookie for; every request
// re-authenticates it, so a revoked token ends its sessions. Forms that
// change anything carry a per-session CSRF token and must come from the
// page's own origin; read-only sessions see no edit controls and are
// refused if they post anyway.
package web

import (
	"context"
	"embed"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Ops is what the page asks of the controller beyond reading the store:
// the same checks and rules the API applies. Errors that name a field
// wrap *fleet.FieldError.
type Ops interface {
	// Authenticate finds a live token by its secret
	// (fleet.ErrUnauthorized when unknown or revoked).
	Authenticate(ctx context.Context, secret string) (fleet.Token, error)
	// CreateSchedule validates s and stores it, enabled, as POST
	// /v1/schedules does.
	CreateSchedule(ctx context.Context, s fleet.Schedule) (fleet.Schedule, error)
	// UpdateSchedule validates s and replaces the stored s.ID, as PUT
	// /v1/schedules/{id} does (pause: Enabled false).
	UpdateSchedule(ctx context.Context, s fleet.Schedule) (fleet.Schedule, error)
	// DeleteSchedule removes it and cancels its runs not yet started.
	DeleteSchedule(ctx context.Context, id string) error
}

// Config is the page's: the store it reads, the controller's operations,
// its clock and when an agent counts as down.
type Config struct {
	Store     fleet.Store
	Ops       Ops
	DownAfter time.Duration
	Now       func() time.Time
	// Secure marks the session cookie Secure and sends HSTS: the
	// controller serves TLS.
	Secure bool
	Log    *slog.Logger
}

// Site serves the page.
type Site struct {
	cfg      Config
	sessions *sessions
	logins   *limiter
	pages    map[string]*page
}

// New parses the templates; it fails only on a broken build.
func New(cfg Config) (*Site, error) {
	if cfg.Store == nil || cfg.Ops == nil {
		return nil, errors.New("web: Store and Ops are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	return &Site{cfg: cfg, sessions: newSessions(), logins: newLimiter(), pages: pages}, nil
}

// Prefix is where the page lives; the controller sends "/" here.
const Prefix = "/ui/"

// Handler serves everything under Prefix.
func (s *Site) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", cacheFor(24*time.Hour, http.FileServerFS(static))))
	mux.HandleFunc("GET /ui/login", s.loginPage)
	mux.HandleFunc("POST /ui/login", s.login)
	for _, p := range s.routes() {
		mux.Handle(p.pattern, s.guard(p.need, p.h))
	}
	mux.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such page: "+r.URL.Path, http.StatusNotFound)
	})
	return headers(s.cfg.Secure, mux)
}

// route is one page or action and the role it needs.
type route struct {
	pattern string
	need    fleet.Role
	h       func(w http.ResponseWriter, r *http.Request, v *viewer) error
}

func (s *Site) routes() []route {
	return []route{
		{"POST /ui/logout", fleet.RoleRead, s.logout},
		{"GET /ui/{$}", fleet.RoleRead, s.fleetPage},
		{"GET /ui/agents/{name}", fleet.RoleRead, s.agentPage},
		{"GET /ui/mesh", fleet.RoleRead, s.meshPage},
		{"GET /ui/mesh/tips", fleet.RoleRead, s.meshTips},
		{"GET /ui/pair", fleet.RoleRead, s.pairPage},
		{"GET /ui/pair/data", fleet.RoleRead, s.pairSeries},
		{"GET /ui/pair/others", fleet.RoleRead, s.pairOthers},
		{"GET /ui/pair/run", fleet.RoleRead, s.pairRun},
		{"GET /ui/runs/{id}", fleet.RoleRead, s.runPage},
		{"GET /ui/runs/{id}/progress", fleet.RoleRead, s.runProgress},
		{"GET /ui/runs/{id}/report", fleet.RoleRead, s.runReport},
		{"GET /ui/runs/{id}/result.json", fleet.RoleRead, s.runJSON},
		{"GET /ui/schedules", fleet.RoleRead, s.schedulesPage},
		{"GET /ui/schedules/new", fleet.RoleOperate, s.newSchedulePage},
		{"POST /ui/schedules", fleet.RoleOperate, s.createSchedule},
		{"GET /ui/schedules/{id}", fleet.RoleRead, s.editSchedulePage},
		{"POST /ui/schedules/{id}", fleet.RoleOperate, s.updateSchedule},
		{"POST /ui/schedules/{id}/pause", fleet.RoleOperate, s.pauseSchedule},
		{"POST /ui/schedules/{id}/resume", fleet.RoleOperate, s.resumeSchedule},
		{"POST /ui/schedules/{id}/delete", fleet.RoleOperate, s.deleteSchedule},
	}
}

// cacheFor lets browsers keep the embedded assets a while.
func cacheFor(d time.Duration, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "private, max-age="+itoa(int(d.Seconds())))
		h.ServeHTTP(w, r)
	})
}
