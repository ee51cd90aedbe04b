package method

// Each Run function starts with prepare: the config's defaults, then its
// Validate (package result), before any connection.

import (
	"fmt"

	"github.com/fullpipe/fullpipe/internal/result"
)

// point is the engine's config of a window sweep's point i, window w.
func point(c result.WindowSweepConfig, i, w int) result.WindowPointConfig {
	return result.WindowPointConfig{
		TCP: result.TCPConfig{Streams: 1, Duration: c.Duration, Window: w, Reverse: c.Reverse, CC: c.CC,
			Interval: c.Interval},
		DSCPs: c.ProbeDSCPs, Baseline: c.BaselineProbes, BaselineGap: baselineGap,
		ProbeGap: c.ProbeGap, Settle: c.Settle, Seed: c.Seed + uint64(i),
	}
}

// prepare is cfg with its defaults, or why it cannot run.
func prepare[C interface {
	WithDefaults() C
	Validate() error
}](what string, cfg C) (C, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("%s config: %w", what, err)
	}
	return cfg, nil
}

// prepareSweep is a window sweep's config with its defaults, each of
// its points checked as the engine will run it.
func prepareSweep(c result.WindowSweepConfig) (result.WindowSweepConfig, error) {
	c, err := prepare("window sweep", c)
	if err != nil {
		return c, err
	}
	if err := checkPoints(c); err != nil {
		return c, fmt.Errorf("window sweep config: %w", err)
	}
	return c, nil
}

// checkPoints validates each point of c as the engine will run it.
func checkPoints(c result.WindowSweepConfig) error {
	for i, w := range c.Windows {
		if err := point(c, i, w).WithDefaults().Validate(); err != nil {
			return fmt.Errorf("window %d B: %w", w, err)
		}
	}
	return nil
}
