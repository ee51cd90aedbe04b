package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/testkit/pgtest"
)

// pg is the PostgreSQL server of this package's tests, started by the
// first test that asks for a database.
var pg = pgtest.New()

func TestMain(m *testing.M) {
	if dsn := os.Getenv(helperEnv); dsn != "" {
		os.Exit(helper(dsn)) // a child of TestTwoProcesses
	}
	code := m.Run()
	pg.Close()
	os.Exit(code)
}

// t0 is the tests' epoch: times are whole milliseconds, as stored.
var t0 = time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)

// dsns are a fresh database of each backend.
var dsns = []struct {
	name string
	dsn  func(t *testing.T) string
}{
	{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "fleet.db") }},
	{"postgres", func(t *testing.T) string { return pg.Database(t) }},
}

// each runs test against a fresh, opened database of each backend.
func each(t *testing.T, test func(t *testing.T, db *DB)) {
	t.Helper()
	for _, b := range dsns {
		t.Run(b.name, func(t *testing.T) { test(t, open(t, b.dsn(t))) })
	}
}

// open opens dsn, closed at the test's end.
func open(t testing.TB, dsn string) *DB {
	t.Helper()
	db, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// must fails the test on err and returns v.
func must[T any](t testing.TB) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t testing.TB, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
}

var ctx = context.Background()

func TestTokens(t *testing.T) {
	each(t, func(t *testing.T, db *DB) {
		admin := must[fleet.Issued](t)(db.IssueToken(ctx, fleet.RoleAdmin, "", "first", t0))
		if !strings.HasPrefix(admin.Secret, "fp_") || len(admin.Secret) != 3+43 {
			t.Errorf("secret %q: want fp_ and 43 base64url characters", admin.Secret)
		}
		_, err := db.IssueToken(ctx, fleet.RoleAgent, "a1", "", t0)
		wantErr(t, err, fleet.ErrNotFound)
		check(t, db.Enrol(ctx, "a1", t0))
		agentTok := must[fleet.Issued](t)(db.IssueToken(ctx, fleet.RoleAgent, "a1", "", t0.Add(time.Second)))
		if _, err := db.IssueToken(ctx, fleet.RoleRead, "a1", "", t0); err == nil {
			t.Error("a read token naming an agent was issued")
		}

		got := must[fleet.Token](t)(db.Authenticate(ctx, admin.Secret))
		if got != admin.Token {
			t.Errorf("authenticated %+v, want %+v", got, admin.Token)
		}
		if got := must[fleet.Token](t)(db.Authenticate(ctx, agentTok.Secret)); got.Agent != "a1" || got.Role != fleet.RoleAgent {
			t.Errorf("agent token authenticated as %+v", got)
		}
		_, err = db.Authenticate(ctx, "fp_unknown")
		wantErr(t, err, fleet.ErrUnauthorized)

		check(t, db.RevokeToken(ctx, agentTok.ID))
		_, err = db.Authenticate(ctx, agentTok.Secret)
		wantErr(t, err, fleet.ErrUnauthorized)
		if a := must[fleet.Agent](t)(db.Agent(ctx, "a1")); a.State != fleet.AgentRevoked {
			t.Errorf("agent of the revoked token: state %q, want revoked", a.State)
		}
		wantErr(t, db.RevokeToken(ctx, "nope"), fleet.ErrNotFound)

		must[fleet.Issued](t)(db.IssueToken(ctx, fleet.RoleAgent, "a1", "again", t0.Add(2*time.Second)))
		if a := must[fleet.Agent](t)(db.Agent(ctx, "a1")); a.State != fleet.AgentNew {
			t.Errorf("agent with a new token: state %q, want new (never registered)", a.State)
		}
		toks := must[[]fleet.Token](t)(db.Tokens(ctx))
		if len(toks) != 3 || toks[0].ID != admin.ID || !toks[1].Revoked || toks[2].Note != "again" {
			t.Errorf("tokens %+v: want 3 oldest first: the admin's, the revoked, the new", toks)
		}
	})
}

