package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/agent"
	"github.com/fullpipe/fullpipe/internal/controller"
	"github.com/fullpipe/fullpipe/internal/store"
)

// stateDir is where a daemon keeps its state by default: systemd's
// $STATE_DIRECTORY, /var/lib/fullpipe/NAME for root, else
// $XDG_STATE_HOME/fullpipe/NAME (~/.local/state/fullpipe/NAME).
func stateDir(name string) string {
	if d := os.Getenv("STATE_DIRECTORY"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return filepath.Join("/var/lib/fullpipe", name)
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "fullpipe", name)
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "state", "fullpipe", name)
}

func controllerSpec() spec {
	return spec{
		name: "controller", usage: "[--listen HOST:PORT] [--db FILE|postgres://...] [flags]",
		summary: "run the fleet's controller: API, scheduler, store",
		long: `Runs the fleet's controller: the HTTP JSON API (docs/openapi.yaml) that
agents dial out to and operators use (` + "`fullpipe fleet`" + `), the scheduler
that books runs between agents, and the store of agents, schedules, runs
and results.

The store is SQLite in one file by default (--db FILE); --db
postgres://USER@HOST/DB uses PostgreSQL, and then any number of
controllers may share it: each serves the API, exactly one schedules at a
time (a lease in the database, taken over within seconds when its holder
dies).

Every connection is TLS: with --tls-cert and --tls-key the operator's
certificate, else a self-signed one made once in the state directory; its
SHA-256 fingerprint is logged at start, and agents and operators pass it
as --pin. On first start an admin token is written to
STATE/admin.token (mode 0600). The web page is at https://ADDR/ (log in
with an API token; docs/web.md). Metrics for Prometheus at /metrics,
health at /healthz; logs are one JSON object per line with
--log-format json.`,
		example: `  fullpipe controller                        SQLite in the state directory, port 6350, self-signed TLS
  fullpipe controller --db postgres://fullpipe@db.example.net/fullpipe --listen :443 \
      --tls-cert ctl.crt --tls-key ctl.key    one of several replicas behind one PostgreSQL
  fullpipe controller --webhook https://archive.example.net/fullpipe
                                             also POST every stored result there as JSON
  fullpipe controller --webhook https://alerts.example.net/hook --webhook-changes
                                             POST only the results whose health changed`,
		new: func() command { return &controllerArgs{} },
	}
}

type controllerArgs struct {
	cfg           controller.Config
	db, logFormat string
	names         []string
	quiet         bool
}

func (a *controllerArgs) flags(fs *pflag.FlagSet) {
	fs.Var(text(&a.cfg.Listen, ":6350", "HOST:PORT"), "listen", "address to serve the API on")
	fs.Var(text(&a.cfg.StateDir, stateDir("controller"), "DIR"), "state-dir", "keeps the self-signed certificate, the admin token and the default SQLite file")
	fs.Var(text(&a.db, "", "FILE|URL"), "db", "SQLite file (default STATE/fleet.db) or postgres://... to share with other replicas")
	fs.Var(text(&a.cfg.TLSCert, "", "FILE"), "tls-cert", "the operator's certificate (PEM); default: self-signed in the state directory")
	fs.Var(text(&a.cfg.TLSKey, "", "FILE"), "tls-key", "its private key (PEM)")
	fs.Var(texts(&a.names, "NAME|IP"), "name", "a DNS name or IP the self-signed certificate is for, beyond the listen address and the host name (repeat)")
	fs.Var(text(&a.cfg.Webhook, "", "URL"), "webhook", "POST each stored result there as JSON (retried)")
	fs.BoolVar(&a.cfg.WebhookChanges, "webhook-changes", false, "POST only results whose health changed (ok to alert, alert to ok, a first alert), by their schedules' thresholds")
	fs.Var(dur(&a.cfg.HeartbeatInterval, 15*time.Second), "heartbeat", "how often agents report; an agent silent for 3 is down")
	fs.Var(oneOf(&a.logFormat, "json", "text", "json"), "log-format", "log lines on stderr")
	fs.BoolVarP(&a.quiet, "quiet", "q", false, "log errors only")
}

func (a *controllerArgs) validate(in input) error {
	if err := checkLogFormat(a.logFormat); err != nil {
		return err
	}
	if (a.cfg.TLSCert == "") != (a.cfg.TLSKey == "") {
		return usagef("--tls-cert and --tls-key go together")
	}
	if a.cfg.WebhookChanges && a.cfg.Webhook == "" {
		return usagef("--webhook-changes needs --webhook URL")
	}
	if a.cfg.HeartbeatInterval < time.Second {
		return usagef("--heartbeat %v: want at least 1s", a.cfg.HeartbeatInterval)
	}
	if a.db == "" {
		a.db = filepath.Join(a.cfg.StateDir, "fleet.db")
	}
	a.cfg.Names = a.names
	return nil
}

