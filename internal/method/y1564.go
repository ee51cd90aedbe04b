package method

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/schedule"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/units"
	"github.com/fullpipe/fullpipe/internal/version"
	"github.com/fullpipe/fullpipe/internal/vocab"
	"github.com/fullpipe/fullpipe/internal/y1564"
)

// y1564Run is one Y.1564 run's state, on the run's goroutine.
type y1564Run struct {
	ctx context.Context
	net Network
	p   Progress
	cfg result.Y1564Config
	out *result.Y1564
}

// RunY1564 runs ITU-T Y.1564 against n: for each direction and service,
// the service configuration test (each step one UDP stream, one after
// the other), then the service performance test (every service in every
// direction at its CIR at once, each its own stream and responder
// session), and judges each step, service and the run (package y1564).
// Stopped early, it returns what it measured with the error.
func RunY1564(ctx context.Context, n Network, cfg result.Y1564Config, progress Progress) (*result.Y1564, error) {
	cfg, err := prepare("y1564", cfg)
	if err != nil {
		return nil, err
	}
	r := &y1564Run{ctx: ctx, net: n, p: progress, cfg: cfg, out: &result.Y1564{Config: cfg, Warnings: []string{},
		Meta: result.Meta{Schema: result.Schema, Tool: "fullpipe", Version: version.Release, Test: "y1564", Started: time.Now(),
			Target: n.Target(), Client: result.Host{Software: version.Software(), Kernel: version.Kernel()}}}}
	for _, dir := range cfg.Directions {
		for _, s := range cfg.Services {
			r.out.Services = append(r.out.Services, result.Y1564Service{Name: s.Name, Direction: dir, Steps: []result.Y1564Step{}})
		}
	}
	if !cfg.SkipConfig {
		err = r.configTest()
	}
	if err == nil && !cfg.SkipPerf {
		err = r.perfTest()
	}
	r.judge()
	if err != nil && (errors.Is(err, result.ErrPartial) || ctx.Err() != nil) {
		r.out.Partial, r.out.PartialReason = true, err.Error()
		if !errors.Is(err, result.ErrPartial) {
			err = fmt.Errorf("%w: %v", result.ErrPartial, err)
		}
	}
	return r.out, err
}

// stepReplyAllowance is what the plan allows each step's stream past its
// drain for its delay probes' last replies: the stream reads them within
// the drain, and the allowance keeps the slot the fleet has always
// booked for a step.
const stepReplyAllowance = result.ReplyWait

// Y1564Cost is a Y.1564 run's plan (RunY1564): each service's
// configuration steps in each direction one after another, then the
// performance test's streams all at once (one session's time: they run
// side by side, so the longest counts). Each stream is a UDP test of
// its step's time and drain (result.Y1564Config.Trial) and
// stepReplyAllowance.
func Y1564Cost(cfg result.Y1564Config, _ time.Duration) (schedule.Cost, error) {
	stream := func(s y1564.Service, st y1564.Step, dir vocab.Direction) schedule.Cost {
		return tester.UDPCost(cfg.Trial(s, st, dir)).Plus(schedule.Cost{Run: stepReplyAllowance})
	}
	var total, perf schedule.Cost
	for _, dir := range cfg.Directions {
		for _, s := range cfg.Services {
			if !cfg.SkipConfig {
				for _, st := range y1564.Steps(s, cfg.StepsPct) {
					total = total.Plus(stream(s, st, dir))
				}
			}
			if !cfg.SkipPerf {
				perf = schedule.Longer(perf, stream(s, y1564.PerformanceStep(s), dir), 0)
			}
		}
	}
	return total.Plus(perf), nil
}

// service is the config of the run's i-th service result.
func (r *y1564Run) service(i int) y1564.Service {
	return r.cfg.Services[i%len(r.cfg.Services)]
}

