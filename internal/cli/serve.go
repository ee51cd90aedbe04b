package cli

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/serve"
	"github.com/fullpipe/fullpipe/internal/units"
	"github.com/fullpipe/fullpipe/internal/version"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// publicPreset is what --public sets, flag by flag, unless the flag is
// given too: limits for a responder on a public address, fixed and
// announced like M-Lab ndt-server's.
var publicPreset = [][2]string{
	{"max-duration", "30s"},           // a test, not a load generator
	{"max-streams", "8"},              // per direction
	{"max-sessions-per-addr", "2"},    // a sweep: an rtt session beside its tcp test
	{"max-conns-per-addr", "24"},      // one test's 2 × 8 streams + 8
	{"max-rate", "1G"},                // in total, over all sessions
	{"max-write-size", "1MiB"},        // per write call, per stream
	{"max-probe-rate", "100"},         // echo replies per second of a test
	{"max-train-bytes", "4MiB"},       // one packet train (a burst at the sender's full rate)
	{"allow-dscp", "0,8,10,18,26,34"}, // best effort, CS1, AF11, AF21, AF31, AF41
}

// presetHelp lists the preset for the help text, wrapped at 72 columns.
func presetHelp() string {
	var b strings.Builder
	col := 0
	for i, p := range publicPreset {
		item := fmt.Sprintf("--%s %s", p[0], p[1])
		if i < len(publicPreset)-1 {
			item += ","
		} else {
			item += "."
		}
		if col+1+len(item) > 72 {
			b.WriteString("\n")
			col = 0
		} else if i > 0 {
			b.WriteString(" ")
			col++
		}
		b.WriteString(item)
		col += len(item)
	}
	return b.String()
}

// serveLong is serve's help; presetHelp follows it.
const serveLong = `Runs the fullpipe responder. It listens on one port for TCP (control and
data connections) and UDP (RTT probes and UDP streams), default 6349.

It serves many clients at once: each test is its own session, with its own
streams, until a limit below refuses new ones with a message to the client
(a busy answer says when to retry). With --secret-file, a client must
prove it knows the secret and the responder proves it back (HMAC over
both sides' random nonces and the request; the secret never crosses the
network) before any data flows; an address that fails 5 times waits 12 s
per further try. With --tls-cert and --tls-key, control connections are
TLS 1.3 (data connections stay plain TCP: they carry only test payload).
Nothing about the host (software, kernel) is sent before a client is
authenticated.

Limits that hold on a public address: connections are capped in total
(default: the open-file limit less 64) and per address (an IPv4 address or
an IPv6 /64); a connection must send its preamble within 2 s (a TLS
handshake included); frames before authentication are at most 4 KiB;
every rate a request names is bounded by --max-rate (1 Tbit/s without
it), summed without overflow; windows stay within net.core.wmem_max
unless --force-sndbuf; congestion control and DSCP come from allowlists;
UDP echo replies go only to the session's own client address and port,
are never larger than the probe (but for path-MTU probes of an mtu
session, at most 9000 bytes) and are counted against a budget the request
announces; a test ends at most 6 s after its duration, whether its client
reads or not.

Logs go to stderr, one line per session event (text or JSON), at most
--log-lines-per-addr per client address per 10 s. Every test's figures
are logged when it ends, also when its client vanished; with
--results-dir each test is kept as one JSON file. It needs no root and
no capabilities; docs/serve.md is the operator's guide (limits, auth,
TLS, results, capabilities, systemd). Stop with Ctrl-C: running sessions
are ended and their clients told.

--public sets, unless given too:
`

func serveSpec() spec {
	return spec{
		name: "serve", usage: "[--listen HOST:PORT] [--public] [flags]",
		summary: "run the responder that tests connect to",
		long:    serveLong + presetHelp(),
		example: `  fullpipe serve                          port 6349 on every address, TCP and UDP
  fullpipe serve -p 7000                  port 7000 (as iperf3 -s -p 7000)
  fullpipe serve --public                 the limits of a public measurement server
  fullpipe serve --secret-file key --tls-cert tls.crt --tls-key tls.key
                                          clients must prove the secret; control over TLS 1.3
  fullpipe serve --results-dir /var/lib/fullpipe --log-format json`,
		new: func() command { return &serveArgs{} },
	}
}

func (f *serveArgs) validate(in input) error {
	cfg, err := f.config(in)
	f.cfg = cfg
	if err != nil {
		return err
	}
	return f.stamp.checkBeside(in)
}

