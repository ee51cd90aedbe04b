package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// secretPrefix starts every token's secret.
const secretPrefix = "fp_"

// hashSecret is the secret's SHA-256 in hex: all the store keeps of it.
func hashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// IssueToken stores a new token's hash and returns it with its secret,
// "fp_" and 32 random bytes in unpadded base64url. An agent token needs
// its agent enrolled (fleet.ErrNotFound), and gives a revoked agent its
// standing back; other roles take no agent.
func (d *DB) IssueToken(ctx context.Context, role fleet.Role, agent, note string, now time.Time) (fleet.Issued, error) {
	switch {
	case role != fleet.RoleRead && role != fleet.RoleOperate && role != fleet.RoleAdmin && role != fleet.RoleAgent:
		return fleet.Issued{}, fmt.Errorf("store: token role %q: want read, operate, admin or agent", role)
	case role == fleet.RoleAgent && agent == "":
		return fleet.Issued{}, errors.New("store: an agent token names its agent")
	case role != fleet.RoleAgent && agent != "":
		return fleet.Issued{}, fmt.Errorf("store: a %s token names no agent (got %q)", role, agent)
	}
	is := fleet.Issued{
		Token:  fleet.Token{ID: newID(), Role: role, Agent: agent, Note: note, Created: fromMS(ms(now))},
		Secret: secretPrefix + base64.RawURLEncoding.EncodeToString(random(32)),
	}
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		var agentCol any
		if agent != "" {
			agentCol = agent
			n, err := affected(tx.ExecContext(ctx, `UPDATE agents SET state = CASE WHEN registered = 0 THEN 'new' ELSE '' END
				WHERE name = $1 AND state = 'revoked'`, agent))
			if err != nil {
				return err
			}
			if n == 0 {
				if err := tx.QueryRowContext(ctx, `SELECT name FROM agents WHERE name = $1`, agent).Scan(&agent); errors.Is(err, sql.ErrNoRows) {
					return notFound("agent", agent)
				} else if err != nil {
					return err
				}
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO tokens (id, hash, role, agent, note, created) VALUES ($1, $2, $3, $4, $5, $6)`,
			is.ID, hashSecret(is.Secret), string(role), agentCol, note, ms(now))
		return err
	})
	if err != nil {
		return fleet.Issued{}, fmt.Errorf("store: issuing a %s token: %w", role, err)
	}
	return is, nil
}

const tokenCols = `id, role, COALESCE(agent, ''), note, created, revoked`

func scanToken(row interface{ Scan(...any) error }) (fleet.Token, error) {
	var (
		t       fleet.Token
		role    string
		created int64
	)
	err := row.Scan(&t.ID, &role, &t.Agent, &t.Note, &created, &t.Revoked)
	t.Role, t.Created = fleet.Role(role), fromMS(created)
	return t, err
}

// Authenticate finds the live token whose secret this is: one lookup by
// the secret's hash (unique index).
func (d *DB) Authenticate(ctx context.Context, secret string) (fleet.Token, error) {
	t, err := scanToken(d.r.QueryRowContext(ctx, `SELECT `+tokenCols+` FROM tokens WHERE hash = $1`, hashSecret(secret)))
	switch {
	case errors.Is(err, sql.ErrNoRows) || err == nil && t.Revoked:
		return fleet.Token{}, fleet.ErrUnauthorized
	case err != nil:
		return fleet.Token{}, fmt.Errorf("store: authenticating: %w", err)
	}
	return t, nil
}

// RevokeToken revokes a token; an agent whose last live token it was
// becomes revoked.
func (d *DB) RevokeToken(ctx context.Context, id string) error {
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		var agent sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT agent FROM tokens WHERE id = $1`, id).Scan(&agent)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("token", id)
		} else if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tokens SET revoked = TRUE WHERE id = $1`, id); err != nil || !agent.Valid {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE agents SET state = 'revoked' WHERE name = $1
			AND NOT EXISTS (SELECT 1 FROM tokens WHERE agent = $1 AND NOT revoked)`, agent.String)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: revoking: %w", err)
	}
	return nil
}

// Tokens lists every token, oldest first.
func (d *DB) Tokens(ctx context.Context) ([]fleet.Token, error) {
	rows, err := d.r.QueryContext(ctx, `SELECT `+tokenCols+` FROM tokens ORDER BY created, id`)
	if err != nil {
		return nil, fmt.Errorf("store: listing tokens: %w", err)
	}
	return collect(rows, scanToken)
}

// collect scans every row with scan, and closes rows.
func collect[T any](rows *sql.Rows, scan func(interface{ Scan(...any) error }) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