// configTest runs each service's configuration steps, one at a time.
func (r *y1564Run) configTest() error {
	r.p.emit(Event{Kind: Started, Step: StepY1564Config, Text: StepY1564Config.Title()})
	defer r.p.emit(Event{Kind: Finished, Step: StepY1564Config})
	for i := range r.out.Services {
		sr, s := &r.out.Services[i], r.service(i)
		for _, st := range y1564.Steps(s, r.cfg.StepsPct) {
			step, server, err := r.trial(r.ctx, s, st, sr.Direction, func(iv result.UDPInterval) {
				r.p.emit(Event{Kind: Sample, Step: StepY1564Config, Direction: sr.Direction, Text: s.Name, UDP: &iv})
			})
			r.server(server)
			if step != nil {
				sr.Steps = append(sr.Steps, *step)
				r.report(sr, *step)
			}
			if err != nil {
				return fmt.Errorf("service %s %s, step %s: %w", s.Name, sr.Direction, st.Name(), err)
			}
		}
	}
	return nil
}

// perfTest runs every service in every direction at its CIR at once.
// Each stream is a goroutine of its own that ends when its UDP test
// returns; it hands its interval samples to the run's goroutine over
// events, which this goroutine emits (so progress hears them in order,
// on the run's goroutine) until every stream has ended; then it reports.
// The first stream that fails stops the others (they would otherwise run
// the whole performance time, 15 min by default, for a test that has
// already failed), and its error is the one returned.
func (r *y1564Run) perfTest() error {
	r.p.emit(Event{Kind: Started, Step: StepY1564Perf, Text: StepY1564Perf.Title()})
	defer r.p.emit(Event{Kind: Finished, Step: StepY1564Perf})
	n := len(r.out.Services)
	steps, servers, errs := make([]*result.Y1564Step, n), make([]result.Host, n), make([]error, n)
	events, done := make(chan Event, 4*n), make(chan struct{})
	ctx, stop := context.WithCancel(r.ctx)
	defer stop()
	failed := -1 // the first stream that failed; guarded by mu
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range r.out.Services {
		s, dir := r.service(i), r.out.Services[i].Direction
		sample := func(iv result.UDPInterval) {
			events <- Event{Kind: Sample, Step: StepY1564Perf, Direction: dir, Text: s.Name, UDP: &iv}
		}
		wg.Go(func() {
			steps[i], servers[i], errs[i] = r.trial(ctx, s, y1564.PerformanceStep(s), dir, sample)
			mu.Lock()
			defer mu.Unlock()
			if errs[i] != nil && failed < 0 && ctx.Err() == nil {
				failed = i
				stop()
			}
		})
	}
	go func() { wg.Wait(); close(done) }() // ends when every stream has
	r.relay(events, done)
	for i, st := range steps {
		sr := &r.out.Services[i]
		sr.Performance = st
		r.server(servers[i])
		if st != nil {
			r.report(sr, *st)
		}
	}
	if failed < 0 { // none failed first: the run's own context ended them, or none failed
		for i := range errs {
			if errs[i] != nil {
				failed = i
				break
			}
		}
	}
	if failed < 0 {
		return nil
	}
	sr := r.out.Services[failed]
	return fmt.Errorf("service %s %s, performance test: %w", sr.Name, sr.Direction, errs[failed])
}

// relay emits events until done is closed, then what is left in events.
// The senders block on a full events only while relay runs, and all of
// them have returned once done is closed.
func (r *y1564Run) relay(events <-chan Event, done <-chan struct{}) {
	for {
		select {
		case e := <-events:
			r.p.emit(e)
		case <-done:
			for {
				select {
				case e := <-events:
					r.p.emit(e)
				default:
					return
				}
			}
		}
	}
}

// trial runs one step as one UDP stream and judges it, handing each
// interval to sample. It only reads r, so the performance test's
// goroutines may call it at once.
func (r *y1564Run) trial(ctx context.Context, s y1564.Service, st y1564.Step, dir vocab.Direction, sample func(result.UDPInterval)) (*result.Y1564Step, result.Host, error) {
	cfg := r.cfg.Trial(s, st, dir)
	u, err := r.net.UDP(ctx, cfg, sample)
	if u == nil {
		return nil, result.Host{}, err
	}
	f := y1564.Read(measure(s, cfg, u), r.cfg.UnavailFLRPct)
	return &result.Y1564Step{Step: st, Figures: f, Judgement: y1564.JudgeStep(s, st, f)}, u.Server, err
}

