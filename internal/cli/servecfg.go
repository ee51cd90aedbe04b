package cli

import (
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

// serveOpts are the serve flags that do not map straight onto a
// serve.Config field.
type serveOpts struct {
	secretFile, allowCC, allowDSCP string
	quiet, public                  bool
	maxRate, maxWindow, maxWrite   int64
}

// serveFlags declares serve's flags and returns its runner.
func serveFlags(fs *pflag.FlagSet) func(env, []string) error {
	cfg, o := declareServe(fs)
	return func(e env, args []string) error {
		if len(args) > 0 {
			return usagef("unexpected argument %q", args[0])
		}
		if err := o.config(fs, cfg); err != nil {
			return err
		}
		level := slog.LevelInfo
		if o.quiet {
			level = slog.LevelError
		}
		cfg.Log = slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
		cfg.Software, cfg.Kernel = version.Software(), version.Kernel()
		srv, err := serve.Listen(*cfg)
		if err != nil {
			return exitError{ExitRefused, err}
		}
		fmt.Fprintln(e.stderr, o.banner(srv, *cfg))
		return srv.Serve(e.ctx)
	}
}

// declareServe declares serve's flags into the config and options it
// returns.
func declareServe(fs *pflag.FlagSet) (*serve.Config, *serveOpts) {
	cfg, o := &serve.Config{}, &serveOpts{}
	fs.StringVarP(&cfg.Listen, "listen", "l", ":"+strconv.Itoa(wire.DefaultPort), "address and port to listen on (TCP and UDP)")
	fs.BoolVar(&o.public, "public", false, "limits for a public address (see above); flags given too override them")
	fs.IntVar(&cfg.MaxSessions, "max-sessions", serve.DefaultMaxSessions, "most tests running at once")
	fs.IntVar(&cfg.MaxSessionsPerAddr, "max-sessions-per-addr", serve.DefaultMaxSessionsPerAddr, "most tests running at once from one address (IPv4, or IPv6 /64)")
	fs.IntVar(&cfg.MaxConns, "max-conns", 0, "most TCP connections open at once, 0 = the open-file limit less 64")
	fs.IntVar(&cfg.MaxConnsPerAddr, "max-conns-per-addr", 0, "most TCP connections from one address, 0 = 2 × --max-streams + 8")
	durVar(fs, &cfg.MaxDuration, "max-duration", "", serve.DefaultMaxDuration, "longest test accepted")
	fs.IntVar(&cfg.MaxStreams, "max-streams", serve.DefaultMaxStreams, "most TCP streams per direction in one test")
	rateVar(fs, &o.maxRate, "max-rate", "", 0, "most the responder sends in total over all sessions (UDP rate, paced TCP), 0 = no cap (each request still ≤ 1 Tbit/s)")
	sizeVar(fs, &o.maxWindow, "max-window", "", 0, "largest window a request may ask for, 0 = net.core.wmem_max (at least 1 MiB), 64 MiB with --force-sndbuf")
	fs.BoolVar(&cfg.ForceSendBuffer, "force-sndbuf", false, "size send buffers with SO_SNDBUFFORCE, past net.core.wmem_max (root; pins kernel memory)")
	sizeVar(fs, &o.maxWrite, "max-write-size", "", serve.DefaultMaxWriteSize, "largest write_size a request may ask for")
	fs.IntVar(&cfg.MaxProbeRate, "max-probe-rate", serve.DefaultMaxProbeRate, "most UDP echo replies per second of a test's duration")
	fs.StringVar(&o.allowCC, "allow-cc", "", "congestion controls a request may name, comma-separated, or 'available' (loaded ones only); default: tcp_allowed_congestion_control and the default")
	fs.StringVar(&o.allowDSCP, "allow-dscp", "0-47", "DSCP values a request may name: values and ranges, comma-separated")
	fs.StringVar(&o.secretFile, "secret-file", "", "file whose first line is the shared secret clients must prove")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "log only errors")
	return cfg, o
}

// config applies --public and checks and converts the flags into cfg.
func (o *serveOpts) config(fs *pflag.FlagSet, cfg *serve.Config) error {
	if o.public {
		for _, p := range publicPreset {
			if !fs.Changed(p[0]) {
				if err := fs.Set(p[0], p[1]); err != nil {
					return fmt.Errorf("--public: --%s %s: %w", p[0], p[1], err)
				}
			}
		}
	}
	if cfg.MaxSessions < 1 || cfg.MaxStreams < 1 || cfg.MaxSessionsPerAddr < 1 {
		return usagef("--max-sessions, --max-sessions-per-addr and --max-streams must be at least 1")
	}
	if cfg.MaxDuration <= 0 {
		return usagef("--max-duration must be positive")
	}
	if cfg.MaxConns < 0 || cfg.MaxConnsPerAddr < 0 || cfg.MaxProbeRate < 1 {
		return usagef("--max-conns and --max-conns-per-addr must not be negative, --max-probe-rate at least 1")
	}
	if _, _, err := net.SplitHostPort(cfg.Listen); err != nil {
		return usagef("--listen %q: want HOST:PORT or :PORT", cfg.Listen)
	}
	cfg.MaxRateBps, cfg.MaxWindow, cfg.MaxWriteSize = o.maxRate, int(o.maxWindow), int(o.maxWrite)
	if o.allowCC != "" {
		cfg.AllowCC = serve.LoadedCC(strings.Split(o.allowCC, ","))
		if len(cfg.AllowCC) == 0 {
			return usagef("--allow-cc %q: none of these is loaded (see /proc/sys/net/ipv4/tcp_available_congestion_control)", o.allowCC)
		}
	}
	dscp, err := parseDSCPList(o.allowDSCP)
	if err != nil {
		return err
	}
	cfg.AllowDSCP = dscp
	secret, err := readSecret(o.secretFile)
	cfg.Secret = secret
	return err
}

// parseDSCPList parses "0-47" or "0,8,46".
func parseDSCPList(s string) ([]int, error) {
	out := []int{}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || b > 63 || a > b {
			return nil, usagef("--allow-dscp %q: want DSCP values 0..63 and ranges, e.g. 0-47 or 0,46", s)
		}
		for v := a; v <= b; v++ {
			out = append(out, v)
		}
	}
	return out, nil
}

// banner is the responder's first line on stderr.
func (o *serveOpts) banner(srv *serve.Server, cfg serve.Config) string {
	auth := "no secret: any client may test"
	if cfg.Secret != nil {
		auth = "clients must prove the shared secret"
	}
	rate := "no rate cap"
	if cfg.MaxRateBps > 0 {
		rate = "sends at most " + units.FormatRate(float64(cfg.MaxRateBps))
	}
	preset := ""
	if o.public {
		preset = " (--public)"
	}
	return fmt.Sprintf("fullpipe %s responder on %s (TCP+UDP)%s: up to %d sessions (%d per address), %d streams each, %v per test, %s; %s. Ctrl-C stops.",
		version.Release, srv.Addr(), preset, cfg.MaxSessions, cfg.MaxSessionsPerAddr, cfg.MaxStreams, cfg.MaxDuration.Round(time.Second), rate, auth)
}
