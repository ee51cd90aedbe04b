package controller

import (
	"context"
	"net/http"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/fleet/check"
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

// updateSchedule: PUT /v1/schedules/{id}. The body is the whole
// schedule, its ID the path's (check.ScheduleUpdate says what is kept
// and recomputed; check.Update stores it without undoing a claim):
// enabled false pauses it, true resumes it.
func (c *Controller) updateSchedule(w http.ResponseWriter, r *http.Request, _ fleet.Token) error {
	var s fleet.Schedule
	if err := decode(r, &s); err != nil {
		return err
	}
	s.ID = r.PathValue("id")
	out, err := check.Update(r.Context(), c.cfg.Store, s, c.cfg.Now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// createSchedule: POST /v1/schedules. ID, Created and NextDue are the
// controller's to set; a new schedule is enabled.
func (c *Controller) createSchedule(w http.ResponseWriter, r *http.Request, _ fleet.Token) error {
	var s fleet.Schedule
	if err := decode(r, &s); err != nil {
		return err
	}
	out, err := c.newSchedule(r.Context(), s)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// newSchedule checks and prepares s (check.NewSchedule) and stores it:
// the API's POST and the web page's form alike.
func (c *Controller) newSchedule(ctx context.Context, s fleet.Schedule) (fleet.Schedule, error) {
	if err := check.NewSchedule(&s, c.cfg.Now()); err != nil {
		return fleet.Schedule{}, err
	}
	return c.cfg.Store.CreateSchedule(ctx, s)
}