// server records the responder's software from its first answer.
func (r *y1564Run) server(h result.Host) {
	if r.out.Server.Software == "" {
		r.out.Server = h
	}
}

// measure converts a step's UDP test to frames and layer-2 bits: each
// datagram of cfg.Size bytes is a frame of Size + 46.
func measure(s y1564.Service, cfg result.UDPConfig, u *result.UDP) y1564.Measure {
	k := float64(s.FrameBytes) / float64(cfg.Size)
	sum := u.Summary
	m := y1564.Measure{Seconds: cfg.Duration.Seconds(), OfferedBps: sum.SenderRateBps * k, IRBps: sum.ReceiverRateBps * k,
		SentFrames: sum.SentPackets, LostFrames: sum.Lost, GeneratorLimited: sum.GeneratorLimited,
		SenderMaxSlip: time.Duration(sum.SenderMaxSlipUs * 1e3), ReceiverDrops: sum.ReceiverDrops, SenderLate: sum.SenderLate}
	if l := sum.Latency; l != nil {
		m.Delay = &y1564.Delay{Probes: l.Probes, Replies: l.Replies, Delays: l.Delays}
	}
	for _, iv := range u.Intervals {
		m.Intervals = append(m.Intervals, y1564.Interval{Sent: iv.Packets + iv.Lost, Lost: iv.Lost})
	}
	return m
}

// report tells a finished step: a line, and a warning when its host
// limited it.
func (r *y1564Run) report(sr *result.Y1564Service, st result.Y1564Step) {
	r.p.emit(Event{Kind: Line, Step: stepOf(st.Step), Direction: sr.Direction, Text: Y1564Line(sr.Name, sr.Direction, st)})
	if st.Judgement.Verdict == y1564.HostLimited {
		w := fmt.Sprintf("%s %s, %s: %s", sr.Name, sr.Direction, st.Step.Name(), st.Judgement.Reasons[0])
		r.out.Warnings = append(r.out.Warnings, w)
		r.p.emit(Event{Kind: Warning, Step: stepOf(st.Step), Direction: sr.Direction, Text: w})
	}
}

func stepOf(st y1564.Step) Step {
	if st.Kind == y1564.StepPerf {
		return StepY1564Perf
	}
	return StepY1564Config
}

// Y1564Line is a step's figures and verdict in one line.
func Y1564Line(name string, dir vocab.Direction, st result.Y1564Step) string {
	f := st.Figures
	delay := "FTD/FDV not measured"
	if f.Delayed() {
		delay = fmt.Sprintf("FTD %s, FDV %s (round trip)", units.FormatDuration(f.FTD), units.FormatDuration(f.FDV))
	}
	return fmt.Sprintf("%s %s, %s: offered %s, IR %s, FLR %.3g %%, %s, avail %.4g %%: %s", name, dir, st.Step.Name(),
		units.FormatRate(f.OfferedBps), units.FormatRate(f.IRBps), f.FLRPct, delay, f.AvailPct, st.Judgement.Verdict)
}

// judge sets each service's verdicts and the run's.
func (r *y1564Run) judge() {
	var all []y1564.Verdict
	for i := range r.out.Services {
		sr := &r.out.Services[i]
		var vs []y1564.Verdict
		if !r.cfg.SkipConfig {
			var cs []y1564.Verdict
			for _, st := range sr.Steps {
				cs = append(cs, st.Judgement.Verdict)
			}
			sr.ConfigVerdict = y1564.Combine(cs...)
			vs = append(vs, sr.ConfigVerdict)
		}
		if !r.cfg.SkipPerf {
			sr.PerfVerdict = y1564.Fail
			if sr.Performance != nil {
				sr.PerfVerdict = sr.Performance.Judgement.Verdict
			}
			vs = append(vs, sr.PerfVerdict)
		}
		sr.Verdict = y1564.Combine(vs...)
		all = append(all, sr.Verdict)
	}
	r.out.Verdict = y1564.Combine(all...)
}
