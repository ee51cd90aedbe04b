package cli

// serve's limit flags: the --public preset and the checks that turn the
// limit flags into serve.Config fields.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fullpipe/fullpipe/internal/frame"
	"github.com/fullpipe/fullpipe/internal/serve"
)

// applyPublic sets --public's preset on every flag of it not given too.
func (f *serveArgs) applyPublic() error {
	if !f.public {
		return nil
	}
	for _, p := range publicPreset {
		if !f.fs.Changed(p[0]) {
			if err := f.fs.Set(p[0], p[1]); err != nil {
				return fmt.Errorf("--public: --%s %s: %w", p[0], p[1], err)
			}
		}
	}
	return nil
}

// limits checks the limit flags and sets them in cfg.
func (f *serveArgs) limits(cfg *serve.Config) error {
	if cfg.MaxSessions < 1 || cfg.MaxStreams < 1 || cfg.MaxSessionsPerAddr < 1 {
		return usagef("--max-sessions, --max-sessions-per-addr and --max-streams must be at least 1")
	}
	if cfg.MaxDuration <= 0 {
		return usagef("--max-duration must be positive")
	}
	if cfg.MaxConns < 0 || cfg.MaxConnsPerAddr < 0 || cfg.MaxProbeRate < 1 {
		return usagef("--max-conns and --max-conns-per-addr must not be negative, --max-probe-rate at least 1")
	}
	if f.maxTrain < 0 || f.maxTrain > 1<<30 {
		return usagef("--max-train-bytes must be 0 (the default %d) to 1 GiB", serve.DefaultMaxTrainBytes)
	}
	cfg.MaxRateBps, cfg.MaxWindow, cfg.MaxWriteSize = f.maxRate, int(f.maxWindow), int(f.maxWrite)
	cfg.MaxTrainBytes = int(f.maxTrain)
	if f.allowCC != "" {
		cfg.AllowCC = serve.LoadedCC(strings.Split(f.allowCC, ","))
		if len(cfg.AllowCC) == 0 {
			return usagef("--allow-cc %q: none of these is loaded (see /proc/sys/net/ipv4/tcp_available_congestion_control)", f.allowCC)
		}
	}
	dscp, err := parseDSCPList(f.allowDSCP)
	if err != nil {
		return err
	}
	cfg.AllowDSCP = dscp
	return nil
}

// connLimits says the connection caps as the banner prints them, with
// the defaults serve fills in for 0.
func connLimits(cfg serve.Config) string {
	total, perAddr := cfg.MaxConns, cfg.MaxConnsPerAddr
	if total <= 0 {
		total = serve.DefaultMaxConns()
	}
	if perAddr <= 0 {
		perAddr = 2*cfg.MaxStreams + 8
	}
	return fmt.Sprintf("%d connections (%d per address)", total, perAddr)
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
		if err1 != nil || err2 != nil || a < 0 || b > frame.MaxDSCP || a > b {
			return nil, usagef("--allow-dscp %q: want DSCP values 0..63 and ranges, e.g. 0-47 or 0,46", s)
		}
		for v := a; v <= b; v++ {
			out = append(out, v)
		}
	}
	return out, nil
}
