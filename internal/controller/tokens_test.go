package controller

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// TestTokenCache: a token the store accepted is taken again for
// tokenTTL without the store; a revocation made elsewhere (straight in
// the store, as another replica would) holds once that has passed, and
// one made here (forget) at once; unknown tokens are never cached.
func TestTokenCache(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t)
	now := time.Unix(1_800_000_000, 0)
	iss, err := st.IssueToken(ctx, fleet.RoleRead, "", "", now)
	if err != nil {
		t.Fatal(err)
	}
	var k tokens
	if got, err := k.authenticate(ctx, st, iss.Secret, now); err != nil || got.ID != iss.ID {
		t.Fatalf("first: %v, %v", got, err)
	}
	if err := st.RevokeToken(ctx, iss.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := k.authenticate(ctx, st, iss.Secret, now.Add(tokenTTL/2)); err != nil {
		t.Errorf("within tokenTTL of its acceptance: %v; want the cached token", err)
	}
	if _, err := k.authenticate(ctx, st, iss.Secret, now.Add(tokenTTL)); !errors.Is(err, fleet.ErrUnauthorized) {
		t.Errorf("tokenTTL after a revocation elsewhere: %v; want ErrUnauthorized", err)
	}
	other, _ := st.IssueToken(ctx, fleet.RoleRead, "", "", now)
	if _, err := k.authenticate(ctx, st, other.Secret, now); err != nil {
		t.Fatal(err)
	}
	_ = st.RevokeToken(ctx, other.ID)
	k.forget(other.ID)
	if _, err := k.authenticate(ctx, st, other.Secret, now); !errors.Is(err, fleet.ErrUnauthorized) {
		t.Errorf("after forget: %v; want ErrUnauthorized at once", err)
	}
	_, err = k.authenticate(ctx, st, "fp_nosuch", now)
	if _, cached := k.m[sha256.Sum256([]byte("fp_nosuch"))]; !errors.Is(err, fleet.ErrUnauthorized) || cached {
		t.Errorf("unknown token: %v, cached %v; want ErrUnauthorized and nothing cached", err, cached)
	}
}
