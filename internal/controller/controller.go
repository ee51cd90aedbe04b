// Package controller is the fleet's controller as a library: the HTTP
// JSON API its agents and operators call (docs/openapi.yaml), over TLS,
// the scheduler that books runs (one active among replicas sharing a
// database, by lease), Prometheus metrics and the results webhook. The
// fleet's state lives in a fleet.Store; a controller holds none of its
// own beyond its TLS key and the bootstrap admin token's file.
package controller

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fullpipe/fullpipe/internal/certs"
	"github.com/fullpipe/fullpipe/internal/fleet"
)

// Config is one controller. Store, StateDir and Listen are required;
// zero durations take the defaults below.
type Config struct {
	Listen string      // host:port to serve on ("127.0.0.1:0" in tests)
	Store  fleet.Store // shared by every replica
	// StateDir keeps the self-signed certificate and the bootstrap admin
	// token's file.
	StateDir string
	// TLSCert and TLSKey are PEM files of the operator's certificate;
	// empty: a self-signed one in StateDir (made once, kept).
	TLSCert, TLSKey string
	// Names are extra DNS names or IPs for the self-signed certificate,
	// beyond the listen address, the host name and loopback.
	Names []string
	// Insecure serves plain HTTP: only for tests of last resort.
	Insecure bool
	// Webhook, when set, receives each stored result (fleet.Result as
	// JSON, POST), with retries, at least once: pending deliveries wait
	// in StateDir/outbox across restarts.
	Webhook string
	// WebhookChanges sends the webhook only the results whose health
	// changed: judged both times and different, or a first alert.
	WebhookChanges bool
	Log            *slog.Logger // nil: JSON to stderr

	HeartbeatInterval time.Duration // agents' heartbeat period (15 s)
	DownAfter         time.Duration // an agent silent this long is down (3 heartbeats)
	// Horizon bounds how far past its occurrence a run may be pushed
	// when its agents are busy (1 h); beyond, the pair's run is skipped.
	Horizon time.Duration
	// Lookahead is how far ahead of an occurrence its runs are booked
	// (4 heartbeats, at least 30 s).
	Lookahead time.Duration
	// Holder names this replica in the scheduler's lease (host name,
	// process ID and a random suffix).
	Holder string
	// LeaseTTL and LeaseRenew are the scheduler lease's life (10 s) and
	// renewal period (3 s).
	LeaseTTL, LeaseRenew time.Duration
	// DefaultRTT is a pair's round trip before any result measured it
	// (200 ms: conservative, an intercontinental path), which sizes
	// the slots of RTT-dependent tests.
	DefaultRTT time.Duration
	// MaxPairs caps the pairs whose latest figures /metrics exports
	// (1000); the rest are counted as dropped.
	MaxPairs int
	// Now is the clock (time.Now).
	Now func() time.Time

	webhookBackoff time.Duration // the webhook's first retry wait (webhookFirst); tests shorten it
}

// Defaults.
const (
	DefaultHeartbeat  = 15 * time.Second
	DefaultHorizon    = time.Hour
	DefaultLeaseTTL   = 10 * time.Second
	DefaultLeaseRenew = 3 * time.Second
	DefaultRTT        = 200 * time.Millisecond
	DefaultMaxPairs   = 1000
)

