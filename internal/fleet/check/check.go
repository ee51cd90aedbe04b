// Package check validates what an operator asks of the fleet, and
// prepares it to be stored, exactly as the controller's API does: the
// API and the web page both call it, so a form refuses what the API
// would. Every refusal is a *fleet.FieldError naming the JSON path of
// the field at fault ("test.config", "thresholds.max_rtt_ms").
//
// It reads no clock: callers pass now.
package check

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/kinds"
	"github.com/fullpipe/fullpipe/internal/schedule"
)

// Bounds of a schedule and of an agent's labels.
const (
	MaxSlip     = 24 * time.Hour
	MaxNameLen  = 200  // bytes of a schedule's name
	MaxSelected = 1000 // agents named in one selector
	MaxLabels   = 64   // labels of an agent, or of a selector
)

// agentName is what an agent may be called: it labels metrics and
// paths.
var agentName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// AgentName says whether name is one an agent may have: a letter or
// digit, then up to 62 letters, digits, '.', '_' or '-'.
func AgentName(name string) bool { return agentName.MatchString(name) }

func refuse(field, format string, args ...any) error {
	return &fleet.FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Schedule validates s, sets its Start to now when zero (then to UTC
// milliseconds, as stored) and drops thresholds that judge nothing; it
// returns s's first occurrence from its Start.
func Schedule(s *fleet.Schedule, now time.Time) (first time.Time, err error) {
	switch {
	case len(s.Name) > MaxNameLen:
		return time.Time{}, refuse("name", "%d bytes long: at most %d", len(s.Name), MaxNameLen)
	case s.Test.Kind == "":
		return time.Time{}, refuse("test.kind", "missing: want one of %v", kinds.Names())
	case s.Slip < 0 || s.Slip > MaxSlip:
		return time.Time{}, refuse("slip_ns", "%v: want 0 to %v", s.Slip, MaxSlip)
	}
	if !kinds.Known(s.Test.Kind) {
		return time.Time{}, refuse("test.kind", "%q: want one of %v", s.Test.Kind, kinds.Names())
	}
	if _, err := kinds.Decode(s.Test); err != nil {
		if fe := (*fleet.FieldError)(nil); errors.As(err, &fe) {
			return time.Time{}, fe // a field inside the config, named
		}
		return time.Time{}, refuse("test.config", "%v", err)
	}
	if _, err := kinds.Length(s.Test.Kind, s.Test.Config); err != nil {
		return time.Time{}, refuse("test.config", "%v", err)
	}
	if err := Selector("from", s.From); err != nil {
		return time.Time{}, err
	}
	if err := Selector("to", s.To); err != nil {
		return time.Time{}, err
	}
	if err := thresholds(s); err != nil {
		return time.Time{}, err
	}
	rep, err := schedule.Parse(s.Repeat)
	if err != nil {
		return time.Time{}, refuse("repeat", "%q: %v", s.Repeat, err)
	}
	if s.Start.IsZero() {
		s.Start = now
	}
	s.Start = s.Start.UTC().Truncate(time.Millisecond)
	first, ok := rep.Next(s.Start.Add(-time.Millisecond), s.Start)
	if !ok {
		return time.Time{}, refuse("start", "repeat %q has no occurrence from %s on", s.Repeat, s.Start.Format(time.RFC3339))
	}
	return first.UTC(), nil
}

// thresholds checks s's thresholds and drops them when they judge
// nothing (all zero), so that "none" is stored one way.
func thresholds(s *fleet.Schedule) error {
	if s.Thresholds == nil {
		return nil
	}
	if *s.Thresholds == (fleet.Thresholds{}) {
		s.Thresholds = nil
		return nil
	}
	return s.Thresholds.Check()
}

// Selector refuses a selector that picks none or too many names; field
// is its JSON path ("from", "to").
func Selector(field string, sel fleet.Selector) error {
	switch {
	case len(sel.Agents) == 0 && sel.Site == "" && len(sel.Labels) == 0:
		return refuse(field, "picks no agents: give agents, a site or labels")
	case len(sel.Agents) > MaxSelected:
		return refuse(field, "names %d agents: at most %d", len(sel.Agents), MaxSelected)
	case len(sel.Labels) > MaxLabels:
		return refuse(field, "has %d labels: at most %d", len(sel.Labels), MaxLabels)
	}
	for _, a := range sel.Agents {
		if !AgentName(a) {
			return refuse(field, "agent name %q is not one an agent can have", a)
		}
	}
	return nil
}

// NewSchedule validates s and prepares it to be created: no ID (the
// store gives one), Created now, NextDue its first occurrence, enabled.
func NewSchedule(s *fleet.Schedule, now time.Time) error {
	first, err := Schedule(s, now)
	if err != nil {
		return err
	}
	s.ID, s.Created, s.NextDue, s.Enabled = "", now.UTC().Truncate(time.Millisecond), first, true
	return nil
}

// ScheduleUpdate validates s, the new version of the stored schedule
// old, and prepares it to replace it:
//   - ID and Created are old's; a zero Start keeps old's;
//   - NextDue is old's, unless Repeat or Start changed: then the first
//     occurrence of the new rule at or after both its Start and now;
//   - Enabled is s's (false pauses); resuming (old disabled, s enabled)
//     a schedule whose NextDue has passed moves it to the next
//     occurrence from now: missed occurrences are not caught up.
func ScheduleUpdate(s *fleet.Schedule, old fleet.Schedule, now time.Time) error {
	if s.Start.IsZero() {
		s.Start = old.Start
	}
	if _, err := Schedule(s, now); err != nil {
		return err
	}
	s.ID, s.Created, s.NextDue = old.ID, old.Created, old.NextDue
	rep, err := schedule.Parse(s.Repeat)
	if err != nil {
		return refuse("repeat", "%q: %v", s.Repeat, err) // Schedule parsed it already
	}
	from := func() (time.Time, bool) { // the first occurrence at or after now and Start
		after := now.UTC().Truncate(time.Millisecond)
		if s.Start.After(after) {
			after = s.Start
		}
		next, ok := rep.Next(after.Add(-time.Millisecond), s.Start)
		return next.UTC(), ok
	}
	changed := s.Repeat != old.Repeat || !s.Start.Equal(old.Start)
	resumed := s.Enabled && !old.Enabled && s.NextDue.Before(now)
	if !changed && !resumed {
		return nil
	}
	next, ok := from()
	if !ok {
		field := "start"
		if !changed {
			field = "enabled"
		}
		return refuse(field, "repeat %q from %s has no occurrence after %s", s.Repeat,
			s.Start.Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	s.NextDue = next
	return nil
}
