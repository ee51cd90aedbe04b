// Package agent is a fleet's test host. It dials out to its controller
// only (so it works behind NAT): it registers, heartbeats, runs the
// tests its orders assign it as source against other agents'
// responders, runs its own responder for the runs it is destination of
// (taking only their per-run keys, within their slots), streams each
// run's progress, and uploads every result through a spool on disk so
// that none is lost to a crash or a controller outage.
package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/fullpipe/fullpipe/internal/ctxtime"
	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/kinds"
	"github.com/fullpipe/fullpipe/internal/serve"
	"github.com/fullpipe/fullpipe/internal/version"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// Controller is the agent's side of the fleet API: *client.Client
// (package fleet/client) over HTTPS. Each call is one request; the
// agent gives each a deadline. Refusals are *client.Error with the
// HTTP status (errors wrapping fleet.ErrConflict count as 409).
type Controller interface {
	// Register says who the agent is (POST /v1/agent/register).
	Register(ctx context.Context, r fleet.Registration) (fleet.Agent, error)
	// Heartbeat reports what runs and what waits to upload, and returns
	// the orders (POST /v1/agent/heartbeat).
	Heartbeat(ctx context.Context, h fleet.Heartbeat) (fleet.Orders, error)
	// Start says a run has started (POST /v1/agent/runs/{id}/start).
	Start(ctx context.Context, runID string) error
	// Upload stores a run's result, idempotently: stored is false when
	// the same upload was stored before; a different one for the run is
	// refused, 409 (PUT /v1/agent/runs/{id}/result).
	Upload(ctx context.Context, runID string, u fleet.Upload) (stored bool, err error)
	// Events appends a run's progress (POST /v1/agent/runs/{id}/events).
	Events(ctx context.Context, runID string, es []fleet.Event) error
}

// Config is an agent's configuration. Controller, Name and SpoolDir are
// required; the other zero values work.
type Config struct {
	Controller Controller
	Name       string // as enrolled: the controller's token names it
	Site       string
	Labels     map[string]string
	// Addresses are host:port of the responder as peers dial it (behind
	// NAT: the forwarded address). Default: its listen address, when
	// that names a host.
	Addresses []string
	Listen    string // the responder's address; default ":6349"
	// TLS serves the responder's control connections over TLS with a
	// self-signed certificate kept in SpoolDir; its pin is registered
	// and peers pin it.
	TLS bool
	// Responder holds the responder's limits (MaxSessions, MaxRateBps,
	// ...); its Listen, Secret, Keys, TLS and Log are the agent's.
	Responder serve.Config
	// SpoolDir keeps the agent's state: finished runs' uploads not yet
	// acknowledged (spool/), refused ones (rejected/) and the
	// responder's certificate.
	SpoolDir string
	// STAMPKeyDir holds the HMAC keys scheduled stamp tests name (their
	// config's key: a file name in it, never a path); empty: none.
	STAMPKeyDir   string
	MaxSpoolFiles int64 // default DefaultMaxSpoolFiles: past it no run is started
	MaxSpoolBytes int64 // default DefaultMaxSpoolBytes: likewise
	Log           *slog.Logger
	Capabilities  []string // test kinds it runs; default kinds.Names()
	// Backoff paces the retries of register, heartbeat and upload.
	Backoff Backoff
	// EventEvery is how often a run's progress is sent; default 1 s.
	EventEvery time.Duration
	// MaxEvents bounds a run's progress waiting to be sent; default
	// 1000 (past it samples are dropped first, then the oldest).
	MaxEvents int
}

// Defaults.
const (
	DefaultEventEvery = time.Second
	DefaultMaxEvents  = 1000
	// DefaultInterval is the heartbeat's period when orders name none.
	DefaultInterval = 10 * time.Second
	// callTimeout bounds each call to the controller.
	callTimeout = 30 * time.Second
	// maxInterval bounds the period orders may ask for.
	maxInterval = 10 * time.Minute
)

