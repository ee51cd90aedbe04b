package serve

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fullpipe/fullpipe/internal/wire"
)

// MaxRingKeys bounds a KeyRing: a proof is tried against every live key,
// so the ring's size bounds the work one authentication attempt costs
// (4096 HMACs, a few milliseconds) as well as its memory.
const MaxRingKeys = 4096

// ErrRingFull is Add past MaxRingKeys.
var ErrRingFull = errors.New("key ring full")

// KeyRing holds the per-run keys a fleet's controller hands a responder:
// each is taken only within its window [start, end). A responder with a
// ring (Config.Keys) demands the same mutual proof as with a secret and
// accepts a proof of any key live at that moment; an empty ring refuses
// everyone. It is safe for concurrent use: the agent that feeds it and
// the responder's connections share it. The zero value is an empty ring.
type KeyRing struct {
	mu   sync.Mutex // guards keys
	keys map[string]ringKey
}

type ringKey struct {
	key        []byte
	start, end time.Time
}

// NewKeyRing returns an empty ring.
func NewKeyRing() *KeyRing { return &KeyRing{} }

// Add stores key under id for [start, end), replacing a key of the same
// id. The key must be a good secret (wire.CheckSecret) and the window
// not empty; a ring of MaxRingKeys keys takes no new id (ErrRingFull:
// Expire or Remove first).
func (r *KeyRing) Add(id string, key []byte, start, end time.Time) error {
	if err := wire.CheckSecret(key); err != nil {
		return fmt.Errorf("key %q: %w", id, err)
	}
	if !end.After(start) {
		return fmt.Errorf("key %q: window [%v, %v) is empty", id, start, end)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys == nil {
		r.keys = map[string]ringKey{}
	}
	if _, ok := r.keys[id]; !ok && len(r.keys) >= MaxRingKeys {
		return fmt.Errorf("key %q: %w (%d keys): expire or remove keys first", id, ErrRingFull, MaxRingKeys)
	}
	r.keys[id] = ringKey{key: bytes.Clone(key), start: start, end: end}
	return nil
}

// Remove drops id's key, if the ring holds one.
func (r *KeyRing) Remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.keys, id)
}

// Expire drops the keys whose window ended at or before now and returns
// how many it dropped.
func (r *KeyRing) Expire(now time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for id, k := range r.keys {
		if !now.Before(k.end) {
			delete(r.keys, id)
			n++
		}
	}
	return n
}

// Has reports whether the ring holds id's key (live or not).
func (r *KeyRing) Has(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.keys[id]
	return ok
}

// IDs lists the ids the ring holds, in no order.
func (r *KeyRing) IDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]string, 0, len(r.keys))
	for id := range r.keys {
		ids = append(ids, id)
	}
	return ids
}

// Len is how many keys the ring holds.
func (r *KeyRing) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.keys)
}

// live returns the keys taken at now (copies of the slices' headers;
// keys are never changed in place).
func (r *KeyRing) live(now time.Time) [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ks [][]byte
	for _, k := range r.keys {
		if !now.Before(k.start) && now.Before(k.end) {
			ks = append(ks, k.key)
		}
	}
	return ks
}
