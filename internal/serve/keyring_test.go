package serve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/wire"
)

var (
	runKey   = []byte("Zr4pQ9wLx2Vb7NcT1mKs8HdY")
	otherKey = []byte("Jm3Tq8Ws1Xe6Rb0Pa5Lv9Kc2")
)

// ringProbe runs a one-probe RTT test against addr proving key; nil when the
// responder accepted it.
func ringProbe(t *testing.T, addr string, key []byte) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := tester.RunRTT(ctx, tester.Target{Addr: addr, Secret: key}, result.RTTConfig{Count: 1, Interval: 10 * time.Millisecond, Size: 64}, nil)
	return err
}

// refusedWith checks err is the responder's refusal with code.
func refusedWith(t *testing.T, err error, code wire.ErrorCode) {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != code {
		t.Fatalf("err = %v, want the responder's refusal (%s)", err, code)
	}
}

// TestKeyRing: a responder with a key ring takes a tester proving a key
// only within the key's window: before and after it, after its removal,
// and with a key it never had, the tester is refused with an auth error;
// an empty ring refuses everyone. Each case runs its own responder, so
// one case's failures do not drain the next one's throttle.
func TestKeyRing(t *testing.T) {
	now := time.Now()
	cases := []struct {
		name       string
		start, end time.Time
		remove     bool
		prove      []byte
		ok         bool
	}{
		{name: "in window", start: now.Add(-time.Second), end: now.Add(time.Minute), prove: runKey, ok: true},
		{name: "before window", start: now.Add(time.Minute), end: now.Add(2 * time.Minute), prove: runKey},
		{name: "after window", start: now.Add(-2 * time.Minute), end: now.Add(-time.Minute), prove: runKey},
		{name: "removed", start: now.Add(-time.Second), end: now.Add(time.Minute), remove: true, prove: runKey},
		{name: "wrong key", start: now.Add(-time.Second), end: now.Add(time.Minute), prove: otherKey},
		{name: "empty ring", prove: runKey},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ring := NewKeyRing()
			if !c.start.IsZero() {
				if err := ring.Add("run-1", runKey, c.start, c.end); err != nil {
					t.Fatal(err)
				}
			}
			if c.remove {
				ring.Remove("run-1")
			}
			srv := startServer(t, Config{Keys: ring})
			err := ringProbe(t, srv.Addr().String(), c.prove)
			if c.ok {
				if err != nil {
					t.Fatalf("refused a key in its window: %v", err)
				}
				return
			}
			refusedWith(t, err, wire.CodeAuth)
			if !strings.Contains(err.Error(), "fleet controller") {
				t.Errorf("refusal %q does not say the responder takes only its runs' keys", err)
			}
		})
	}
}

// TestKeyRingAmongMany: a proof is checked against every live key: the
// one key that matches among a full ring of others passes, a secret
// beside the ring passes too, and the responder proves back the key the
// client proved (the tester checks that proof).
func TestKeyRingAmongMany(t *testing.T) {
	ring := NewKeyRing()
	now := time.Now()
	for i := range MaxRingKeys - 1 {
		if err := ring.Add(fmt.Sprint("other-", i), fmt.Appendf(nil, "k%04d-abcdefghijklmnop", i), now.Add(-time.Second), now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ring.Add("run", runKey, now.Add(-time.Second), now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, Config{Keys: ring, Secret: testSecret})
	for _, key := range [][]byte{runKey, testSecret} {
		if err := ringProbe(t, srv.Addr().String(), key); err != nil {
			t.Fatalf("refused with %d keys in the ring: %v", ring.Len(), err)
		}
	}
}

// TestKeyRingThrottle: wrong keys against a ring drain the same
// per-address throttle as wrong secrets: the sixth attempt at once is
// throttled before any challenge, and a right key is throttled too.
func TestKeyRingThrottle(t *testing.T) {
	ring := NewKeyRing()
	if err := ring.Add("run", runKey, time.Now().Add(-time.Second), time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, Config{Keys: ring})
	for range authBurst {
		refusedWith(t, ringProbe(t, srv.Addr().String(), otherKey), wire.CodeAuth)
	}
	refusedWith(t, ringProbe(t, srv.Addr().String(), runKey), wire.CodeThrottled)
}

// TestKeyRingLimits: the ring's edges: bad keys and empty windows are
// refused, MaxRingKeys keys fit and one more is ErrRingFull, replacing a
// held id fits, Expire drops exactly the ended windows.
func TestKeyRingLimits(t *testing.T) {
	ring := NewKeyRing()
	t0 := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	if err := ring.Add("short", []byte("0123456789"), t0, t0.Add(time.Minute)); err == nil {
		t.Error("took a 10-byte key")
	}
	if err := ring.Add("empty", runKey, t0, t0); err == nil {
		t.Error("took an empty window")
	}
	for i := range MaxRingKeys {
		end := t0.Add(time.Duration(1+i%2) * time.Minute) // half end at +1m, half at +2m
		if err := ring.Add(fmt.Sprint(i), runKey, t0, end); err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
	}
	if err := ring.Add("one more", runKey, t0, t0.Add(time.Minute)); !errors.Is(err, ErrRingFull) {
		t.Fatalf("key %d: err = %v, want ErrRingFull", MaxRingKeys+1, err)
	}
	if err := ring.Add("0", otherKey, t0, t0.Add(time.Hour)); err != nil {
		t.Fatalf("replacing a held id in a full ring: %v", err)
	}
	if n := len(ring.live(t0.Add(90 * time.Second))); n != MaxRingKeys/2+1 {
		t.Errorf("live at +90s: %d keys, want %d", n, MaxRingKeys/2+1)
	}
	if n := ring.Expire(t0.Add(time.Minute)); n != MaxRingKeys/2-1 {
		t.Errorf("expired %d keys at +1m, want %d (their end is exclusive)", n, MaxRingKeys/2-1)
	}
	if err := ring.Add("one more", runKey, t0, t0.Add(time.Minute)); err != nil {
		t.Errorf("after Expire: %v", err)
	}
}

// TestKeyRingConcurrent: adding, removing and expiring keys while
// clients authenticate is safe (run with -race).
func TestKeyRingConcurrent(t *testing.T) {
	ring := NewKeyRing()
	if err := ring.Add("run", runKey, time.Now().Add(-time.Second), time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, Config{Keys: ring})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil && i < 100_000; i++ {
			id := fmt.Sprint("churn-", i%64)
			_ = ring.Add(id, otherKey, time.Now().Add(-time.Second), time.Now().Add(time.Second))
			ring.Remove(id)
			ring.Expire(time.Now())
		}
	}()
	for range 3 {
		if err := ringProbe(t, srv.Addr().String(), runKey); err != nil {
			t.Error(err)
		}
	}
	cancel()
	wg.Wait()
}

// TestKeyRingChild: a responder in a second process, its ring given at
// start, takes a tester proving a ring key and refuses another key.
func TestKeyRingChild(t *testing.T) {
	now := time.Now()
	_, addr := startResponder(t, childConfig{Keys: []childKey{{ID: "run-1", Key: runKey, Start: now.Add(-time.Second), End: now.Add(time.Minute)}}})
	if err := ringProbe(t, addr, runKey); err != nil {
		t.Fatalf("the child refused its ring's key: %v", err)
	}
	refusedWith(t, ringProbe(t, addr, otherKey), wire.CodeAuth)
}
