package fleet

import (
	"context"
	"errors"
	"time"
)

// Errors a Store returns (wrapped, with what was asked).
var (
	ErrNotFound     = errors.New("not found")
	ErrExists       = errors.New("already exists")
	ErrNoSlot       = errors.New("no free slot before the horizon")
	ErrUnauthorized = errors.New("unknown or revoked token")
	ErrConflict     = errors.New("conflicts with what is stored") // e.g. a second, different upload for one run
	ErrBooked       = errors.New("this occurrence's run of this pair is booked already")
)

// RunFilter narrows Runs; zero fields do not filter. Runs come newest
// slot first, at most Limit (default 100, at most 10,000).
type RunFilter struct {
	Agent    string // as source or destination
	Schedule string
	States   []RunState
	From, To time.Time // slots starting in [From, To)
	Limit    int
}

// ResultFilter narrows Results; zero fields do not filter. Newest first,
// at most Limit (default 100, at most 10,000).
type ResultFilter struct {
	Source, Dest, Kind string
	Schedule           string
	Since, Until       time.Time // received in [Since, Until)
	Limit              int
	NoDoc              bool // figures only: leave Doc empty (a history of thousands of results)
}

// Store keeps the fleet: tokens, agents, schedules, runs, results, run
// events and the scheduler's lease. Package store implements it on
// SQLite (one file, the default) and PostgreSQL (to scale out: several
// controllers share one database). Every method is safe for concurrent
// use by many goroutines and many processes on one database; times are
// stored to the millisecond, in UTC.
type Store interface {
	Close() error

	// IssueToken stores a new token (only its hash) and returns it with
	// its secret. An agent token names its agent, which must be enrolled.
	IssueToken(ctx context.Context, role Role, agent, note string, now time.Time) (Issued, error)
	// Authenticate finds a live token by its secret; ErrUnauthorized
	// when unknown or revoked.
	Authenticate(ctx context.Context, secret string) (Token, error)
	RevokeToken(ctx context.Context, id string) error
	Tokens(ctx context.Context) ([]Token, error)

	// Enrol creates an agent (state new); ErrExists if the name is taken.
	Enrol(ctx context.Context, name string, now time.Time) error
	// Register records what a connecting agent says of itself, and that
	// it was seen at now.
	Register(ctx context.Context, r Registration, now time.Time) (Agent, error)
	// Approve makes an agent's pending addresses dialled, and approved
	// for its later registrations.
	Approve(ctx context.Context, name string) (Agent, error)
	Seen(ctx context.Context, name string, now time.Time) error
	// Agent and Agents leave State empty unless the agent is new or
	// revoked: StateAt decides up or down.
	Agent(ctx context.Context, name string) (Agent, error)
	Agents(ctx context.Context) ([]Agent, error)

	// CreateSchedule stores s with a new ID (s.ID is ignored).
	CreateSchedule(ctx context.Context, s Schedule) (Schedule, error)
	Schedule(ctx context.Context, id string) (Schedule, error)
	Schedules(ctx context.Context) ([]Schedule, error)
	// UpdateSchedule replaces what an operator may change of the stored
	// schedule s.ID (name, test, selectors, both, repeat, start, slip,
	// enabled, next due, thresholds), keeping its ID and Created;
	// ErrNotFound when there is none. Runs already booked stay.
	UpdateSchedule(ctx context.Context, s Schedule) (Schedule, error)
	// DeleteSchedule removes it and cancels its runs not yet started.
	DeleteSchedule(ctx context.Context, id string, now time.Time) error
	// DueSchedules are the enabled schedules whose NextDue is before until.
	DueSchedules(ctx context.Context, until time.Time) ([]Schedule, error)
	// SetNextDue moves a schedule on (disabled once exhausted).
	SetNextDue(ctx context.Context, id string, next time.Time, enabled bool) error
	// SwapSchedule is UpdateSchedule only while the stored NextDue is
	// still prev (compare and set); false, nil when it had moved. An
	// operator's update, prepared from the schedule as read, then never
	// undoes an occurrence a scheduler claimed in between (which would
	// book it twice).
	SwapSchedule(ctx context.Context, s Schedule, prev time.Time) (Schedule, bool, error)
	// AdvanceSchedule sets NextDue to next (and Enabled to enabled) only
	// while NextDue is still from (compare and set); false, nil when
	// another moved it first. A scheduler claims an occurrence with it,
	// so that two schedulers (an old lease holder that has not yet
	// noticed it lost the lease, and its successor) never both claim
	// one occurrence.
	AdvanceSchedule(ctx context.Context, id string, from, next time.Time, enabled bool) (bool, error)

	// Book stores r in the earliest slot of r's length (r.End - r.Start)
	// that starts at or after r.Start and before horizon in which, when
	// r is exclusive, no other exclusive run of its source or its
	// destination (scheduled or running) overlaps. It is atomic: two
	// Books racing, in one process or two, never produce overlapping
	// exclusive runs. It assigns r's ID and returns r as stored;
	// ErrNoSlot when there is none before horizon. A run of a schedule's
	// occurrence (r.Occurrence set) is booked once per source and
	// destination: ErrBooked for the second, so that a scheduler that
	// books an occurrence before it claims it (and died in between) may
	// book it again.
	Book(ctx context.Context, r Run, horizon time.Time) (Run, error)
	Run(ctx context.Context, id string) (Run, error)
	Runs(ctx context.Context, f RunFilter) ([]Run, error)
	// SetRunState moves a run from one of from to to (compare and set):
	// false when it was in none of them. It stamps Started (running) or
	// Finished (finished, failed) with now.
	SetRunState(ctx context.Context, id string, from []RunState, to RunState, errText string, now time.Time) (bool, error)
	// MissRuns marks scheduled runs whose slot ended before now missed.
	MissRuns(ctx context.Context, now time.Time) (int, error)
	// Slots are an agent's scheduled and running runs overlapping [from, to).
	Slots(ctx context.Context, agent string, from, to time.Time) ([]Slot, error)

	// PutResult stores a run's result once: a second upload of the same
	// document is not stored again (false, nil); a different one is
	// ErrConflict.
	PutResult(ctx context.Context, r Result) (stored bool, err error)
	Result(ctx context.Context, runID string) (Result, error)
	Results(ctx context.Context, f ResultFilter) ([]Result, error)
	// Latest is the newest result of each (source, dest, kind), of one
	// schedule's results or, with schedule "", of all; without Doc.
	Latest(ctx context.Context, schedule string) ([]Result, error)

	// AddEvents appends a run's progress; an event already stored (same
	// run and Seq) is skipped.
	AddEvents(ctx context.Context, es []Event) error
	// Events are the run's events after afterSeq, in order, at most
	// limit (> 0); EventsSize how many it has and their JSON's length.
	Events(ctx context.Context, runID string, afterSeq, limit int) ([]Event, error)
	EventsSize(ctx context.Context, runID string) (n int, chars int64, err error)

	// Lease takes or renews the named lease for holder until now+ttl when
	// it is free, expired or already holder's; false when another holds it.
	Lease(ctx context.Context, name, holder string, ttl time.Duration, now time.Time) (bool, error)
}

// StateAt is an agent's state at now: new and revoked as stored, else up
// when last seen within downAfter, down otherwise.
func StateAt(a Agent, now time.Time, downAfter time.Duration) AgentState {
	switch {
	case a.State == AgentNew || a.State == AgentRevoked:
		return a.State
	case now.Sub(a.LastSeen) <= downAfter:
		return AgentUp
	}
	return AgentDown
}