func TestAgents(t *testing.T) {
	each(t, func(t *testing.T, db *DB) {
		check(t, db.Enrol(ctx, "b", t0))
		check(t, db.Enrol(ctx, "a", t0))
		wantErr(t, db.Enrol(ctx, "a", t0), fleet.ErrExists)
		if a := must[fleet.Agent](t)(db.Agent(ctx, "a")); a.State != fleet.AgentNew || !a.Enrolled.Equal(t0) {
			t.Errorf("enrolled %+v: want new at %v", a, t0)
		}
		reg := fleet.Registration{Name: "a", Site: "lab", Labels: map[string]string{"rack": "3"}, Version: "v1",
			Capabilities: []string{"tcp", "rtt"}, Addresses: []string{"198.18.0.1:5201"}, ResponderPin: "ab12"}
		a := must[fleet.Agent](t)(db.Register(ctx, reg, t0.Add(time.Minute)))
		if a.State != "" || a.Site != "lab" || a.Labels["rack"] != "3" || len(a.Capabilities) != 2 || a.Addresses[0] != "198.18.0.1:5201" ||
			a.ResponderPin != "ab12" || !a.Registered.Equal(t0.Add(time.Minute)) || !a.LastSeen.Equal(a.Registered) {
			t.Errorf("registered %+v", a)
		}
		_, err := db.Register(ctx, fleet.Registration{Name: "ghost"}, t0)
		wantErr(t, err, fleet.ErrNotFound)
		check(t, db.Seen(ctx, "a", t0.Add(2*time.Minute)))
		wantErr(t, db.Seen(ctx, "ghost", t0), fleet.ErrNotFound)
		a = must[fleet.Agent](t)(db.Agent(ctx, "a"))
		if !a.LastSeen.Equal(t0.Add(2*time.Minute)) || fleet.StateAt(a, t0.Add(4*time.Minute), time.Minute) != fleet.AgentDown {
			t.Errorf("seen: %+v", a)
		}
		_, err = db.Agent(ctx, "ghost")
		wantErr(t, err, fleet.ErrNotFound)
		all := must[[]fleet.Agent](t)(db.Agents(ctx))
		if len(all) != 2 || all[0].Name != "a" || all[1].Name != "b" || all[1].State != fleet.AgentNew {
			t.Errorf("agents %+v", all)
		}
	})
}