func (a *controllerArgs) run(e env) error {
	a.cfg.Log = newLogger(e, a.quiet, a.logFormat)
	if !strings.Contains(a.db, "://") {
		if err := os.MkdirAll(filepath.Dir(a.db), 0o700); err != nil {
			return exitError{ExitRefused, err}
		}
	}
	st, err := store.Open(e.ctx, a.db)
	if err != nil {
		return exitError{ExitRefused, err}
	}
	defer st.Close()
	a.cfg.Store = st
	c, err := controller.New(a.cfg)
	if err != nil {
		return exitError{ExitRefused, err}
	}
	return c.Run(e.ctx)
}

func agentSpec() spec {
	return spec{
		name: "agent", usage: "--controller URL --token-file FILE [flags]",
		summary: "run a fleet agent: tests on the controller's schedule, and a responder",
		long: `Runs a fleet agent on this host. It dials out to the controller (so it
works behind NAT and firewalls), registers, and heartbeats; it runs the
tests the controller assigns it as their source, through the same methods
as the command line, and uploads each result; and it runs its own
responder (--listen) for the tests of its peers, which accepts only a
peer the controller authorised for a run's slot (a per-run key, proved
both ways).

A finished run's result is written to the spool directory before it is
uploaded and removed only once the controller has it: a controller
outage or a kill -9 loses nothing finished. Enrol the agent first
(` + "`fullpipe fleet agents enrol NAME`" + ` prints its token).`,
		example: `  fullpipe agent --controller https://ctl.example.net:6350 --pin 3f2a... --token-file /etc/fullpipe/agent.token \
      --name paris-1 --site paris --advertise 203.0.113.7:6349
                                  an agent whose peers reach its responder at 203.0.113.7:6349`,
		new: func() command { return &agentArgs{} },
	}
}

type agentArgs struct {
	conn      connArgs
	cfg       agent.Config
	labels    []string
	logFormat string
	quiet     bool
	noTLS     bool
	stamp     reflectorFlags // --stamp: a reflector for the peers' stamp tests
}

func (a *agentArgs) flags(fs *pflag.FlagSet) {
	host, _ := os.Hostname()
	a.conn.flags(fs, false)
	fs.Var(text(&a.cfg.Name, host, "NAME"), "name", "the name it was enrolled under")
	fs.Var(text(&a.cfg.Site, "", "SITE"), "site", "its site, for schedules that pick agents by site")
	fs.Var(texts(&a.labels, "KEY=VALUE"), "label", "a label KEY=VALUE, for schedules that pick agents by label (repeat)")
	fs.Var(text(&a.cfg.Listen, ":6349", "HOST:PORT"), "listen", "its responder's address")
	fs.Var(texts(&a.cfg.Addresses, "HOST:PORT"), "advertise", "HOST:PORT its peers dial (behind NAT: the forwarded address; repeat); default: --listen when it names a host")
	fs.Var(text(&a.cfg.SpoolDir, stateDir("agent"), "DIR"), "spool", "keeps finished results until the controller has them, and the responder's certificate")
	fs.Var(text(&a.cfg.STAMPKeyDir, "", "DIR"), "stamp-key-dir", "directory of STAMP HMAC keys that scheduled stamp tests name (config key: a file name here, regular, 1 KiB at most); none: authenticated stamp tests fail")
	fs.BoolVar(&a.noTLS, "no-responder-tls", false, "serve the responder's control connections without TLS (peers then rely on the per-run key alone)")
	fs.Var(oneOf(&a.logFormat, "json", "text", "json"), "log-format", "log lines on stderr")
	fs.BoolVarP(&a.quiet, "quiet", "q", false, "log errors only")
	a.stamp.besideFlags(fs)
}

func (a *agentArgs) validate(in input) error {
	if err := checkLogFormat(a.logFormat); err != nil {
		return err
	}
	if err := a.conn.resolve(); err != nil {
		return err
	}
	if a.cfg.Name == "" {
		return usagef("--name: the name the agent was enrolled under")
	}
	for _, l := range a.labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return usagef("--label %q: want KEY=VALUE", l)
		}
		if a.cfg.Labels == nil {
			a.cfg.Labels = map[string]string{}
		}
		a.cfg.Labels[k] = v
	}
	a.cfg.TLS = !a.noTLS
	if d := a.cfg.STAMPKeyDir; d != "" {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return usagef("--stamp-key-dir %q: not a directory", d)
		}
	}
	return a.stamp.checkBeside(in)
}

func (a *agentArgs) run(e env) error {
	a.cfg.Log = newLogger(e, a.quiet, a.logFormat)
	cl, err := a.conn.dial()
	if err != nil {
		return err
	}
	defer cl.Close()
	a.cfg.Controller = cl
	ag, err := agent.New(a.cfg)
	if err != nil {
		return exitError{ExitRefused, fmt.Errorf("agent: %w", err)}
	}
	x, err := a.stamp.listenBeside(a.cfg.Log)
	if err != nil {
		return err
	}
	return withReflector(e.ctx, x, ag.Run)
}

func checkLogFormat(f string) error {
	if f != "text" && f != "json" {
		return usagef("--log-format %q: want text or json", f)
	}
	return nil
}
