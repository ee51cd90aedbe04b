package cli

// The STAMP / TWAMP-Light reflector (docs/stamp.md): beside the responder
// (serve --stamp, agent --stamp) or alone (fullpipe reflector).

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/stamp"
	"github.com/fullpipe/fullpipe/internal/tester"
)

// defaultReflectorAddr is where a reflector listens unless told: RFC
// 8762's port on every address.
var defaultReflectorAddr = ":" + strconv.Itoa(result.DefaultSTAMPPort)

// reflectorFlags are a reflector's flags; prefix is "stamp-" beside a
// responder, "" alone.
type reflectorFlags struct {
	on         bool   // beside a responder: --stamp
	addr       string // where it listens
	stateful   bool
	keyFile    string
	timestamps string
	ratePPS    int
	burst      int
	maxSenders int
	globalRate int
	globalBurs int
	refuse     string // source ports never answered: "0-1023", "862,7", "none"
	synced     bool
}

func (r *reflectorFlags) flags(fs *pflag.FlagSet, prefix string) {
	p := prefix
	fs.Var(text(&r.addr, defaultReflectorAddr, "HOST:PORT"), p+"listen", "address and UDP port the reflector listens on (862 needs root or CAP_NET_BIND_SERVICE)")
	fs.BoolVar(&r.stateful, p+"stateful", false, "stateful reflector: number each sender's packets as received (RFC 8762 §4.3.1), so it can tell forward from backward loss")
	fs.Var(text(&r.keyFile, "", "FILE"), p+"key-file", "authenticated mode: file whose bytes are the HMAC key (16+ bytes); unauthenticated packets are then dropped")
	fs.Var(oneOf(&r.timestamps, "ntp", "ntp", "ptp"), p+"timestamps", "timestamp format of the replies: ntp or ptp (TAI)")
	fs.Var(num(&r.ratePPS, 1000, "1/s"), p+"rate", "replies per second to one sender (IPv4 address, IPv6 /64, any port); the rest are dropped")
	fs.Var(count(&r.burst, 100), p+"burst", "replies one sender may get at once above --"+p+"rate")
	fs.Var(count(&r.maxSenders, 4096), p+"max-senders", "senders kept at once; past it the least recently heard is forgotten")
	fs.Var(num(&r.globalRate, stamp.DefaultGlobalPPS, "1/s"), p+"global-rate", "replies per second to all senders together; the rest are dropped")
	fs.Var(count(&r.globalBurs, stamp.DefaultGlobalBurst), p+"global-burst", "replies all senders may get at once above --"+p+"global-rate")
	fs.Var(text(&r.refuse, "0-1023", "PORTS"), p+"refuse-ports", "source ports never answered (a service's, not a sender's): ranges and ports, comma-separated, or none; the reflector's own port is refused too")
	fs.BoolVar(&r.synced, p+"clock-synced", false, "this host's clock is synchronized (NTP/PTP): set the S bit, so senders may report one-way delays")
}

// config checks the flags and turns them into a reflector's config.
func (r *reflectorFlags) config(prefix string) (stamp.ReflectorConfig, error) {
	cfg := stamp.ReflectorConfig{Addr: r.addr, Stateful: r.stateful, RatePPS: float64(r.ratePPS), Burst: r.burst, MaxSources: r.maxSenders,
		GlobalPPS: float64(r.globalRate), GlobalBurst: r.globalBurs}
	if r.timestamps == "ptp" {
		cfg.Format = stamp.PTP
	} else if r.timestamps != "ntp" {
		return cfg, usagef("--%stimestamps %q: want ntp or ptp", prefix, r.timestamps)
	}
	cfg.ErrorEstimate = stamp.EstimateFor(time.Millisecond, cfg.Format, r.synced)
	switch {
	case r.ratePPS < 1 || r.ratePPS > 1_000_000:
		return cfg, usagef("--%srate %d: want 1..1,000,000 replies a second per sender", prefix, r.ratePPS)
	case r.burst < 1 || r.burst > 1_000_000:
		return cfg, usagef("--%sburst %d: want 1..1,000,000", prefix, r.burst)
	case r.maxSenders < 1 || r.maxSenders > 1_000_000:
		return cfg, usagef("--%smax-senders %d: want 1..1,000,000", prefix, r.maxSenders)
	case r.globalRate < 1 || r.globalRate > 10_000_000:
		return cfg, usagef("--%sglobal-rate %d: want 1..10,000,000 replies a second", prefix, r.globalRate)
	case r.globalBurs < 1 || r.globalBurs > 10_000_000:
		return cfg, usagef("--%sglobal-burst %d: want 1..10,000,000", prefix, r.globalBurs)
	}
	ports, err := parsePortRanges(r.refuse)
	if err != nil {
		return cfg, usagef("--%srefuse-ports %q: %v", prefix, r.refuse, err)
	}
	cfg.RefusePorts = ports
	if r.keyFile != "" {
		key, err := tester.ReadSTAMPKey(r.keyFile)
		if err != nil {
			return cfg, usagef("--%skey-file: %v", prefix, err)
		}
		cfg.Key = key
	}
	return cfg, nil
}

