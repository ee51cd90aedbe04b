// Package fleet is the fleet's contract: the documents a controller, its
// agents and its operators exchange over the HTTP JSON API
// (docs/openapi.yaml), and the Store the controller keeps them in.
// It holds no logic beyond checking what comes in.
//
// Words: an agent is a test host that dials out to the controller; a
// schedule says which agents test which (a pair or a mesh), with what
// test and config, once or repeating; a run is one test of one schedule
// between a source agent (the tester) and a destination agent (whose
// responder it tests against) in one time slot; a result is the run's
// document (package result), uploaded once.
package fleet

import (
	"encoding/json"
	"time"
)

// APIVersion prefixes every API path: /v1/...
const APIVersion = "v1"

// Role is what a token may do. Each role includes the ones before it:
// read < operate < admin. Agent tokens are separate: they act only as
// their agent.
type Role string

// Roles.
const (
	RoleRead    Role = "read"    // list and read agents, schedules, runs, results
	RoleOperate Role = "operate" // and create, change and delete schedules, cancel runs
	RoleAdmin   Role = "admin"   // and enrol agents, issue and revoke tokens
	RoleAgent   Role = "agent"   // an agent: register, heartbeat, report its runs
)

// Token is an API or agent token as the controller lists it: never the
// secret itself, which is shown once, when issued.
type Token struct {
	ID      string    `json:"id"`
	Role    Role      `json:"role"`
	Agent   string    `json:"agent,omitempty"` // the agent an agent token acts as
	Note    string    `json:"note,omitempty"`
	Created time.Time `json:"created"`
	Revoked bool      `json:"revoked,omitempty"`
}

// Issued is a new token with its secret, shown once.
type Issued struct {
	Token
	Secret string `json:"secret"` // "fp_" + random; the controller keeps only its SHA-256
}

// Registration is what an agent says of itself when it connects.
type Registration struct {
	Name         string            `json:"name"` // must be the agent its token was issued for
	Site         string            `json:"site,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	Version      string            `json:"version"`
	Capabilities []string          `json:"capabilities"`            // the test kinds it runs (kinds.Names: "tcp", "rfc6349", ...)
	Addresses    []string          `json:"addresses"`               // host:port of its responder, as its peers should dial it
	ResponderPin string            `json:"responder_pin,omitempty"` // SHA-256 of its responder's TLS certificate (hex), when TLS
	// Pending are the advertised addresses its peers do not dial yet:
	// neither the address the agent connects from nor approved by an
	// admin. The controller sets it; an agent cannot (not in JSON).
	Pending []string `json:"-"`
}

// AgentState is whether an agent is heard from.
type AgentState string

// Agent states.
const (
	AgentUp      AgentState = "up"      // heard from within DownAfter
	AgentDown    AgentState = "down"    // enrolled, registered once, silent for longer
	AgentNew     AgentState = "new"     // enrolled, never registered
	AgentRevoked AgentState = "revoked" // its token revoked
)

// Agent is an agent as the controller knows it.
type Agent struct {
	Registration
	// PendingAddresses are advertised addresses waiting for an admin's
	// approval (Registration.Pending); ApprovedAddresses those an admin
	// approved, which stay approved when the agent registers again.
	PendingAddresses  []string   `json:"pending_addresses,omitempty"`
	ApprovedAddresses []string   `json:"approved_addresses,omitempty"`
	State             AgentState `json:"state"`
	Enrolled          time.Time  `json:"enrolled"`
	Registered        time.Time  `json:"registered,omitzero"` // last registration
	LastSeen          time.Time  `json:"last_seen,omitzero"`
}

// Heartbeat is an agent's periodic word: what it runs now, and what it
// holds finished but not yet uploaded.
type Heartbeat struct {
	Running []string `json:"running,omitempty"` // run IDs
	Pending int      `json:"pending,omitempty"` // results on disk not yet acknowledged
}

// Orders is the controller's answer to a heartbeat: the runs this agent
// starts as source in the coming window, and the runs its responder must
// accept as destination (with the per-run key the source will prove).
type Orders struct {
	Now       time.Time     `json:"now"`                 // the controller's clock, to warn of skew
	Interval  time.Duration `json:"interval_ns"`         // next heartbeat in
	Runs      []Assignment  `json:"runs,omitempty"`      // as source
	Accept    []Accept      `json:"accept,omitempty"`    // as destination
	Cancelled []string      `json:"cancelled,omitempty"` // run IDs to stop
}

// Assignment is one run for its source agent.
type Assignment struct {
	Run
	Target    string `json:"target"`               // the destination's responder, host:port
	TargetPin string `json:"target_pin,omitempty"` // its TLS pin, when TLS
	Secret    []byte `json:"key"`                  // the run's secret (base64 in JSON), proved to the responder
}

// Accept is a run this agent's responder accepts from its source.
type Accept struct {
	RunID  string    `json:"run_id"`
	Source string    `json:"source"`
	Key    []byte    `json:"key"`
	Start  time.Time `json:"start"` // the key is taken in [Start, End)
	End    time.Time `json:"end"`
}

// Test is what a schedule runs: a kind and its config (the result
// package's config of that kind, as JSON).
type Test struct {
	Kind   string          `json:"kind"`             // "tcp", "udp", "rtt", "mtu", "trains", "rfc6349", "sweep-window", "sweep-msglen", "ping", "stamp", "rfc2544", "y1564"
	Config json.RawMessage `json:"config,omitempty"` // e.g. {"duration_ns": 10000000000}; empty: the kind's defaults
}

// Selector picks agents: by name, or by labels (every label must match),
// or by site. An empty selector picks none.
type Selector struct {
	Agents []string          `json:"agents,omitempty"`
	Site   string            `json:"site,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
}

