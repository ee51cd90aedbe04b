package controller

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// tokenTTL is how long a token the store accepted is taken again
// without asking the store: a revocation made through another replica
// holds from at most this much later (through this one: at once).
const tokenTTL = time.Second

// maxCachedTokens bounds the cache; past it, it starts empty again.
const maxCachedTokens = 100_000

// tokens remembers the tokens the store accepted for tokenTTL, so that
// an agent's heartbeat, start and upload do not each cost the store a
// lookup (a fleet of 1,000 agents uploading at once makes thousands of
// calls a second). Only acceptances are kept: an unknown or revoked
// token always asks the store.
type tokens struct {
	mu sync.Mutex
	m  map[[32]byte]cachedToken
}

type cachedToken struct {
	t       fleet.Token
	expires time.Time
}

// authenticate is the store's Authenticate, through the cache.
func (k *tokens) authenticate(ctx context.Context, st fleet.Store, secret string, now time.Time) (fleet.Token, error) {
	key := sha256.Sum256([]byte(secret))
	k.mu.Lock()
	e, ok := k.m[key]
	k.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.t, nil
	}
	t, err := st.Authenticate(ctx, secret)
	if err != nil {
		return t, err
	}
	k.mu.Lock()
	if k.m == nil || len(k.m) >= maxCachedTokens {
		k.m = map[[32]byte]cachedToken{}
	}
	k.m[key] = cachedToken{t: t, expires: now.Add(tokenTTL)}
	k.mu.Unlock()
	return t, nil
}

// forget drops a revoked token (by its ID) at once.
func (k *tokens) forget(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for key, e := range k.m {
		if e.t.ID == id {
			delete(k.m, key)
		}
	}
}