func (f *serveArgs) run(e env) error {
	f.cfg.Log = newLogger(e, f.quiet, f.logFormat)
	x, err := f.stamp.listenBeside(f.cfg.Log)
	if err != nil {
		return err
	}
	srv, err := serve.Listen(f.cfg)
	if err != nil {
		x.close()
		return exitError{ExitRefused, err}
	}
	f.banner(e, f.cfg, srv)
	return withReflector(e.ctx, x, srv.Serve)
}

// serveArgs are serve's flags; validate turns them into cfg. The limit
// flags' checks and --public are in servecfg.go.
type serveArgs struct {
	fs              *pflag.FlagSet // for --public: which flags were given
	cfg             serve.Config
	port            int
	secretFile      string
	tlsCert, tlsKey string
	quiet, public   bool
	logFormat       string
	allowCC         string
	allowDSCP       string
	maxRate         int64
	maxWindow       int64
	maxWrite        int64
	maxTrain        int64
	fingerprint     string // of the TLS certificate, for the banner
	stamp           reflectorFlags
}

func (f *serveArgs) flags(fs *pflag.FlagSet) {
	f.fs = fs
	c := &f.cfg
	fs.VarP(text(&c.Listen, ":"+strconv.Itoa(wire.DefaultPort), "HOST:PORT"), "listen", "l", "address and port to listen on (TCP and UDP)")
	fs.VarP(num(&f.port, 0, "PORT"), "port", "p", "port to listen on, as iperf3's -p: the port of --listen")
	fs.BoolVar(&f.public, "public", false, "limits for a public address (see above); flags given too override them")
	fs.Var(count(&c.MaxSessions, serve.DefaultMaxSessions), "max-sessions", "most tests running at once")
	fs.Var(count(&c.MaxSessionsPerAddr, serve.DefaultMaxSessionsPerAddr), "max-sessions-per-addr", "most tests running at once from one address (IPv4, or IPv6 /64)")
	fs.Var(count(&c.MaxConns, 0), "max-conns", "most TCP connections open at once, 0 = the open-file limit less 64")
	fs.Var(count(&c.MaxConnsPerAddr, 0), "max-conns-per-addr", "most TCP connections from one address, 0 = 2 × --max-streams + 8")
	fs.Var(dur(&c.MaxDuration, serve.DefaultMaxDuration), "max-duration", "longest test accepted")
	fs.Var(count(&c.MaxStreams, serve.DefaultMaxStreams), "max-streams", "most TCP streams per direction in one test")
	fs.Var(rate(&f.maxRate, 0), "max-rate", "most the responder sends in total over all sessions (UDP rate, paced TCP), 0 = no cap (each request still ≤ 1 Tbit/s)")
	fs.Var(size(&f.maxWindow, 0), "max-window", "largest window a request may ask for, 0 = net.core.wmem_max (at least 1 MiB), 64 MiB with --force-sndbuf")
	fs.BoolVar(&c.ForceSendBuffer, "force-sndbuf", false, "size send buffers with SO_SNDBUFFORCE, past net.core.wmem_max (root; pins kernel memory)")
	fs.Var(size(&f.maxWrite, serve.DefaultMaxWriteSize), "max-write-size", "largest write_size a request may ask for")
	fs.Var(num(&c.MaxProbeRate, serve.DefaultMaxProbeRate, "1/s"), "max-probe-rate", "most UDP echo replies per second of a test's duration")
	fs.Var(size(&f.maxTrain, serve.DefaultMaxTrainBytes), "max-train-bytes", "largest packet train a request may send or ask for (a burst at full rate: rfc6349's shaping step)")
	fs.Var(text(&f.allowCC, "", "NAME,..."), "allow-cc", "congestion controls a request may name, comma-separated, or 'available' (loaded ones only); default: tcp_allowed_congestion_control and the default")
	fs.Var(text(&f.allowDSCP, "0-47", "DSCP,..."), "allow-dscp", "DSCP values a request may name: values and ranges, comma-separated")
	fs.Var(text(&f.secretFile, "", "FILE"), "secret-file", "file whose first line is the shared secret (16+ random bytes: head -c 32 /dev/urandom | base64 > key)")
	fs.Var(text(&f.tlsCert, "", "FILE"), "tls-cert", "PEM certificate: control connections must then be TLS (clients pin it with --tls-pin)")
	fs.Var(text(&f.tlsKey, "", "FILE"), "tls-key", "PEM private key of --tls-cert")
	fs.Var(text(&c.ResultsDir, "", "DIR"), "results-dir", "directory where every test's JSON document (the responder's view) is stored, one file per test")
	fs.Var(oneOf(&f.logFormat, "text", "text", "json"), "log-format", "log lines as text (key=value) or json, on stderr")
	fs.Var(count(&c.LogLinesPerAddr, serve.DefaultLogLinesPerAddr), "log-lines-per-addr", "most log lines one client address may cause per 10 s; the rest are counted")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "log only errors")
	f.stamp.besideFlags(fs)
}