// parsePortRanges reads "0-1023,8620" (or "none": an empty, non-nil
// list, which refuses no port).
func parsePortRanges(s string) ([]stamp.PortRange, error) {
	out := []stamp.PortRange{}
	if s == "none" {
		return out, nil
	}
	for _, f := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(f), "-")
		if !isRange {
			hi = lo
		}
		l, err1 := strconv.ParseUint(lo, 10, 16)
		h, err2 := strconv.ParseUint(hi, 10, 16)
		if err1 != nil || err2 != nil || l > h {
			return nil, fmt.Errorf("%q: want a port (0-65535) or a range LO-HI, comma-separated, or none", f)
		}
		out = append(out, stamp.PortRange{Lo: uint16(l), Hi: uint16(h)})
	}
	return out, nil
}

// reflector is a bound reflector and how to log it.
type reflector struct {
	r   *stamp.Reflector
	log *slog.Logger
}

// listenReflector binds cfg's socket; a refusal is exit 3.
func listenReflector(cfg stamp.ReflectorConfig, log *slog.Logger) (*reflector, error) {
	r, err := stamp.NewReflector(cfg)
	if err != nil {
		return nil, exitError{ExitRefused, err}
	}
	mode := "stateless"
	if cfg.Stateful {
		mode = "stateful"
	}
	log.Info("stamp reflector listening", "addr", r.Addr().String(), "mode", mode, "authenticated", len(cfg.Key) > 0,
		"rate_pps_per_sender", cfg.RatePPS, "burst", cfg.Burst, "max_senders", cfg.MaxSources,
		"global_rate_pps", cfg.GlobalPPS, "global_burst", cfg.GlobalBurst, "kernel_timestamps", r.KernelTimestamps())
	return &reflector{r: r, log: log}, nil
}

// run serves until ctx ends, logging what it did every statsEvery when
// it changed, and once more at the end.
func (x *reflector) run(ctx context.Context, statsEvery time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- x.r.Run(ctx) }() // ends with ctx (Run closes the socket)
	t := time.NewTicker(statsEvery)
	defer t.Stop()
	var last stamp.ReflectorStats
	for {
		select {
		case err := <-done:
			x.logStats("stamp reflector stopped", x.r.Stats())
			return err
		case <-t.C:
			if s := x.r.Stats(); s != last {
				x.logStats("stamp reflector", s)
				last = s
			}
		}
	}
}

func (x *reflector) logStats(msg string, s stamp.ReflectorStats) {
	x.log.Info(msg, "received", s.Received, "reflected", s.Reflected, "short", s.Short, "bad_auth", s.BadAuth,
		"rate_limited", s.RateLimited, "over_budget", s.OverBudget, "looped", s.Looped, "refused_port", s.RefusedPort,
		"evicted", s.Evicted, "send_errors", s.SendErrors)
}

// reflectorStatsEvery is how often a running reflector logs its counters
// (when they changed).
const reflectorStatsEvery = time.Minute

// withReflector runs serve (a responder, an agent) and, when x is not
// nil, the reflector beside it: both end when ctx does or either fails.
func withReflector(ctx context.Context, x *reflector, serve func(context.Context) error) error {
	if x == nil {
		return serve(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	refl := make(chan error, 1)
	go func() {
		err := x.run(ctx, reflectorStatsEvery)
		cancel() // a reflector that failed ends what it runs beside
		refl <- err
	}()
	err := serve(ctx)
	cancel()
	if rerr := <-refl; err == nil && rerr != nil {
		err = fmt.Errorf("stamp reflector: %w", rerr)
	}
	return err
}

// besideFlags are --stamp and the reflector's flags prefixed "stamp-",
// for a command that runs a reflector beside its responder.
func (r *reflectorFlags) besideFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&r.on, "stamp", false, "also run a STAMP / TWAMP-Light reflector (RFC 8762), on --stamp-listen, for fullpipe stamp and routers' senders")
	r.flags(fs, "stamp-")
}

