package method

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/schedule"
	"github.com/fullpipe/fullpipe/internal/sweep"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// baselineGap spaces the baseline probes: 10 of them take 0.2 s.
const baselineGap = 20 * time.Millisecond

// RunWindowSweep measures every window in turn, smallest first, and
// classifies the points. progress, if not nil, sees each point as it is
// measured (before classification). Ctrl-C (ctx) ends the sweep with the
// points so far, classified, and an error wrapping result.ErrPartial.
func RunWindowSweep(ctx context.Context, n Network, cfg result.WindowSweepConfig, progress Progress) (*result.WindowSweep, error) {
	cfg, err := prepareSweep(cfg)
	if err != nil {
		return nil, err
	}
	res := &result.WindowSweep{}
	var stopErr error
	for i, w := range cfg.Windows {
		pc := point(cfg, i, w)
		run, err := n.WindowPoint(ctx, pc)
		if run != nil && run.TCP != nil && res.Meta.Schema == 0 {
			res.Meta = run.TCP.Meta
		}
		if run != nil {
			p := run.Point(pc, cfg.MSS)
			progress.emit(Event{Kind: Sample, Step: StepSweep, Direction: vocab.Of(cfg.Reverse), Window: &p, Index: i})
			res.Points = append(res.Points, p)
		}
		if stop, fatal := stopped(ctx, err, len(res.Points), fmt.Sprintf("window %d B", w)); fatal != nil {
			return nil, fatal
		} else if stop != nil {
			stopErr = stop
			break
		}
	}
	res.Meta.Test, res.Config = "sweep window", cfg
	var whole []sweep.WindowPoint
	for _, p := range res.Points {
		if !p.Partial {
			whole = append(whole, p)
		}
	}
	res.Analysis = sweep.Classify(whole, cfg.MSS)
	for i := range res.Points { // Classify sorted and labelled the whole ones
		for _, w := range whole {
			if w.WindowBytes == res.Points[i].WindowBytes && !res.Points[i].Partial {
				res.Points[i] = w
			}
		}
	}
	res.Partial, res.PartialReason, stopErr = partial(stopErr)
	return res, stopErr
}

// WindowSweepCost is a window sweep's plan (RunWindowSweep): every
// window's point, one after another, each checked first as the engine
// will run it.
func WindowSweepCost(cfg result.WindowSweepConfig, _ time.Duration) (schedule.Cost, error) {
	if err := checkPoints(cfg); err != nil {
		return schedule.Cost{}, err
	}
	return windowSweepPlan(cfg), nil
}

// windowSweepPlan is every window's point of cfg (its defaults filled),
// one after another.
func windowSweepPlan(cfg result.WindowSweepConfig) schedule.Cost {
	var all schedule.Cost
	for i, w := range cfg.Windows {
		all = all.Plus(tester.WindowPointCost(point(cfg, i, w)))
	}
	return all
}

// stopped decides after one point of a sweep: a point that failed before
// any point was measured is fatal (nothing to report); a later failure or
// Ctrl-C stops the sweep with the points so far (stop, naming the point).
func stopped(ctx context.Context, err error, have int, point string) (stop, fatal error) {
	switch {
	case err != nil && have == 0 && !errors.Is(err, result.ErrPartial) && ctx.Err() == nil:
		return nil, err
	case err != nil:
		return fmt.Errorf("%s: %w", point, err), nil
	case ctx.Err() != nil:
		return fmt.Errorf("%w: interrupted", result.ErrPartial), nil
	}
	return nil, nil
}

// partial turns a sweep's stop into its result's partial flag and reason,
// and an error that wraps result.ErrPartial (nil when it ran to the end).
func partial(stop error) (bool, string, error) {
	if stop == nil {
		return false, "", nil
	}
	if !errors.Is(stop, result.ErrPartial) {
		return true, stop.Error(), fmt.Errorf("%w: %v", result.ErrPartial, stop)
	}
	return true, stop.Error(), stop
}
