package controller

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/kinds"
	"github.com/fullpipe/fullpipe/internal/schedule"
)

// leaseName is the scheduler's lease in the store.
const leaseName = "scheduler"

// Bounds of one tick.
const (
	maxOccurrences = 100             // booked per schedule per tick
	leaseMargin    = time.Second     // taken off the lease's end for clock skew between replicas
	minBudget      = 2 * time.Second // left before the lease's end to claim another occurrence (at most a quarter of the TTL)
)

// scheduler books runs while this replica holds the scheduler's lease.
// run is its one goroutine; it ends with run's context. rng is used by
// that goroutine only.
type scheduler struct {
	c      *Controller
	active atomic.Bool // this replica holds the lease (read by /healthz and /metrics)
	// storeSeen is when (Config.Now's UnixNano) the store last answered
	// the lease's renewal, taken or not: /healthz reads it rather than
	// the store, so a flood of health checks costs the store nothing.
	storeSeen atomic.Int64
	rng       *rand.Rand
}

func newScheduler(c *Controller) *scheduler {
	var seed [16]byte
	crand.Read(seed[:])
	return &scheduler{c: c, rng: rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))}
}

// run takes or renews the lease every LeaseRenew and, while it holds
// it, ticks. A tick's context ends when the lease could have expired
// (its renewal's start + TTL − 1 s), so a replica that loses the lease
// stops booking at once, before another can take it over.
func (s *scheduler) run(ctx context.Context) {
	cfg := s.c.cfg
	defer s.active.Store(false)
	for {
		t0 := time.Now() // monotonic: the lease's end as this process measures it
		ok, err := cfg.Store.Lease(ctx, leaseName, cfg.Holder, cfg.LeaseTTL, cfg.Now())
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			s.storeSeen.Store(cfg.Now().UnixNano())
		}
		was := s.active.Swap(ok && err == nil)
		switch {
		case err != nil:
			cfg.Log.Error("scheduler lease", "error", err.Error(), "holder", cfg.Holder)
		case ok && !was:
			cfg.Log.Info("scheduler lease taken: this replica schedules", "holder", cfg.Holder)
			s.c.metrics.leaseTaken.Inc()
		case !ok && was:
			cfg.Log.Warn("scheduler lease lost: this replica stops scheduling", "holder", cfg.Holder)
		}
		if ok && err == nil {
			tctx, cancel := context.WithDeadline(ctx, t0.Add(cfg.LeaseTTL-leaseMargin))
			if err := s.tick(tctx); err != nil && ctx.Err() == nil {
				cfg.Log.Error("scheduler tick", "error", err.Error())
			}
			cancel()
		}
		wait := time.NewTimer(max(time.Until(t0.Add(cfg.LeaseRenew)), 0))
		select {
		case <-ctx.Done():
			wait.Stop()
			return
		case <-wait.C:
		}
	}
}

// tick marks missed runs and books the occurrences due before now +
// Lookahead.
func (s *scheduler) tick(ctx context.Context) error {
	cfg, st := s.c.cfg, s.c.cfg.Store
	now := cfg.Now()
	t0 := time.Now()
	defer func() { s.c.metrics.tickSeconds.Observe(time.Since(t0).Seconds()) }()
	n, err := st.MissRuns(ctx, now)
	if err != nil {
		return err
	}
	s.c.metrics.missed.Add(float64(n))
	if _, err := s.markLost(ctx); err != nil {
		return err
	}
	due, err := st.DueSchedules(ctx, now.Add(cfg.Lookahead))
	if err != nil || len(due) == 0 {
		return err
	}
	agents, err := st.Agents(ctx)
	if err != nil {
		return err
	}
	rtts, err := s.rtts(ctx)
	if err != nil {
		return err
	}
	for _, sc := range due {
		if err := s.schedule(ctx, sc, agents, rtts, now); err != nil {
			cfg.Log.Error("scheduling", "schedule", sc.ID, "error", err.Error())
		}
	}
	return ctx.Err()
}