func (c Config) withDefaults() Config {
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = DefaultHeartbeat
	}
	if c.DownAfter <= 0 {
		c.DownAfter = 3 * c.HeartbeatInterval
	}
	if c.Horizon <= 0 {
		c.Horizon = DefaultHorizon
	}
	if c.Lookahead <= 0 {
		c.Lookahead = max(4*c.HeartbeatInterval, 30*time.Second)
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.LeaseRenew <= 0 {
		c.LeaseRenew = DefaultLeaseRenew
	}
	if c.DefaultRTT <= 0 {
		c.DefaultRTT = DefaultRTT
	}
	if c.MaxPairs <= 0 {
		c.MaxPairs = DefaultMaxPairs
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if c.Holder == "" {
		host, _ := os.Hostname()
		var b [4]byte
		rand.Read(b[:])
		c.Holder = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	return c
}

// Controller serves the API and runs the scheduler. New binds its
// listener; Run serves until its context ends.
type Controller struct {
	cfg     Config
	ln      net.Listener
	pin     string // hex SHA-256 of the certificate's DER; "" when insecure
	srv     *http.Server
	metrics *metrics
	hook    *webhook // nil without Config.Webhook
	sched   *scheduler
	once    sync.Once     // closes ln when Run is never called
	tokens  tokens        // accepted tokens, for tokenTTL
	uploads chan struct{} // a slot per upload being stored (maxUploads)
}

// New checks cfg, makes or loads the TLS certificate, bootstraps the
// admin token on first start and binds the listener.
func New(cfg Config) (*Controller, error) {
	if cfg.Store == nil || cfg.StateDir == "" || cfg.Listen == "" {
		return nil, errors.New("controller: Store, StateDir and Listen are required")
	}
	cfg = cfg.withDefaults()
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("controller state directory: %w", err)
	}
	c := &Controller{cfg: cfg, uploads: make(chan struct{}, maxUploads)}
	var tc *tls.Config
	if !cfg.Insecure {
		cert, err := loadCert(cfg)
		if err != nil {
			return nil, err
		}
		c.pin = certs.Pin(cert.Certificate[0])
		tc = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if err := c.bootstrap(context.Background()); err != nil {
		return nil, err
	}
	c.metrics = newMetrics(c)
	if cfg.Webhook != "" {
		var err error
		if c.hook, err = newWebhook(cfg.Webhook, cfg.StateDir, cfg.Store, cfg.Log, c.metrics); err != nil {
			return nil, err
		}
		if cfg.webhookBackoff > 0 {
			c.hook.backoff = cfg.webhookBackoff
		}
		c.hook.changesOnly = cfg.WebhookChanges
	}
	c.sched = newScheduler(c)
	site, err := c.newWeb()
	if err != nil {
		return nil, err
	}
	c.srv = &http.Server{
		Handler:           withWeb(site.Handler(), c.routes()),
		TLSConfig:         tc,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(cfg.Log.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	if tc != nil {
		ln = tls.NewListener(ln, tc)
	}
	c.ln = ln
	cfg.Log.Info("controller listening", "addr", ln.Addr().String(), "tls", !cfg.Insecure, "pin", c.pin, "holder", cfg.Holder)
	return c, nil
}

// Addr is the address the controller listens on.
func (c *Controller) Addr() net.Addr { return c.ln.Addr() }

// URL is the controller's base URL (https://addr).
func (c *Controller) URL() string {
	if c.cfg.Insecure {
		return "http://" + c.ln.Addr().String()
	}
	return "https://" + c.ln.Addr().String()
}

// Pin is the hex SHA-256 of the controller certificate's DER, what
// agents and clients pin; "" when insecure.
func (c *Controller) Pin() string { return c.pin }

// Run serves the API, runs the scheduler and the webhook until ctx
// ends, then shuts down gracefully: requests in flight get up to 10 s,
// the scheduler stops at once. It returns nil after a clean shutdown.
func (c *Controller) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { c.sched.run(ctx) })
	if c.hook != nil {
		wg.Go(func() { c.hook.run(ctx) })
	}
	errc := make(chan error, 1)
	c.once.Do(func() {
		go func() { errc <- c.srv.Serve(c.ln) }()
	})
	var err error
	select {
	case err = <-errc:
		cancel()
	case <-ctx.Done():
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = c.srv.Shutdown(sctx)
		scancel()
	}
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	c.cfg.Log.Info("controller stopped", "holder", c.cfg.Holder)
	return err
}

// Close releases the listener of a controller whose Run was never
// called.
func (c *Controller) Close() error {
	var err error
	c.once.Do(func() { err = c.ln.Close() })
	return err
}

// bootstrap issues an admin token when there is none and writes its
// secret to StateDir/admin.token (0600), logging the path.
func (c *Controller) bootstrap(ctx context.Context) error {
	ts, err := c.cfg.Store.Tokens(ctx)
	if err != nil {
		return fmt.Errorf("controller: reading tokens: %w", err)
	}
	for _, t := range ts {
		if t.Role == fleet.RoleAdmin && !t.Revoked {
			return nil
		}
	}
	t, err := c.cfg.Store.IssueToken(ctx, fleet.RoleAdmin, "", "bootstrap", c.cfg.Now())
	if err != nil {
		return fmt.Errorf("controller: issuing the bootstrap admin token: %w", err)
	}
	path := filepath.Join(c.cfg.StateDir, "admin.token")
	if err := os.WriteFile(path, []byte(t.Secret+"\n"), 0o600); err != nil {
		return fmt.Errorf("controller: writing the bootstrap admin token: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return err
	}
	c.cfg.Log.Warn("issued the bootstrap admin token: read it, then keep it safe", "path", path, "token_id", t.ID)
	return nil
}