// Schedule is a test between agents, once or repeating.
type Schedule struct {
	ID      string        `json:"id"`
	Name    string        `json:"name"`
	Test    Test          `json:"test"`
	From    Selector      `json:"from"`              // sources (testers)
	To      Selector      `json:"to"`                // destinations (responders)
	Both    bool          `json:"both,omitempty"`    // also every To → every From
	Repeat  string        `json:"repeat,omitempty"`  // "": once; ISO 8601 ("R/PT1H", "R5/2026-11-24T10:00:00Z/PT15M") or cron ("*/15 * * * *", UTC)
	Start   time.Time     `json:"start,omitzero"`    // not before; zero: now
	Slip    time.Duration `json:"slip_ns,omitempty"` // each run starts up to this much later, at random
	Enabled bool          `json:"enabled"`
	Created time.Time     `json:"created"`
	NextDue time.Time     `json:"next_due,omitzero"` // the next occurrence not yet booked
	// Thresholds judge each result of this schedule (ok or alert); nil:
	// none, results are not judged.
	Thresholds *Thresholds `json:"thresholds,omitempty"`
}

// RunState is where a run is in its life.
type RunState string

// Run states. scheduled → running → finished | failed; scheduled → missed
// (its slot passed unstarted) or cancelled.
const (
	RunScheduled RunState = "scheduled"
	RunRunning   RunState = "running"
	RunFinished  RunState = "finished"
	RunFailed    RunState = "failed"
	RunMissed    RunState = "missed"
	RunCancelled RunState = "cancelled"
)

// Run is one test of a schedule between two agents in one slot.
type Run struct {
	ID         string    `json:"id"`
	ScheduleID string    `json:"schedule_id,omitempty"`
	Source     string    `json:"source"`
	Dest       string    `json:"dest"`
	Test       Test      `json:"test"`
	Exclusive  bool      `json:"exclusive"` // throughput-type: no other exclusive run touches Source or Dest in [Start, End)
	Start      time.Time `json:"start"`     // the slot: the run starts at Start and is stopped at End
	End        time.Time `json:"end"`
	State      RunState  `json:"state"`
	Error      string    `json:"error,omitempty"`
	Created    time.Time `json:"created"`
	Started    time.Time `json:"started,omitzero"`
	Finished   time.Time `json:"finished,omitzero"`
	// Occurrence is the schedule's occurrence the run is of (its due
	// time, before any slip); zero for a run of no schedule.
	Occurrence time.Time `json:"occurrence,omitzero"`
	Key        []byte    `json:"-"` // the run's secret: only its two agents are told it
}

// Result is a run's uploaded document with its headline figures.
type Result struct {
	RunID      string    `json:"run_id"`
	ScheduleID string    `json:"schedule_id,omitempty"` // the run's schedule, when it had one
	Source     string    `json:"source"`
	Dest       string    `json:"dest"`
	Kind       string    `json:"kind"`
	Received   time.Time `json:"received"`
	Figures    Figures   `json:"figures"`
	// Health is the result judged by its schedule's thresholds when it
	// was stored ("" when the schedule has none); PreviousHealth is the
	// same of the pair's previous result of that schedule and kind, so a
	// change of state is Health != PreviousHealth with both set.
	Health         Health          `json:"health,omitempty"`
	PreviousHealth Health          `json:"previous_health,omitempty"`
	Doc            json.RawMessage `json:"doc,omitempty"` // the result package's document; absent from figure-only lists
}

// Verdicts a document's figures may carry besides its method's own words
// (the trains' and the single-ended verdicts): a bounded set.
const (
	VerdictPass    = "pass"
	VerdictFail    = "fail"
	VerdictPartial = "partial"
)