// schedule books sc's occurrences due before now + Lookahead, each
// booked and then claimed (NextDue moved on): a controller killed
// between the two leaves the occurrence due, and the one that books it
// again finds the pairs it had booked booked (the store books each
// occurrence's run of a pair once: fleet.ErrBooked), so that none is
// booked twice and none is lost. An occurrence more than Lookahead late
// (the controllers were down) is skipped, not caught up.
func (s *scheduler) schedule(ctx context.Context, sc fleet.Schedule, agents []fleet.Agent, rtts map[[2]string]time.Duration, now time.Time) error {
	cfg := s.c.cfg
	rep, err := schedule.Parse(sc.Repeat)
	if err != nil {
		// Validated when created: a newer rule this build lacks.
		return s.claim(ctx, sc.ID, sc.NextDue, sc.NextDue, false)
	}
	for range maxOccurrences {
		if !sc.NextDue.Before(now.Add(cfg.Lookahead)) || !sc.Enabled {
			return nil
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < min(minBudget, cfg.LeaseTTL/4) {
			return nil // the next renewal goes on
		}
		occ, book := sc.NextDue, true
		after := occ
		if occ.Before(now.Add(-cfg.Lookahead)) {
			cfg.Log.Warn("skipping occurrences missed while no controller scheduled", "schedule", sc.ID, "from", occ)
			s.c.metrics.skipped.Inc()
			after, book = now, false
		}
		next, more := rep.Next(after, sc.Start)
		if book {
			s.book(ctx, sc, occ, agents, rtts, now)
		}
		if err := s.claim(ctx, sc.ID, occ, next, more); errors.Is(err, errClaimed) {
			return nil
		} else if err != nil {
			return err
		}
		sc.NextDue, sc.Enabled = next, more
	}
	return nil
}

// errClaimed is an occurrence another scheduler claimed first.
var errClaimed = errors.New("occurrence claimed by another scheduler")

// claim moves a schedule's NextDue from occ to next by compare and set
// (AdvanceSchedule); errClaimed when another scheduler moved it first.
func (s *scheduler) claim(ctx context.Context, id string, occ, next time.Time, enabled bool) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	ok, err := s.c.cfg.Store.AdvanceSchedule(ctx, id, occ, next, enabled)
	if err == nil && !ok {
		return errClaimed
	}
	return err
}

// book books one occurrence's runs: a run per pair of the schedule's
// selectors among the agents up now, in the earliest free slot from the
// occurrence (plus its slip) on, of kinds.SlotFor's length at the
// pair's RTT.
func (s *scheduler) book(ctx context.Context, sc fleet.Schedule, occ time.Time, agents []fleet.Agent, rtts map[[2]string]time.Duration, now time.Time) {
	cfg := s.c.cfg
	from, to, byName := s.candidates(sc, agents, now)
	exclusive := kinds.ExclusiveFor(sc.Test.Kind, sc.Test.Config)
	rate, _ := kinds.SharedRate(sc.Test.Kind, sc.Test.Config)
	earliest := now.Add(cfg.HeartbeatInterval + time.Second) // the source hears of it before it starts
	for _, p := range schedule.Pairs(from, to, sc.Both) {
		src, dst := byName[p.Source], byName[p.Dest]
		if !slices.Contains(src.Capabilities, sc.Test.Kind) || len(dst.Addresses) == 0 {
			continue
		}
		rtt, ok := rtts[[2]string{p.Source, p.Dest}]
		if !ok {
			rtt = cfg.DefaultRTT
		}
		slot, err := kinds.SlotFor(sc.Test.Kind, sc.Test.Config, rtt)
		if err != nil {
			cfg.Log.Error("schedule's test", "schedule", sc.ID, "error", err.Error())
			return
		}
		start := schedule.Slip(occ, sc.Slip, s.rng)
		if start.Before(earliest) {
			start = earliest
		}
		start = start.UTC().Truncate(time.Millisecond)
		if !exclusive {
			if start, err = s.sharedStart(ctx, p.Dest, start, slot, rate, start.Add(cfg.Horizon)); err != nil {
				s.c.metrics.unbooked.Inc()
				cfg.Log.Warn("run not booked", "schedule", sc.ID, "source", p.Source, "dest", p.Dest, "error", err.Error())
				continue
			}
		}
		r := fleet.Run{ScheduleID: sc.ID, Source: p.Source, Dest: p.Dest, Test: sc.Test, Exclusive: exclusive,
			Start: start, End: start.Add(slot), State: fleet.RunScheduled, Created: now.UTC(), Key: newKey(), Occurrence: occ}
		booked, err := cfg.Store.Book(ctx, r, start.Add(cfg.Horizon))
		if errors.Is(err, fleet.ErrBooked) {
			continue // by this scheduler or another before it claimed the occurrence
		}
		if err != nil {
			s.c.metrics.unbooked.Inc()
			cfg.Log.Warn("run not booked", "schedule", sc.ID, "source", p.Source, "dest", p.Dest, "error", err.Error())
			continue
		}
		s.c.metrics.booked.Inc()
		cfg.Log.Info("run booked", "run", booked.ID, "schedule", sc.ID, "source", p.Source, "dest", p.Dest,
			"start", booked.Start, "end", booked.End, "occurrence", occ)
	}
}

