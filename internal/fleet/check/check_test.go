package check

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

var t0 = time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)

func valid() fleet.Schedule {
	return fleet.Schedule{Name: "hourly", Test: fleet.Test{Kind: "rtt", Config: json.RawMessage(`{"count": 5}`)},
		From: fleet.Selector{Agents: []string{"a"}}, To: fleet.Selector{Site: "core"}, Repeat: "R/PT1H", Start: t0}
}

// TestScheduleFields: each refusal names its field.
func TestScheduleFields(t *testing.T) {
	for _, c := range []struct {
		name, field string
		edit        func(*fleet.Schedule)
	}{
		{"long name", "name", func(s *fleet.Schedule) { s.Name = strings.Repeat("n", MaxNameLen+1) }},
		{"no kind", "test.kind", func(s *fleet.Schedule) { s.Test.Kind = "" }},
		{"unknown kind", "test.kind", func(s *fleet.Schedule) { s.Test.Kind = "ftp" }},
		{"config of another kind", "test.config", func(s *fleet.Schedule) { s.Test.Config = json.RawMessage(`{"rate_bps": 1}`) }},
		{"config not JSON", "test.config", func(s *fleet.Schedule) { s.Test.Config = json.RawMessage(`{`) }},
		{"empty from", "from", func(s *fleet.Schedule) { s.From = fleet.Selector{} }},
		{"bad agent in to", "to", func(s *fleet.Schedule) { s.To.Agents = []string{"a b"} }},
		{"too many agents", "from", func(s *fleet.Schedule) { s.From.Agents = make([]string, MaxSelected+1) }},
		{"bad repeat", "repeat", func(s *fleet.Schedule) { s.Repeat = "every so often" }},
		{"no occurrence", "start", func(s *fleet.Schedule) { s.Repeat = "R1/2026-01-01T00:00:00Z/PT1H" }},
		{"negative slip", "slip_ns", func(s *fleet.Schedule) { s.Slip = -time.Second }},
		{"slip past a day", "slip_ns", func(s *fleet.Schedule) { s.Slip = MaxSlip + time.Nanosecond }},
		{"rtt limit", "thresholds.max_rtt_ms", func(s *fleet.Schedule) { s.Thresholds = &fleet.Thresholds{MaxRTTMs: -1} }},
		{"throughput %", "thresholds.min_throughput_pct", func(s *fleet.Schedule) { s.Thresholds = &fleet.Thresholds{MinThroughputPct: 101} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := valid()
			c.edit(&s)
			_, err := Schedule(&s, t0)
			var fe *fleet.FieldError
			if !errors.As(err, &fe) || fe.Field != c.field {
				t.Fatalf("error %v, want a FieldError of %q", err, c.field)
			}
			if strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), c.field+": ") {
				t.Errorf("message %q: want one line after the field", err)
			}
		})
	}
	s := valid()
	s.Start, s.Thresholds = time.Time{}, &fleet.Thresholds{}
	first, err := Schedule(&s, t0.Add(1500*time.Microsecond))
	if err != nil || !s.Start.Equal(t0.Add(time.Millisecond)) || !first.Equal(s.Start) || s.Thresholds != nil {
		t.Errorf("valid: %v, start %v, first %v, thresholds %v: want start now (ms), first at it, empty thresholds dropped", err, s.Start, first, s.Thresholds)
	}
}

func TestNewSchedule(t *testing.T) {
	s := valid()
	s.ID, s.Enabled, s.NextDue = "mine", false, t0.Add(-time.Hour)
	if err := NewSchedule(&s, t0.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if s.ID != "" || !s.Enabled || !s.Created.Equal(t0.Add(-time.Minute)) || !s.NextDue.Equal(t0) {
		t.Errorf("prepared %+v: want no ID, enabled, created now, due at its start", s)
	}
}

// TestScheduleUpdate: what an update keeps, recomputes and refuses.
func TestScheduleUpdate(t *testing.T) {
	old := valid()
	old.ID, old.Created, old.Enabled, old.NextDue = "s1", t0.Add(-time.Hour), true, t0.Add(3*time.Hour)
	now := t0.Add(90 * time.Minute)
	for _, c := range []struct {
		name    string
		old     func(*fleet.Schedule)
		edit    func(*fleet.Schedule)
		want    time.Time // NextDue
		enabled bool
	}{
		{"rename keeps next due", nil, func(s *fleet.Schedule) { s.Name = "renamed" }, t0.Add(3 * time.Hour), true},
		{"zero start keeps start", nil, func(s *fleet.Schedule) { s.Start = time.Time{} }, t0.Add(3 * time.Hour), true},
		{"pause keeps next due", nil, func(s *fleet.Schedule) { s.Enabled = false }, t0.Add(3 * time.Hour), false},
		{"new repeat: next from now", nil, func(s *fleet.Schedule) { s.Repeat = "R/PT15M" }, t0.Add(90 * time.Minute), true},
		{"new start in the future", nil, func(s *fleet.Schedule) { s.Start = t0.Add(5 * time.Hour) }, t0.Add(5 * time.Hour), true},
		{"new start in the past: no catching up", nil, func(s *fleet.Schedule) { s.Start = t0.Add(-10 * time.Minute) }, t0.Add(110 * time.Minute), true},
		{"resume past due: next from now", func(o *fleet.Schedule) { o.Enabled, o.NextDue = false, t0.Add(time.Hour) },
			func(s *fleet.Schedule) { s.Enabled = true }, t0.Add(2 * time.Hour), true},
		{"resume not yet due", func(o *fleet.Schedule) { o.Enabled = false }, func(s *fleet.Schedule) { s.Enabled = true }, t0.Add(3 * time.Hour), true},
		{"paused stays paused", func(o *fleet.Schedule) { o.Enabled, o.NextDue = false, t0.Add(time.Hour) },
			func(s *fleet.Schedule) { s.Enabled = false }, t0.Add(time.Hour), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := old
			if c.old != nil {
				c.old(&o)
			}
			s := o
			s.ID, s.Created, s.NextDue = "other", t0, time.Time{} // the body's: ignored
			c.edit(&s)
			if err := ScheduleUpdate(&s, o, now); err != nil {
				t.Fatal(err)
			}
			if s.ID != "s1" || !s.Created.Equal(old.Created) || !s.NextDue.Equal(c.want) || s.Enabled != c.enabled {
				t.Errorf("updated: id %q created %v next due %v enabled %v; want s1 %v %v %v", s.ID, s.Created, s.NextDue, s.Enabled,
					old.Created, c.want, c.enabled)
			}
		})
	}
	// A finished schedule (R3, all three done) cannot resume.
	o := old
	o.Repeat, o.Enabled, o.NextDue = "R3/PT10M", false, time.Time{}
	s := o
	s.Enabled = true
	var fe *fleet.FieldError
	if err := ScheduleUpdate(&s, o, now); !errors.As(err, &fe) || fe.Field != "enabled" {
		t.Errorf("resuming a finished schedule: %v, want a FieldError of enabled", err)
	}
	s = old
	s.Test.Kind = ""
	if err := ScheduleUpdate(&s, old, now); !errors.As(err, &fe) || fe.Field != "test.kind" {
		t.Errorf("an invalid update: %v, want a FieldError of test.kind", err)
	}
}

func TestAgentName(t *testing.T) {
	for name, want := range map[string]bool{"a": true, "edge-1.lab_2": true, "": false, "-a": false, "a b": false,
		strings.Repeat("a", 63): true, strings.Repeat("a", 64): false} {
		if AgentName(name) != want {
			t.Errorf("AgentName(%q) = %v", name, !want)
		}
	}
}