func TestSchedules(t *testing.T) {
	each(t, func(t *testing.T, db *DB) {
		s := fleet.Schedule{ID: "ignored", Name: "hourly", Test: fleet.Test{Kind: "tcp", Config: []byte(`{"duration_ns":1000000000}`)},
			From: fleet.Selector{Agents: []string{"a"}}, To: fleet.Selector{Labels: map[string]string{"role": "core"}}, Both: true,
			Repeat: "R/PT1H", Start: t0, Slip: 90 * time.Second, Enabled: true, Created: t0, NextDue: t0.Add(time.Hour)}
		s = must[fleet.Schedule](t)(db.CreateSchedule(ctx, s))
		if len(s.ID) != 32 || s.Slip != 90*time.Second || s.To.Labels["role"] != "core" || string(s.Test.Config) != `{"duration_ns":1000000000}` {
			t.Errorf("created %+v", s)
		}
		once := must[fleet.Schedule](t)(db.CreateSchedule(ctx, fleet.Schedule{Name: "now", Test: fleet.Test{Kind: "rtt"}, Enabled: true, Created: t0.Add(time.Second)}))
		if got := must[fleet.Schedule](t)(db.Schedule(ctx, s.ID)); got.Name != "hourly" || !got.NextDue.Equal(t0.Add(time.Hour)) {
			t.Errorf("read back %+v", got)
		}
		due := must[[]fleet.Schedule](t)(db.DueSchedules(ctx, t0.Add(time.Minute)))
		if len(due) != 1 || due[0].ID != once.ID {
			t.Errorf("due at +1m: %+v, want only %q (zero NextDue: due at once)", due, once.Name)
		}
		if due := must[[]fleet.Schedule](t)(db.DueSchedules(ctx, t0.Add(time.Hour+time.Millisecond))); len(due) != 2 {
			t.Errorf("due at +1h: %d, want 2", len(due))
		}
		check(t, db.SetNextDue(ctx, once.ID, time.Time{}, false))
		check(t, db.SetNextDue(ctx, s.ID, t0.Add(2*time.Hour), true))
		wantErr(t, db.SetNextDue(ctx, "nope", t0, true), fleet.ErrNotFound)
		if due := must[[]fleet.Schedule](t)(db.DueSchedules(ctx, t0.Add(time.Hour+time.Millisecond))); len(due) != 0 {
			t.Errorf("due after moving on: %+v, want none", due)
		}

		// Deleting cancels the schedule's scheduled runs, not its running ones.
		r1 := must[fleet.Run](t)(db.Book(ctx, run("a", "b", t0, time.Minute, true, s.ID), t0.Add(time.Hour)))
		r2 := must[fleet.Run](t)(db.Book(ctx, run("a", "b", t0, time.Minute, true, s.ID), t0.Add(time.Hour)))
		must[bool](t)(db.SetRunState(ctx, r2.ID, []fleet.RunState{fleet.RunScheduled}, fleet.RunRunning, "", t0))
		check(t, db.DeleteSchedule(ctx, s.ID, t0))
		wantErr(t, db.DeleteSchedule(ctx, s.ID, t0), fleet.ErrNotFound)
		_, err := db.Schedule(ctx, s.ID)
		wantErr(t, err, fleet.ErrNotFound)
		if r := must[fleet.Run](t)(db.Run(ctx, r1.ID)); r.State != fleet.RunCancelled {
			t.Errorf("scheduled run of a deleted schedule: %s, want cancelled", r.State)
		}
		if r := must[fleet.Run](t)(db.Run(ctx, r2.ID)); r.State != fleet.RunRunning {
			t.Errorf("running run of a deleted schedule: %s, want running", r.State)
		}
		if all := must[[]fleet.Schedule](t)(db.Schedules(ctx)); len(all) != 1 || all[0].ID != once.ID {
			t.Errorf("schedules %+v", all)
		}
	})
}

// run is a run to book from src to dst of length d from start.
func run(src, dst string, start time.Time, d time.Duration, exclusive bool, schedule string) fleet.Run {
	return fleet.Run{ScheduleID: schedule, Source: src, Dest: dst, Test: fleet.Test{Kind: "tcp"}, Exclusive: exclusive,
		Start: start, End: start.Add(d), Created: t0}
}

