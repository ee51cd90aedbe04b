package web

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/kinds"
)

// schedulesData is the schedules page: every schedule, what runs next,
// and how busy each agent is.
type schedulesData struct {
	Schedules []fleet.Schedule
	Next      []fleet.Run
	Busy      []busyRow
	Now       time.Time
}

type busyRow struct {
	Agent    string
	Pct      float64
	NextFree time.Time
}

// schedulesPage: GET /ui/schedules.
func (s *Site) schedulesPage(w http.ResponseWriter, r *http.Request, v *viewer) error {
	ctx := r.Context()
	d := schedulesData{Now: s.cfg.Now()}
	var err error
	if d.Schedules, err = s.cfg.Store.Schedules(ctx); err != nil {
		return err
	}
	next, err := s.cfg.Store.Runs(ctx, fleet.RunFilter{States: []fleet.RunState{fleet.RunScheduled, fleet.RunRunning},
		From: d.Now.Add(-24 * time.Hour), To: d.Now.Add(24 * time.Hour), Limit: 1000})
	if err != nil {
		return err
	}
	slices.Reverse(next) // soonest first
	d.Next = next[:min(len(next), 20)]
	agents, err := s.cfg.Store.Agents(ctx)
	if err != nil {
		return err
	}
	for _, a := range agents {
		if fleet.StateAt(a, d.Now, s.cfg.DownAfter) != fleet.AgentUp {
			continue
		}
		b := busyRow{Agent: a.Name}
		if b.Pct, b.NextFree, err = s.busy(r, a.Name, d.Now); err != nil {
			return err
		}
		d.Busy = append(d.Busy, b)
	}
	s.render(w, r, "schedules", v, d)
	return nil
}

// scheduleData is a schedule's form: new, or an existing one to view
// (read) or edit (operate).
type scheduleData struct {
	ID      string
	Enabled bool
	NextDue time.Time
	F       form
	Errors  map[string]string // by form field
	Kinds   []string
	Runs    []fleet.Run
}

func (s *Site) newSchedulePage(w http.ResponseWriter, r *http.Request, v *viewer) error {
	s.renderSchedule(w, r, v, scheduleData{F: form{Kind: "rfc6349", Both: true}, Kinds: kinds.Names()})
	return nil
}

func (s *Site) editSchedulePage(w http.ResponseWriter, r *http.Request, v *viewer) error {
	sc, err := s.cfg.Store.Schedule(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	d := scheduleData{ID: sc.ID, Enabled: sc.Enabled, NextDue: sc.NextDue, F: formOf(sc), Kinds: kinds.Names()}
	if d.Runs, err = s.cfg.Store.Runs(r.Context(), fleet.RunFilter{Schedule: sc.ID, Limit: 20}); err != nil {
		return err
	}
	s.renderSchedule(w, r, v, d)
	return nil
}

// renderSchedule renders the schedule form (its Errors never nil, so
// the template reads a missing field's as "").
func (s *Site) renderSchedule(w http.ResponseWriter, r *http.Request, v *viewer, d scheduleData) {
	if d.Errors == nil {
		d.Errors = map[string]string{}
	}
	s.render(w, r, "schedule", v, d)
}

// createSchedule: POST /ui/schedules.
func (s *Site) createSchedule(w http.ResponseWriter, r *http.Request, v *viewer) error {
	f := readForm(r)
	sc, errs := f.schedule()
	if len(errs) == 0 {
		out, err := s.cfg.Ops.CreateSchedule(r.Context(), sc)
		if err == nil {
			http.Redirect(w, r, Prefix+"schedules/"+out.ID, http.StatusSeeOther)
			return nil
		}
		errs = f.fieldErrors(err)
	}
	w.WriteHeader(http.StatusUnprocessableEntity)
	s.renderSchedule(w, r, v, scheduleData{F: f, Errors: errs, Kinds: kinds.Names()})
	return nil
}

// updateSchedule: POST /ui/schedules/{id}.
func (s *Site) updateSchedule(w http.ResponseWriter, r *http.Request, v *viewer) error {
	old, err := s.cfg.Store.Schedule(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	f := readForm(r)
	sc, errs := f.schedule()
	if len(errs) == 0 {
		sc.ID, sc.Enabled = old.ID, old.Enabled
		if _, err := s.cfg.Ops.UpdateSchedule(r.Context(), sc); err == nil {
			http.Redirect(w, r, Prefix+"schedules/"+old.ID, http.StatusSeeOther)
			return nil
		} else {
			errs = f.fieldErrors(err)
		}
	}
	w.WriteHeader(http.StatusUnprocessableEntity)
	s.renderSchedule(w, r, v, scheduleData{ID: old.ID, Enabled: old.Enabled, NextDue: old.NextDue, F: f, Errors: errs, Kinds: kinds.Names()})
	return nil
}

func (s *Site) pauseSchedule(w http.ResponseWriter, r *http.Request, v *viewer) error {
	return s.setEnabled(w, r, false)
}

func (s *Site) resumeSchedule(w http.ResponseWriter, r *http.Request, v *viewer) error {
	return s.setEnabled(w, r, true)
}

// setEnabled pauses or resumes a schedule, as PUT with enabled does.
func (s *Site) setEnabled(w http.ResponseWriter, r *http.Request, on bool) error {
	sc, err := s.cfg.Store.Schedule(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	sc.Enabled = on
	if _, err := s.cfg.Ops.UpdateSchedule(r.Context(), sc); err != nil {
		return err
	}
	http.Redirect(w, r, Prefix+"schedules", http.StatusSeeOther)
	return nil
}

func (s *Site) deleteSchedule(w http.ResponseWriter, r *http.Request, v *viewer) error {
	if err := s.cfg.Ops.DeleteSchedule(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	http.Redirect(w, r, Prefix+"schedules", http.StatusSeeOther)
	return nil
}

// fieldErrors places the controller's refusal beside its field, or at
// the form's top; a duration the kind does not take (its config has no
// duration_ns) is said beside the duration.
func (f form) fieldErrors(err error) map[string]string {
	var fe *fleet.FieldError
	if !errors.As(err, &fe) {
		return map[string]string{"form": err.Error()}
	}
	field := formField(fe.Field)
	if field == "config" && f.Duration != "" && strings.Contains(fe.Msg, `"duration_ns"`) {
		return map[string]string{"duration": "a " + f.Kind + " test takes no duration: leave it empty, or set its config"}
	}
	if sub, ok := strings.CutPrefix(fe.Field, "test.config."); ok {
		return map[string]string{field: sub + ": " + fe.Msg} // a field inside the config: named
	}
	return map[string]string{field: fe.Msg}
}
