package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// Enrol creates an agent in state new; fleet.ErrExists if the name is
// taken.
func (d *DB) Enrol(ctx context.Context, name string, now time.Time) error {
	if name == "" {
		return errors.New("store: enrolling: an agent needs a name")
	}
	n, err := affected(d.w.ExecContext(ctx, `INSERT INTO agents (name, state, enrolled) VALUES ($1, 'new', $2)
		ON CONFLICT (name) DO NOTHING`, name, ms(now)))
	switch {
	case err != nil:
		return fmt.Errorf("store: enrolling %q: %w", name, err)
	case n == 0:
		return fmt.Errorf("store: enrolling agent %q: %w", name, fleet.ErrExists)
	}
	return nil
}

// Register records what an enrolled agent says of itself, and that it
// was seen at now; a new agent leaves state new.
func (d *DB) Register(ctx context.Context, r fleet.Registration, now time.Time) (fleet.Agent, error) {
	labels, _ := json.Marshal(r.Labels)
	caps, _ := json.Marshal(r.Capabilities)
	addrs, _ := json.Marshal(r.Addresses)
	pending, _ := json.Marshal(nonNilStrings(r.Pending))
	n, err := affected(d.w.ExecContext(ctx, `UPDATE agents SET site = $2, labels = $3, version = $4, capabilities = $5,
		addresses = $6, responder_pin = $7, registered = $8, last_seen = $8, pending = $9,
		state = CASE WHEN state = 'new' THEN '' ELSE state END WHERE name = $1`,
		r.Name, r.Site, string(labels), r.Version, string(caps), string(addrs), r.ResponderPin, ms(now), string(pending)))
	switch {
	case err != nil:
		return fleet.Agent{}, fmt.Errorf("store: registering %q: %w", r.Name, err)
	case n == 0:
		return fleet.Agent{}, notFound("agent", r.Name)
	}
	return d.agent(ctx, d.w, r.Name)
}

// Approve makes the agent's pending addresses dialled and approved (they
// stay approved when it registers again); it returns the agent.
func (d *DB) Approve(ctx context.Context, name string) (fleet.Agent, error) {
	var a fleet.Agent
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		if a, err = scanAgent(tx.QueryRowContext(ctx, `SELECT `+agentCols+` FROM agents WHERE name = $1`, name)); err != nil {
			return err
		}
		a.Addresses = union(a.Addresses, a.PendingAddresses)
		a.ApprovedAddresses = union(a.ApprovedAddresses, a.PendingAddresses)
		a.PendingAddresses = nil
		addrs, _ := json.Marshal(nonNilStrings(a.Addresses))
		approved, _ := json.Marshal(a.ApprovedAddresses)
		_, err = tx.ExecContext(ctx, `UPDATE agents SET addresses = $2, approved = $3, pending = '[]' WHERE name = $1`,
			name, string(addrs), string(approved))
		return err
	})
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fleet.Agent{}, notFound("agent", name)
	case err != nil:
		return fleet.Agent{}, fmt.Errorf("store: approving agent %q: %w", name, err)
	}
	return a, nil
}

// union is a's strings then b's not in a.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Seen records that the agent was heard from at now.
func (d *DB) Seen(ctx context.Context, name string, now time.Time) error {
	n, err := affected(d.w.ExecContext(ctx, `UPDATE agents SET last_seen = $2 WHERE name = $1`, name, ms(now)))
	switch {
	case err != nil:
		return fmt.Errorf("store: agent %q seen: %w", name, err)
	case n == 0:
		return notFound("agent", name)
	}
	return nil
}

const agentCols = `name, site, labels, version, capabilities, addresses, responder_pin, state, enrolled, registered, last_seen, pending, approved`

func scanAgent(row interface{ Scan(...any) error }) (fleet.Agent, error) {
	var (
		a                                          fleet.Agent
		labels, caps, addrs, st, pending, approved string
		enrolled, regd, lastSeen                   int64
	)
	err := row.Scan(&a.Name, &a.Site, &labels, &a.Version, &caps, &addrs, &a.ResponderPin, &st, &enrolled, &regd, &lastSeen, &pending, &approved)
	if err != nil {
		return a, err
	}
	a.State, a.Enrolled, a.Registered, a.LastSeen = fleet.AgentState(st), fromMS(enrolled), fromMS(regd), fromMS(lastSeen)
	err = errors.Join(unmarshal(labels, &a.Labels), unmarshal(caps, &a.Capabilities), unmarshal(addrs, &a.Addresses),
		unmarshal(pending, &a.PendingAddresses), unmarshal(approved, &a.ApprovedAddresses))
	if len(a.PendingAddresses) == 0 {
		a.PendingAddresses = nil
	}
	if len(a.ApprovedAddresses) == 0 {
		a.ApprovedAddresses = nil
	}
	return a, err
}

// unmarshal reads a JSON column; "null" leaves v as it is.
func unmarshal(s string, v any) error {
	if s == "" {
		return nil
	}
	return json.Unmarshal([]byte(s), v)
}

// Agent is the named agent; State is empty unless new or revoked.
func (d *DB) Agent(ctx context.Context, name string) (fleet.Agent, error) {
	return d.agent(ctx, d.r, name)
}

func (d *DB) agent(ctx context.Context, q *sql.DB, name string) (fleet.Agent, error) {
	a, err := scanAgent(q.QueryRowContext(ctx, `SELECT `+agentCols+` FROM agents WHERE name = $1`, name))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fleet.Agent{}, notFound("agent", name)
	case err != nil:
		return fleet.Agent{}, fmt.Errorf("store: agent %q: %w", name, err)
	}
	return a, nil
}

// Agents lists every agent by name.
func (d *DB) Agents(ctx context.Context) ([]fleet.Agent, error) {
	rows, err := d.r.QueryContext(ctx, `SELECT `+agentCols+` FROM agents ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("store: listing agents: %w", err)
	}
	return collect(rows, scanAgent)
}