func TestUpdateSchedule(t *testing.T) {
	each(t, func(t *testing.T, db *DB) {
		s := must[fleet.Schedule](t)(db.CreateSchedule(ctx, fleet.Schedule{Name: "hourly", Test: fleet.Test{Kind: "tcp"},
			From: fleet.Selector{Agents: []string{"a"}}, To: fleet.Selector{Agents: []string{"b"}}, Repeat: "R/PT1H",
			Start: t0, Enabled: true, Created: t0, NextDue: t0.Add(time.Hour)}))
		if s.Thresholds != nil {
			t.Errorf("created without thresholds, read back %+v", *s.Thresholds)
		}
		want := fleet.Thresholds{MinThroughputPct: 90, MaxRTTMs: 50, MaxLossPct: 1, FailVerdict: true}
		u := s
		u.Name, u.Test, u.Both, u.Repeat, u.Slip, u.Enabled = "daily", fleet.Test{Kind: "rtt", Config: []byte(`{"count":5}`)}, true, "R/P1D", time.Minute, false
		u.NextDue, u.Thresholds = t0.Add(24*time.Hour), &want
		u.Created = t0.Add(time.Hour) // not changed
		got := must[fleet.Schedule](t)(db.UpdateSchedule(ctx, u))
		if got.ID != s.ID || !got.Created.Equal(t0) || got.Name != "daily" || got.Test.Kind != "rtt" || string(got.Test.Config) != `{"count":5}` ||
			!got.Both || got.Repeat != "R/P1D" || got.Slip != time.Minute || got.Enabled || !got.NextDue.Equal(t0.Add(24*time.Hour)) {
			t.Errorf("updated %+v", got)
		}
		if got = must[fleet.Schedule](t)(db.Schedule(ctx, s.ID)); got.Thresholds == nil || *got.Thresholds != want {
			t.Errorf("thresholds read back %+v, want %+v", got.Thresholds, want)
		}
		u.Thresholds = nil
		if got = must[fleet.Schedule](t)(db.UpdateSchedule(ctx, u)); got.Thresholds != nil {
			t.Errorf("thresholds removed, read back %+v", *got.Thresholds)
		}
		// Compare and set on NextDue: refused once it moved on.
		u.Name = "swapped"
		if got, ok := must2(t)(db.SwapSchedule(ctx, u, t0)); ok || got.Name != "daily" {
			t.Errorf("swap from a stale next due: %v, %q; want refused, unchanged", ok, got.Name)
		}
		if got, ok := must2(t)(db.SwapSchedule(ctx, u, t0.Add(24*time.Hour))); !ok || got.Name != "swapped" {
			t.Errorf("swap from the next due: %v, %q; want swapped", ok, got.Name)
		}
		u.ID = "nope"
		_, err := db.UpdateSchedule(ctx, u)
		wantErr(t, err, fleet.ErrNotFound)
		_, _, err = db.SwapSchedule(ctx, u, t0)
		wantErr(t, err, fleet.ErrNotFound)
	})
}

// must2 fails the test on err and returns the two values.
func must2(t testing.TB) func(s fleet.Schedule, ok bool, err error) (fleet.Schedule, bool) {
	return func(s fleet.Schedule, ok bool, err error) (fleet.Schedule, bool) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s, ok
	}
}

// TestApprove: pending addresses stay out of the dialled ones until
// Approve, which moves them in and keeps them approved; a later
// registration's pending list replaces the last; an unknown agent is
// ErrNotFound.
func TestApprove(t *testing.T) {
	each(t, func(t *testing.T, db *DB) {
		check(t, db.Enrol(ctx, "a", t0))
		reg := fleet.Registration{Name: "a", Version: "v1", Addresses: []string{"198.18.0.1:5201"}, Pending: []string{"203.0.113.7:5201"}}
		a := must[fleet.Agent](t)(db.Register(ctx, reg, t0))
		if !slices.Equal(a.Addresses, reg.Addresses) || !slices.Equal(a.PendingAddresses, reg.Pending) || a.ApprovedAddresses != nil {
			t.Fatalf("registered: dialled %v, pending %v, approved %v", a.Addresses, a.PendingAddresses, a.ApprovedAddresses)
		}
		a = must[fleet.Agent](t)(db.Approve(ctx, "a"))
		want := []string{"198.18.0.1:5201", "203.0.113.7:5201"}
		if !slices.Equal(a.Addresses, want) || a.PendingAddresses != nil || !slices.Equal(a.ApprovedAddresses, []string{"203.0.113.7:5201"}) {
			t.Errorf("approved: dialled %v, pending %v, approved %v", a.Addresses, a.PendingAddresses, a.ApprovedAddresses)
		}
		reg.Pending = nil
		a = must[fleet.Agent](t)(db.Register(ctx, reg, t0))
		if a.PendingAddresses != nil || !slices.Equal(a.ApprovedAddresses, []string{"203.0.113.7:5201"}) {
			t.Errorf("registered again: pending %v, approved %v", a.PendingAddresses, a.ApprovedAddresses)
		}
		_, err := db.Approve(ctx, "ghost")
		wantErr(t, err, fleet.ErrNotFound)
	})
}