// config applies --public, checks the flags and turns them into a
// serve.Config, all but its logger (newLogger).
func (f *serveArgs) config(in input) (serve.Config, error) {
	if len(in.args) > 0 {
		return serve.Config{}, usagef("unexpected argument %q", in.args[0])
	}
	if err := f.applyPublic(); err != nil {
		return serve.Config{}, err
	}
	cfg := f.cfg
	if err := f.limits(&cfg); err != nil {
		return cfg, err
	}
	listen, err := listenAddr(cfg.Listen, f.port, in)
	if err != nil {
		return cfg, err
	}
	cfg.Listen = listen
	secret, err := readSecret(f.secretFile)
	if err != nil {
		return cfg, err
	}
	cfg.Secret = secret
	if cfg.TLS, f.fingerprint, err = loadTLS(f.tlsCert, f.tlsKey); err != nil {
		return cfg, err
	}
	if cfg.LogLinesPerAddr < 1 {
		return cfg, usagef("--log-lines-per-addr must be at least 1")
	}
	if f.logFormat != "text" && f.logFormat != "json" {
		return cfg, usagef("--log-format %q: want text or json", f.logFormat)
	}
	cfg.Software, cfg.Kernel = version.Software(), version.Kernel()
	return cfg, nil
}

// listenAddr is --listen with -p's port: -p 7000 alone listens on :7000,
// with --listen 127.0.0.1 on 127.0.0.1:7000.
func listenAddr(listen string, port int, in input) (string, error) {
	host, _, err := net.SplitHostPort(listen)
	hasPort := err == nil
	switch {
	case !in.changed("port") && hasPort:
		return listen, nil
	case !in.changed("port"):
		return "", usagef("--listen %q: want HOST:PORT or :PORT (or HOST with -p PORT)", listen)
	case port < 0 || port > 65535:
		return "", usagef("--port %d: want 0..65535 (0: any free port)", port)
	case hasPort && in.changed("listen"):
		return "", usagef("--listen %s names a port already: drop -p or the :PORT", listen)
	case !hasPort:
		host = strings.TrimSuffix(strings.TrimPrefix(listen, "["), "]")
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// newLogger is serve's logger on stderr: text or JSON, errors only with -q.
func newLogger(e env, quiet bool, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	if quiet {
		opts.Level = slog.LevelError
	}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(e.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(e.stderr, opts))
}

// loadTLS reads the responder's certificate and key; none gives nil.
func loadTLS(certFile, keyFile string) (*tls.Config, string, error) {
	if certFile == "" && keyFile == "" {
		return nil, "", nil
	}
	if certFile == "" || keyFile == "" {
		return nil, "", usagef("--tls-cert and --tls-key go together")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, "", fmt.Errorf("TLS certificate: %w (make a self-signed one: openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 -subj /CN=fullpipe -keyout key.pem -out cert.pem)", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}, wire.Fingerprint(cert.Certificate[0]), nil
}

// banner says what the responder serves and its main limits, on stderr.
func (f *serveArgs) banner(e env, cfg serve.Config, srv *serve.Server) {
	auth := "no secret: any client may test"
	if cfg.Secret != nil {
		auth = "clients must prove the shared secret, and it proves it back"
	}
	if f.fingerprint != "" {
		auth += "; control over TLS, certificate " + f.fingerprint
	}
	rate := "no rate cap"
	if cfg.MaxRateBps > 0 {
		rate = "sends at most " + units.FormatRate(float64(cfg.MaxRateBps))
	}
	preset := ""
	if f.public {
		preset = " (--public)"
	}
	if f.logFormat == "json" { // every stderr line stays one JSON object
		cfg.Log.Info("responder listening", "version", version.Release, "addr", srv.Addr().String(), "public", f.public,
			"max_sessions", cfg.MaxSessions, "max_sessions_per_addr", cfg.MaxSessionsPerAddr, "max_streams", cfg.MaxStreams,
			"max_duration", cfg.MaxDuration, "conns", connLimits(cfg), "max_rate_bps", cfg.MaxRateBps, "auth", auth, "results_dir", cfg.ResultsDir)
		return
	}
	fmt.Fprintf(e.stderr, "fullpipe %s responder on %s (TCP+UDP)%s: up to %d sessions (%d per address), %d streams each, %v per test, %s, %s; %s. Ctrl-C stops.\n",
		version.Release, srv.Addr(), preset, cfg.MaxSessions, cfg.MaxSessionsPerAddr, cfg.MaxStreams, cfg.MaxDuration.Round(time.Second), connLimits(cfg), rate, auth)
}
