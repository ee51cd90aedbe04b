package controller

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// TestUpdateSchedule: PUT /v1/schedules/{id} changes a schedule,
// pauses and resumes it; a resumed schedule whose next occurrence
// passed moves on from now; what create refuses, update refuses, naming
// the field; an absent schedule is 404; a read token may not.
func TestUpdateSchedule(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	var clock atomic.Pointer[time.Time] // the controller's goroutines read it
	set := func(t time.Time) { clock.Store(&t) }
	set(now)
	e := start(t, Config{Now: func() time.Time { return *clock.Load() }})
	s := pairSchedule("a", "b")
	s.Repeat, s.Start = "R/PT1H", now.Add(30*time.Minute)
	s, err := e.admin.CreateSchedule(ctx(t), s)
	if err != nil {
		t.Fatal(err)
	}
	created := s.Created

	th := fleet.Thresholds{MaxRTTMs: 50, MinThroughputPct: 90}
	s.Name, s.Thresholds = "renamed", &th
	got, err := e.admin.UpdateSchedule(ctx(t), s)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "renamed" || got.Thresholds == nil || *got.Thresholds != th || !got.Created.Equal(created) ||
		!got.NextDue.Equal(now.Add(30*time.Minute)) || !got.Enabled {
		t.Errorf("renamed: %+v", got)
	}

	got.Enabled = false // pause
	if got, err = e.admin.UpdateSchedule(ctx(t), got); err != nil || got.Enabled {
		t.Fatalf("paused: %+v, %v", got, err)
	}
	now = now.Add(3 * time.Hour) // the occurrences at 10:30, 11:30, 12:30 pass while paused
	set(now)
	got.Enabled = true
	if got, err = e.admin.UpdateSchedule(ctx(t), got); err != nil || !got.Enabled || !got.NextDue.Equal(now.Add(30*time.Minute)) {
		t.Errorf("resumed at %v: %+v, %v; want enabled, next due 13:30 (not caught up)", now, got, err)
	}
	if read, err := e.admin.Schedule(ctx(t), s.ID); err != nil || read.Name != "renamed" || !read.Enabled {
		t.Errorf("read back %+v, %v", read, err)
	}

	bad := got
	bad.Thresholds = &fleet.Thresholds{MinThroughputPct: 120}
	_, err = e.admin.UpdateSchedule(ctx(t), bad)
	wantStatus(t, "thresholds over 100 %", err, http.StatusBadRequest)
	if err == nil || !strings.Contains(err.Error(), "thresholds.min_throughput_pct: 120") {
		t.Errorf("refusal %v: want it to name thresholds.min_throughput_pct", err)
	}
	bad = got
	bad.Repeat = "every so often"
	_, err = e.admin.UpdateSchedule(ctx(t), bad)
	wantStatus(t, "bad repeat", err, http.StatusBadRequest)

	bad = got
	bad.ID = "0123456789abcdef0123456789abcdef"
	_, err = e.admin.UpdateSchedule(ctx(t), bad)
	wantStatus(t, "absent schedule", err, http.StatusNotFound)

	reader, _ := e.token(fleet.RoleRead)
	_, err = reader.UpdateSchedule(ctx(t), got)
	wantStatus(t, "a read token", err, http.StatusForbidden)
}