// Figures are a result's headline numbers, for listing, metrics and
// the web page; absent ones are omitted. The plain fields are the up
// direction (source to destination), or the only one; the Down fields
// the other way, when the test measured both.
type Figures struct {
	ThroughputBps  float64 `json:"throughput_bps,omitempty"`   // TCP goodput (up, or the only direction)
	IdealBps       float64 `json:"ideal_bps,omitempty"`        // the ideal TCP rate the test compared it with (RFC 6349), when known
	RTTMs          float64 `json:"rtt_ms,omitempty"`           // minimum or baseline RTT, idle
	RTTLoadedMs    float64 `json:"rtt_loaded_ms,omitempty"`    // RTT under the test's load (up), when measured
	LossPct        float64 `json:"loss_pct,omitempty"`         // UDP or retransmission loss
	BufferDelayPct float64 `json:"buffer_delay_pct,omitempty"` // RFC 6349 buffer delay
	Verdict        string  `json:"verdict,omitempty"`          // pass, fail, partial, ...
	Partial        bool    `json:"partial,omitempty"`
	// Implausible says why these figures cannot be a path's (an RTT
	// above any path's, a negative delay): stored as the agent sent
	// them, shown, and never used to book runs.
	Implausible string `json:"implausible,omitempty"`

	DownThroughputBps  float64 `json:"down_throughput_bps,omitempty"`
	DownIdealBps       float64 `json:"down_ideal_bps,omitempty"` // when it differs from IdealBps (RFC 6349 on an asymmetric path)
	DownRTTLoadedMs    float64 `json:"down_rtt_loaded_ms,omitempty"`
	DownLossPct        float64 `json:"down_loss_pct,omitempty"`
	DownBufferDelayPct float64 `json:"down_buffer_delay_pct,omitempty"`
}

// Direction is one direction's figures, as thresholds judge them.
type Direction struct {
	ThroughputBps, IdealBps, RTTMs, RTTLoadedMs, LossPct, BufferDelayPct float64
	Verdict                                                              string
}

// Up is the up (or only) direction's figures.
func (f Figures) Up() Direction {
	return Direction{f.ThroughputBps, f.IdealBps, f.RTTMs, f.RTTLoadedMs, f.LossPct, f.BufferDelayPct, f.Verdict}
}

// Down is the down direction's figures; ok is false when the test did
// not measure that way.
func (f Figures) Down() (d Direction, ok bool) {
	if f.DownThroughputBps == 0 && f.DownLossPct == 0 && f.DownBufferDelayPct == 0 && f.DownRTTLoadedMs == 0 {
		return Direction{}, false
	}
	ideal := f.IdealBps
	if f.DownIdealBps > 0 {
		ideal = f.DownIdealBps
	}
	return Direction{f.DownThroughputBps, ideal, f.RTTMs, f.DownRTTLoadedMs, f.DownLossPct, f.DownBufferDelayPct, f.Verdict}, true
}

// Upload is what an agent sends when a run ends: the document, or the
// error that ended it without one. Uploads are idempotent by run ID.
type Upload struct {
	State RunState        `json:"state"` // finished or failed
	Error string          `json:"error,omitempty"`
	Doc   json.RawMessage `json:"doc,omitempty"`
}

// Event is one line of a run's live progress, as an agent streams it.
type Event struct {
	RunID string          `json:"run_id"`
	Seq   int             `json:"seq"`
	Time  time.Time       `json:"time"`
	Event json.RawMessage `json:"event"` // a method.Event as JSON
}

// Busy says how busy an agent is: its exclusive slots in a window and
// when it is next free.
type Busy struct {
	Agent    string    `json:"agent"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	Slots    []Slot    `json:"slots"`
	Fraction float64   `json:"fraction"` // of [From, To) taken by exclusive runs
	NextFree time.Time `json:"next_free"`
}

// Slot is one booked run as Busy lists it.
type Slot struct {
	RunID     string    `json:"run_id"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Exclusive bool      `json:"exclusive"`
}

// Error is the API's one error shape.
type Error struct {
	Error string `json:"error"` // one clear line
}

// Enrolment asks the controller to enrol an agent (POST /v1/agents); the
// answer is the agent's token, Issued once.
type Enrolment struct {
	Name string `json:"name"`
	Note string `json:"note,omitempty"`
}

// TokenRequest asks for an API token of a role (POST /v1/tokens): read,
// operate or admin. Agent tokens come from enrolment.
type TokenRequest struct {
	Role Role   `json:"role"`
	Note string `json:"note,omitempty"`
}

// Stored answers an upload: true when this upload stored the result,
// false when the same one was already stored (a retry).
type Stored struct {
	Stored bool `json:"stored"`
}

// Picks says whether s picks agent a: by name, or its site, or every
// one of its labels.
func (s Selector) Picks(a Agent) bool {
	for _, n := range s.Agents {
		if n == a.Name {
			return true
		}
	}
	if s.Site != "" && s.Site == a.Site {
		return true
	}
	if len(s.Labels) == 0 {
		return false
	}
	for k, v := range s.Labels {
		if a.Labels[k] != v {
			return false
		}
	}
	return true
}

// Allows says whether role r may do what need asks: read < operate <
// admin; an agent token acts only as its agent, never as an operator.
func (r Role) Allows(need Role) bool {
	rank := map[Role]int{RoleRead: 1, RoleOperate: 2, RoleAdmin: 3}
	return r != RoleAgent && rank[r] >= rank[need] && rank[need] > 0
}