func (c *Config) fill() error {
	switch {
	case c.Controller == nil:
		return errors.New("agent: no controller")
	case c.Name == "":
		return errors.New("agent: no name: give the name the agent was enrolled under")
	case c.SpoolDir == "":
		return errors.New("agent: no spool directory: results are kept there until the controller has them")
	}
	if c.Listen == "" {
		c.Listen = fmt.Sprintf(":%d", wire.DefaultPort)
	}
	if c.MaxSpoolFiles <= 0 {
		c.MaxSpoolFiles = DefaultMaxSpoolFiles
	}
	if c.MaxSpoolBytes <= 0 {
		c.MaxSpoolBytes = DefaultMaxSpoolBytes
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.Capabilities == nil {
		c.Capabilities = kinds.Names()
	}
	c.Backoff = c.Backoff.withDefaults()
	if c.EventEvery <= 0 {
		c.EventEvery = DefaultEventEvery
	}
	if c.MaxEvents <= 0 {
		c.MaxEvents = DefaultMaxEvents
	}
	return nil
}

// Agent is a configured agent: its responder's sockets are open, its
// spool read. Run runs it.
type Agent struct {
	cfg   Config
	log   *slog.Logger
	ctl   Controller
	srv   *serve.Server
	ring  *serve.KeyRing
	pin   string // the responder's certificate pin, when TLS
	spool *spool
	clock controllerClock
	wake  chan struct{} // nudges the uploader; capacity 1

	mu        sync.Mutex      // guards runs, ended and exclusive
	runs      map[string]*run // runs taken and not yet ended
	ended     map[string]time.Time
	exclusive int // exclusive runs executing now

	runWG sync.WaitGroup // run goroutines
}

// New checks cfg, opens the spool and the responder's sockets.
func New(cfg Config) (*Agent, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	if len(cfg.Addresses) == 0 {
		if host, _, _ := net.SplitHostPort(cfg.Listen); host == "" || net.ParseIP(host).IsUnspecified() {
			return nil, fmt.Errorf("agent: the responder listens on %s: peers need an address to dial, give Addresses (host:port)", cfg.Listen)
		}
	}
	if err := os.MkdirAll(cfg.SpoolDir, 0o700); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	sp, err := openSpool(cfg.SpoolDir, cfg.MaxSpoolFiles, cfg.MaxSpoolBytes)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	a := newAgent(cfg, sp)
	rc := cfg.Responder
	rc.Listen, rc.Secret, rc.Keys, rc.Log = cfg.Listen, nil, a.ring, a.log.With("part", "responder")
	if rc.Software == "" {
		rc.Software, rc.Kernel = version.Software(), version.Kernel()
	}
	if cfg.TLS {
		cert, err := responderCert(cfg.SpoolDir, cfg.Name)
		if err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
		rc.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
		a.pin = certPin(cert)
	}
	if a.srv, err = serve.Listen(rc); err != nil {
		return nil, fmt.Errorf("agent: responder: %w", err)
	}
	if len(a.cfg.Addresses) == 0 {
		a.cfg.Addresses = []string{a.srv.Addr().String()}
	}
	return a, nil
}

// newAgent is an agent on cfg (filled) and its spool, without its
// responder: New adds that; tests of the routines that only talk to
// the controller go without it.
func newAgent(cfg Config, sp *spool) *Agent {
	return &Agent{cfg: cfg, log: cfg.Log.With("agent", cfg.Name), ctl: cfg.Controller, ring: serve.NewKeyRing(), spool: sp,
		wake: make(chan struct{}, 1), runs: map[string]*run{}, ended: map[string]time.Time{}}
}

// Close closes the responder's sockets of an agent that will not Run
// (Run closes them itself).
func (a *Agent) Close() error { return a.srv.Close() }

// Addr is the responder's address.
func (a *Agent) Addr() *net.TCPAddr { return a.srv.Addr() }

// Pin is the responder's certificate pin (hex), "" without TLS.
func (a *Agent) Pin() string { return a.pin }

// Run runs the agent until ctx ends: the responder, the uploader (which
// first uploads whatever the spool holds), registration (retried with
// backoff while the controller is away), then heartbeats and the runs
// they order. When ctx ends, running runs stop, partial, and are
// spooled before Run returns; uploads left are sent at the next start.
// It returns an error only when the responder fails.
func (a *Agent) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	srvErr := make(chan error, 1)
	wg.Go(func() {
		err := a.srv.Serve(ctx)
		srvErr <- err
		cancel() // a responder that failed ends the agent
	})
	wg.Go(func() { a.routineUploader(ctx) })
	if a.register(ctx) {
		a.routineHeartbeat(ctx)
	}
	cancel()
	a.runWG.Wait()
	wg.Wait()
	if err := <-srvErr; err != nil {
		return fmt.Errorf("agent: responder: %w", err)
	}
	return nil
}

// registration is what the agent says of itself.
func (a *Agent) registration() fleet.Registration {
	return fleet.Registration{Name: a.cfg.Name, Site: a.cfg.Site, Labels: a.cfg.Labels, Version: version.Release,
		Capabilities: a.cfg.Capabilities, Addresses: a.cfg.Addresses, ResponderPin: a.pin}
}

// register registers with the controller, retrying with backoff until
// it answers or ctx ends (false).
func (a *Agent) register(ctx context.Context) bool {
	for fails := 0; ; {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		_, err := a.ctl.Register(cctx, a.registration())
		cancel()
		if err == nil {
			a.log.Info("registered", "addresses", a.cfg.Addresses, "pin", a.pin)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		fails++
		wait := a.cfg.Backoff.Delay(fails)
		a.log.Warn("registration failed; retrying", "err", err, "attempt", fails, "wait", wait.Round(time.Millisecond))
		if !ctxtime.Sleep(ctx, wait) {
			return false
		}
	}
}