// checkBeside checks the reflector's flags: they need --stamp.
func (r *reflectorFlags) checkBeside(in input) error {
	if !r.on {
		for _, f := range []string{"listen", "stateful", "key-file", "timestamps", "rate", "burst", "max-senders", "global-rate", "global-burst", "refuse-ports", "clock-synced"} {
			if in.changed("stamp-" + f) {
				return usagef("--stamp-%s needs --stamp", f)
			}
		}
		return nil
	}
	_, err := r.config("stamp-")
	return err
}

// listenBeside binds the reflector when --stamp asked for one (nil
// otherwise).
func (r *reflectorFlags) listenBeside(log *slog.Logger) (*reflector, error) {
	if !r.on {
		return nil, nil
	}
	cfg, err := r.config("stamp-")
	if err != nil {
		return nil, err
	}
	return listenReflector(cfg, log)
}

// close releases a reflector that will not run (nil: nothing).
func (x *reflector) close() {
	if x != nil {
		_ = x.r.Close()
	}
}

func reflectorSpec() spec {
	return spec{
		name: "reflector", usage: "[--listen HOST:PORT] [flags]",
		summary: "run a STAMP / TWAMP-Light reflector alone (no responder)",
		long: `Runs a STAMP Session-Reflector (RFC 8762) that also answers TWAMP-Light
senders (RFC 5357 appendix I), on UDP port 862 unless --listen says
otherwise: what fullpipe stamp, a router's STAMP sender or twampy measure
against. serve --stamp runs the same reflector beside the responder.

Stateless by default (a reply carries the sender's sequence number);
--stateful numbers each sender's packets as received, so the sender can
tell forward from backward loss. A reply is never larger than its
request (shorter than 41 bytes: no reply); each sender (IPv4 address,
IPv6 /64) gets at most --rate replies a second with a --burst, all of
them together --global-rate with a --global-burst; at most
--max-senders are kept, the least recently heard forgotten first. A
reflected packet (another reflector's reply) and a datagram from a
--refuse-ports source port (0-1023) or the reflector's own port get no
reply: two reflectors never answer each other in a loop. With --key-file only authenticated packets
(HMAC-SHA-256) are answered. T2 is the kernel's receive timestamp.
Logs go to stderr: a line when it starts, its counters every minute when
they changed, and at the end. Stop with Ctrl-C.`,
		example: `  fullpipe reflector                          port 862 (root or CAP_NET_BIND_SERVICE)
  fullpipe reflector --listen :8620 --stateful
                                              a stateful reflector on an unprivileged port
  fullpipe reflector --key-file stamp.key --clock-synced
                                              authenticated; this host's clock is synchronized (S bit)`,
		new: func() command { return &reflectorArgs{} },
	}
}

// reflectorArgs are the standalone reflector's flags.
type reflectorArgs struct {
	r         reflectorFlags
	cfg       stamp.ReflectorConfig
	logFormat string
	quiet     bool
}

func (a *reflectorArgs) flags(fs *pflag.FlagSet) {
	a.r.flags(fs, "")
	fs.Var(oneOf(&a.logFormat, "text", "text", "json"), "log-format", "log lines as text (key=value) or json, on stderr")
	fs.BoolVarP(&a.quiet, "quiet", "q", false, "log only errors")
}

func (a *reflectorArgs) validate(in input) error {
	if len(in.args) > 0 {
		return usagef("unexpected argument %q", in.args[0])
	}
	if err := checkLogFormat(a.logFormat); err != nil {
		return err
	}
	cfg, err := a.r.config("")
	a.cfg = cfg
	return err
}

func (a *reflectorArgs) run(e env) error {
	x, err := listenReflector(a.cfg, newLogger(e, a.quiet, a.logFormat))
	if err != nil {
		return err
	}
	return x.run(e.ctx, reflectorStatsEvery)
}