// DestSharedBps is the fleet-wide ceiling on what shared runs (stamp,
// rtt, mtu: not exclusive) send to one destination at once, summed over
// their sources: 10 Mbit/s, ten of the fastest shared runs
// (schedule.SharedRateMax). A mesh of a thousand agents each probing
// every other stays far under it; a schedule that would pass it has its
// runs to that destination moved later, one after another.
const DestSharedBps = 10e6

// sharedStart is the earliest start from start, before horizon, at
// which a shared run of rate to dest keeps the shared runs to dest
// (scheduled or running, overlapping its slot) within DestSharedBps.
func (s *scheduler) sharedStart(ctx context.Context, dest string, start time.Time, slot time.Duration, rate float64, horizon time.Time) (time.Time, error) {
	// A run that started before start may still overlap it (the filter
	// is on slot starts); scheduled and running runs are few.
	runs, err := s.c.cfg.Store.Runs(ctx, fleet.RunFilter{Agent: dest, From: start.Add(-schedule.MaxLength), To: horizon.Add(slot),
		States: []fleet.RunState{fleet.RunScheduled, fleet.RunRunning}, Limit: 10_000})
	if err != nil {
		return start, err
	}
	type shared struct {
		start, end time.Time
		rate       float64
	}
	var others []shared
	for _, r := range runs {
		if r.Dest != dest || r.Exclusive {
			continue
		}
		rr, err := kinds.SharedRate(r.Test.Kind, r.Test.Config)
		if err != nil {
			rr = schedule.SharedRateMax // a config this build cannot read: at the most a shared run sends
		}
		others = append(others, shared{r.Start, r.End, rr})
	}
	for !start.After(horizon) {
		end, sum, next := start.Add(slot), rate, time.Time{}
		for _, o := range others {
			if o.start.Before(end) && start.Before(o.end) {
				sum += o.rate
				if next.IsZero() || o.end.Before(next) {
					next = o.end
				}
			}
		}
		if sum <= DestSharedBps {
			return start, nil
		}
		if next.IsZero() { // alone over the ceiling: ExclusiveFor keeps shared runs under it
			break
		}
		start = next
	}
	return start, fmt.Errorf("destination %s would get more than %.0f bit/s of shared runs (stamp, rtt, mtu) at every start up to the horizon", dest, DestSharedBps)
}

// candidates are the names of the agents up now that sc's selectors
// pick, and every agent by name.
func (s *scheduler) candidates(sc fleet.Schedule, agents []fleet.Agent, now time.Time) (from, to []string, byName map[string]fleet.Agent) {
	byName = map[string]fleet.Agent{}
	for _, a := range agents {
		if fleet.StateAt(a, now, s.c.cfg.DownAfter) != fleet.AgentUp {
			continue
		}
		byName[a.Name] = a
		if sc.From.Picks(a) {
			from = append(from, a.Name)
		}
		if sc.To.Picks(a) {
			to = append(to, a.Name)
		}
	}
	return from, to, byName
}

// rtts are the RTT each pair's slots are sized at: its latest measured
// minimum RTT, either way round (its own direction first), made
// pessimistic (slotRTT), as kinds.SlotFor asks for the largest RTT
// the path is expected to have. Only a complete result's plausible
// figures count (an agent's upload is evidence, not a command): one
// marked implausible or partial is passed over, so a forged RTT cannot
// stretch a pair's slots, and the RTT is at most MaxRTT whatever was
// stored before the marking.
func (s *scheduler) rtts(ctx context.Context) (map[[2]string]time.Duration, error) {
	latest, err := s.c.cfg.Store.Latest(ctx, "")
	if err != nil {
		return nil, err
	}
	slices.SortFunc(latest, func(a, b fleet.Result) int { return a.Received.Compare(b.Received) })
	m := map[[2]string]time.Duration{}
	for _, r := range latest { // newest last, so it wins
		f := r.Figures
		if f.RTTMs > 0 && !f.Partial && f.Implausible == "" {
			m[[2]string{r.Source, r.Dest}] = slotRTT(min(time.Duration(f.RTTMs*float64(time.Millisecond)), MaxRTT))
		}
	}
	for k, v := range m {
		if _, ok := m[[2]string{k[1], k[0]}]; !ok {
			m[[2]string{k[1], k[0]}] = v
		}
	}
	return m, nil
}

// slotRTT is the RTT to size a slot at from a path's minimum: four times
// it, and at least 50 ms more (a loaded queue's delay, which the minimum
// does not show).
func slotRTT(minRTT time.Duration) time.Duration {
	return max(4*minRTT, minRTT+50*time.Millisecond)
}

// newKey is a run's secret: 32 random bytes.
func newKey() []byte {
	k := make([]byte, 32)
	crand.Read(k)
	return k
}
