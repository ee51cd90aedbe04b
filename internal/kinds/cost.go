package kinds

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// The cost column, by a schedule's kind name: what the fleet's checks
// and its scheduler ask of a test before it runs (schedule.Costing).

// costNamed is the cost of the kind a schedule names, or an error that
// lists the kinds.
func costNamed(name string) (Kind, error) {
	if k, ok := Named(name); ok {
		return k, nil
	}
	return Kind{}, fmt.Errorf("unknown test kind %q: want one of %s", name, strings.Join(Names(), ", "))
}

// named wraps err with the kind's name.
func named(name string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// Length is a test's own running time from its config, an upper bound
// (schedule.Costing.Length). An unknown kind, an unknown key or an
// invalid config is an error.
func Length(name string, cfg json.RawMessage) (time.Duration, error) {
	k, err := costNamed(name)
	if err != nil {
		return 0, err
	}
	d, err := k.cost.Length(cfg)
	return d, named(name, err)
}

// SlotFor is the time to book for a test on a path of round trip rtt
// (schedule.Costing.SlotFor).
func SlotFor(name string, cfg json.RawMessage, rtt time.Duration) (time.Duration, error) {
	k, err := costNamed(name)
	if err != nil {
		return 0, err
	}
	d, err := k.cost.SlotFor(cfg, rtt)
	return d, named(name, err)
}

// ExclusiveFor says whether a test needs its agents to itself: an
// exclusive kind, a shared one sending faster than
// schedule.SharedRateMax, or a kind this build does not know (the safe
// side).
func ExclusiveFor(name string, cfg json.RawMessage) bool {
	k, err := costNamed(name)
	return err != nil || k.cost.ExclusiveFor(cfg)
}

// SharedRate is what a run of a shared kind sends, bit/s.
func SharedRate(name string, cfg json.RawMessage) (float64, error) {
	k, err := costNamed(name)
	if err != nil {
		return 0, err
	}
	r, err := k.cost.SharedRate(cfg)
	return r, named(name, err)
}
