package controller

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// leaseStore is the part of a store the scheduler's loop touches with
// nothing due, in memory: the lease answers by the test's function,
// each call's time recorded; the rest of fleet.Store is not there.
type leaseStore struct {
	fleet.Store
	lease func(n int) bool                           // the n-th Lease call's answer, from 1
	due   func(ctx context.Context) []fleet.Schedule // DueSchedules

	mu     sync.Mutex // guards leases and ticks
	leases []time.Time
	ticks  []time.Time // MissRuns, a tick's first call
}

func (s *leaseStore) Lease(_ context.Context, _, _ string, _ time.Duration, _ time.Time) (bool, error) {
	s.mu.Lock()
	s.leases = append(s.leases, time.Now())
	n := len(s.leases)
	s.mu.Unlock()
	return s.lease(n), nil
}

func (s *leaseStore) MissRuns(context.Context, time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ticks = append(s.ticks, time.Now())
	return 0, nil
}

func (s *leaseStore) Runs(context.Context, fleet.RunFilter) ([]fleet.Run, error) { return nil, nil }

func (s *leaseStore) DueSchedules(ctx context.Context, _ time.Time) ([]fleet.Schedule, error) {
	return s.due(ctx), ctx.Err()
}

// offsets are ts as durations from t0.
func offsets(t0 time.Time, ts []time.Time) []time.Duration {
	var ds []time.Duration
	for _, t := range ts {
		ds = append(ds, t.Sub(t0))
	}
	return ds
}

// TestLeaseTiming, on fake time: the scheduler renews its lease every
// LeaseRenew (3 s) from the previous renewal's start and ticks while it
// holds it, not while another replica does; a tick still running when
// the lease could have expired (its renewal + TTL − leaseMargin: 9 s)
// has its context ended then, and the next renewal follows at once.
func TestLeaseTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var cut time.Time // when the long tick's context ended
		st := &leaseStore{}
		st.lease = func(n int) bool {
			if n == 6 {
				cancel()
			}
			return n != 3 // the third renewal finds another replica holding it
		}
		st.due = func(tctx context.Context) []fleet.Schedule {
			st.mu.Lock()
			n := len(st.leases)
			st.mu.Unlock()
			if n == 5 { // this tick outlasts the lease
				<-tctx.Done()
				cut = time.Now()
			}
			return nil
		}
		c := &Controller{cfg: Config{Store: st, Log: slog.New(slog.DiscardHandler)}.withDefaults()}
		c.metrics = newMetrics(c)
		s := newScheduler(c)
		t0 := time.Now()
		s.run(ctx)

		const renew, ttl = DefaultLeaseRenew, DefaultLeaseTTL
		wantLeases := []time.Duration{0, renew, 2 * renew, 3 * renew, 4 * renew, 4*renew + ttl - leaseMargin}
		wantTicks := []time.Duration{0, renew, 3 * renew, 4 * renew} // not at the lost third
		if got := offsets(t0, st.leases); !slices.Equal(got, wantLeases) {
			t.Errorf("lease calls at %v, want %v", got, wantLeases)
		}
		if got := offsets(t0, st.ticks); !slices.Equal(got, wantTicks) {
			t.Errorf("ticks at %v, want %v", got, wantTicks)
		}
		if got, want := cut.Sub(t0), 4*renew+ttl-leaseMargin; got != want {
			t.Errorf("the long tick's context ended at +%v, want +%v (its renewal + TTL − margin)", got, want)
		}
		if s.active.Load() {
			t.Error("still active after run returned")
		}
	})
}
