package cli

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/serve"
	"github.com/fullpipe/fullpipe/internal/units"
	"github.com/fullpipe/fullpipe/internal/version"
	"github.com/fullpipe/fullpipe/internal/wire"
)

func init() {
	register(&command{
		name:    "serve",
		summary: "run the responder that tests connect to",
		usage:   "[--listen HOST:PORT] [flags]",
		long: `Runs the fullpipe responder. It listens on one port for TCP (control and
data connections) and UDP (RTT probes and UDP streams), default 6349.

It serves many clients at once: each test is its own session, with its own
streams, until a limit below refuses new ones with a message to the client.
With --secret-file, a client must prove it knows the secret (HMAC over a
random challenge; the secret never crosses the network) before any data
flows. Logs go to stderr, one line per session event. Stop with Ctrl-C:
running sessions are ended and their clients told.`,
		flags: func(fs *pflag.FlagSet) func(env, []string) error {
			cfg := serve.Config{}
			var secretFile string
			var quiet bool
			var maxRate int64
			fs.StringVarP(&cfg.Listen, "listen", "l", ":"+strconv.Itoa(wire.DefaultPort), "address and port to listen on (TCP and UDP)")
			fs.IntVar(&cfg.MaxSessions, "max-sessions", serve.DefaultMaxSessions, "most tests running at once")
			durVar(fs, &cfg.MaxDuration, "max-duration", "", serve.DefaultMaxDuration, "longest test accepted")
			fs.IntVar(&cfg.MaxStreams, "max-streams", serve.DefaultMaxStreams, "most TCP streams per direction in one test")
			rateVar(fs, &maxRate, "max-rate", "", 0, "most the responder sends in total over all sessions (UDP rate, paced TCP), 0 = no cap")
			fs.StringVar(&secretFile, "secret-file", "", "file whose first line is the shared secret clients must prove")
			fs.BoolVarP(&quiet, "quiet", "q", false, "log only errors")
			return func(e env, args []string) error {
				if len(args) > 0 {
					return usagef("unexpected argument %q", args[0])
				}
				if cfg.MaxSessions < 1 || cfg.MaxStreams < 1 {
					return usagef("--max-sessions and --max-streams must be at least 1")
				}
				if cfg.MaxDuration <= 0 {
					return usagef("--max-duration must be positive")
				}
				if _, _, err := net.SplitHostPort(cfg.Listen); err != nil {
					return usagef("--listen %q: want HOST:PORT or :PORT", cfg.Listen)
				}
				cfg.MaxRateBps = maxRate
				secret, err := readSecret(secretFile)
				if err != nil {
					return err
				}
				cfg.Secret = secret
				level := slog.LevelInfo
				if quiet {
					level = slog.LevelError
				}
				cfg.Log = slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
				cfg.Software, cfg.Kernel = version.Software(), version.Kernel()
				srv, err := serve.Listen(cfg)
				if err != nil {
					return exitError{ExitRefused, err}
				}
				auth := "no secret: any client may test"
				if secret != nil {
					auth = "clients must prove the shared secret"
				}
				rate := "no rate cap"
				if maxRate > 0 {
					rate = "sends at most " + units.FormatRate(float64(maxRate))
				}
				fmt.Fprintf(e.stderr, "fullpipe %s responder on %s (TCP+UDP): up to %d sessions, %d streams each, %v per test, %s; %s. Ctrl-C stops.\n",
					version.Release, srv.Addr(), cfg.MaxSessions, cfg.MaxStreams, cfg.MaxDuration.Round(time.Second), rate, auth)
				return srv.Serve(e.ctx)
			}
		},
	})
	register(&command{
		name:    "version",
		summary: "print version, Go and kernel",
		usage:   "",
		long:    "Prints fullpipe's version, the Go toolchain it was built with and this host's kernel.",
		flags: func(fs *pflag.FlagSet) func(env, []string) error {
			return func(e env, args []string) error {
				fmt.Fprintf(e.stdout, "%s, kernel %s, default congestion control %s\n", version.Software(), version.Kernel(), defaultCC())
				return nil
			}
		},
	})
}
