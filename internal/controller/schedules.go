package controller

import (
	"net/http"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/schedule"
)

// Bounds of a schedule.
const (
	maxSlip     = 24 * time.Hour
	maxNameLen  = 200
	maxSelected = 1000 // agents named in one selector
)

// listSchedules: GET /v1/schedules.
func (c *Controller) listSchedules(w http.ResponseWriter, r *http.Request, _ fleet.Token) error {
	ss, err := c.cfg.Store.Schedules(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, nonNil(ss))
	return nil
}

// getSchedule: GET /v1/schedules/{id}.
func (c *Controller) getSchedule(w http.ResponseWriter, r *http.Request, _ fleet.Token) error {
	s, err := c.cfg.Store.Schedule(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s)
	return nil
}

// deleteSchedule: DELETE /v1/schedules/{id}.
func (c *Controller) deleteSchedule(w http.ResponseWriter, r *http.Request, _ fleet.Token) error {
	if err := c.cfg.Store.DeleteSchedule(r.Context(), r.PathValue("id"), c.cfg.Now()); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// createSchedule: POST /v1/schedules. ID, Created and NextDue are the
// controller's to set; a new schedule is enabled.
func (c *Controller) createSchedule(w http.ResponseWriter, r *http.Request, _ fleet.Token) error {
	var s fleet.Schedule
	if err := decode(r, &s); err != nil {
		return err
	}
	now := c.cfg.Now()
	first, err := checkSchedule(&s, now)
	if err != nil {
		return err
	}
	s.ID, s.Created, s.NextDue, s.Enabled = "", now.UTC(), first, true
	out, err := c.cfg.Store.CreateSchedule(r.Context(), s)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// checkSchedule validates s (its Start set to now when zero) and
// returns its first occurrence.
func checkSchedule(s *fleet.Schedule, now time.Time) (time.Time, error) {
	switch {
	case len(s.Name) > maxNameLen:
		return time.Time{}, badRequest("name is %d bytes long: at most %d", len(s.Name), maxNameLen)
	case s.Test.Kind == "":
		return time.Time{}, badRequest("test.kind is missing: want one of %v", fleet.Kinds())
	case s.Slip < 0 || s.Slip > maxSlip:
		return time.Time{}, badRequest("slip_ns %v: want 0 to %v", s.Slip, maxSlip)
	}
	if _, err := s.Test.Decode(); err != nil {
		return time.Time{}, badRequest("test: %v", err)
	}
	if _, err := schedule.Length(s.Test.Kind, s.Test.Config); err != nil {
		return time.Time{}, badRequest("test: %v", err)
	}
	if err := checkSelector("from", s.From); err != nil {
		return time.Time{}, err
	}
	if err := checkSelector("to", s.To); err != nil {
		return time.Time{}, err
	}
	rep, err := schedule.Parse(s.Repeat)
	if err != nil {
		return time.Time{}, badRequest("repeat %q: %v", s.Repeat, err)
	}
	if s.Start.IsZero() {
		s.Start = now
	}
	s.Start = s.Start.UTC().Truncate(time.Millisecond)
	first, ok := rep.Next(s.Start.Add(-time.Millisecond), s.Start)
	if !ok {
		return time.Time{}, badRequest("repeat %q has no occurrence from %s on", s.Repeat, s.Start.Format(time.RFC3339))
	}
	return first.UTC(), nil
}

// checkSelector refuses a selector that picks none or too many names.
func checkSelector(which string, sel fleet.Selector) error {
	switch {
	case len(sel.Agents) == 0 && sel.Site == "" && len(sel.Labels) == 0:
		return badRequest("%s picks no agents: give agents, a site or labels", which)
	case len(sel.Agents) > maxSelected:
		return badRequest("%s names %d agents: at most %d", which, len(sel.Agents), maxSelected)
	case len(sel.Labels) > maxLabels:
		return badRequest("%s has %d labels: at most %d", which, len(sel.Labels), maxLabels)
	}
	for _, a := range sel.Agents {
		if !agentName.MatchString(a) {
			return badRequest("%s: agent name %q is not one an agent can have", which, a)
		}
	}
	return nil
}

// selects says whether sel picks agent a: by name, or its site, or
// every one of its labels.
func selects(sel fleet.Selector, a fleet.Agent) bool {
	for _, n := range sel.Agents {
		if n == a.Name {
			return true
		}
	}
	if sel.Site != "" && sel.Site == a.Site {
		return true
	}
	if len(sel.Labels) == 0 {
		return false
	}
	for k, v := range sel.Labels {
		if a.Labels[k] != v {
			return false
		}
	}
	return true
}
