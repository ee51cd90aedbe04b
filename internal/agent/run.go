package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/fullpipe/fullpipe/internal/ctxtime"
	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/kinds"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/tester"
)

// Why a run stopped early, as its context's cause.
var (
	errCancelled = errors.New("cancelled by the controller")
	errSlotEnd   = errors.New("stopped at the end of its slot")
	errStopping  = errors.New("the agent is stopping")
	// errStartRefused: the controller will not have the run started.
	errStartRefused = errors.New("the controller refused the run's start")
)

// startTries bounds the attempts to tell the controller a run started.
const startTries = 3

// run is one assignment from when it is taken until its upload is
// spooled.
type run struct {
	fleet.Assignment
	ctx     context.Context // ends at the agent's end or at cancellation
	cancel  context.CancelCauseFunc
	started atomic.Bool // executing (reported as running)
}

func newRun(parent context.Context, as fleet.Assignment) *run {
	ctx, cancel := context.WithCancelCause(parent)
	return &run{Assignment: as, ctx: ctx, cancel: cancel}
}

// routineRun waits for the run's slot, executes it and spools its
// upload. It ends when the upload is spooled, or when the run is
// cancelled or the agent stops before its slot.
func (a *Agent) routineRun(r *run) {
	defer a.runWG.Done()
	defer a.finish(r)
	defer r.cancel(nil)
	log := a.log.With("run", r.ID, "test", r.Test.Kind, "target", r.Target)
	if !ctxtime.Sleep(r.ctx, time.Until(a.clock.local(r.Start, time.Now()))) {
		log.Info("run not started", "why", context.Cause(r.ctx))
		return
	}
	if now := time.Now(); !now.Before(a.clock.local(r.End, now)) {
		log.Warn("run's slot is over before it could start: not run")
		return
	}
	if why := a.spool.full(); why != "" {
		log.Error("run not started: "+why, "spool", a.spool.dir)
		return
	}
	up, keep := a.execute(r, log)
	if !keep {
		return
	}
	if err := a.spool.put(r.ID, up, time.Now()); err != nil {
		// Without the spool the upload is tried once, from memory.
		log.Error("cannot spool the result: uploading it once from memory; it is lost if that fails", "err", err)
		a.uploadOnce(r.ID, up, log)
		return
	}
	a.nudge()
}

// finish forgets a run as running and remembers it as ended.
func (a *Agent) finish(r *run) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.endedLocked(r.ID)
}

// execute runs the test and returns its upload: the document (partial
// when stopped early), or the error that ended it without one; keep is
// false when the controller refused the run's start (it was cancelled
// meanwhile, or is not this agent's): nothing is uploaded.
func (a *Agent) execute(r *run, log *slog.Logger) (up fleet.Upload, keep bool) {
	cfg, err := kinds.Decode(r.Test)
	if sc, ok := cfg.(result.STAMPConfig); ok && err == nil {
		cfg, err = tester.ResolveSTAMPKey(sc, a.cfg.STAMPKeyDir) // a name in our key dir, never a path
	}
	if err != nil {
		return fleet.Upload{State: fleet.RunFailed, Error: err.Error()}, true
	}
	pin, err := parsePin(r.TargetPin)
	if err != nil {
		return fleet.Upload{State: fleet.RunFailed, Error: fmt.Sprintf("target pin: %v", err)}, true
	}
	told := make(chan struct{})
	go func() { defer close(told); a.tellStarted(r, log) }() // the test starts on time, told or not
	defer func() { <-told }()                                // before the upload is spooled
	ctx, cancel := context.WithDeadlineCause(r.ctx, a.clock.local(r.End, time.Now()), errSlotEnd)
	defer cancel()
	a.beginExclusive(r, log)
	defer a.endExclusive(r)
	r.started.Store(true)
	events := newEventStream(r.ID, a.ctl, a.cfg.MaxEvents)
	done := make(chan struct{})
	go func() { defer close(done); events.routineSend(r.ctx, a.cfg.EventEvery, log) }()
	log.Info("run started", "slot_end", r.End)
	target := tester.Target{Addr: r.Target, Secret: r.Secret, TLS: pin != nil, TLSPin: pin}
	doc, err := kinds.Execute(ctx, tester.Remote{T: target}, cfg, events.progress)
	events.close()
	<-done
	// The controller's word on the start decides whether anything is
	// uploaded, also when the test ended first (its destination, told of
	// the cancellation, refused it before the start's 409 came back).
	<-told
	if cause := context.Cause(r.ctx); errors.Is(cause, errStartRefused) {
		log.Warn("run stopped: the controller refused its start", "err", cause)
		return up, false
	}
	cause := context.Cause(ctx)
	if errors.Is(cause, context.Canceled) && !errors.Is(cause, errCancelled) {
		cause = errStopping
	}
	up = upload(r.ID, doc, err, cause)
	log.Info("run ended", "state", up.State, "err", up.Error, "events_dropped", events.droppedCount())
	return up, true
}

// tellStarted tells the controller the run starts, trying a few times
// within a few seconds, beside the test: the run goes ahead when the
// controller cannot be reached (its slot is now; its result will be
// uploaded when the controller is back), and is stopped when the
// controller refuses (errStartRefused).
func (a *Agent) tellStarted(r *run, log *slog.Logger) {
	for i := range startTries {
		ctx, cancel := context.WithTimeout(r.ctx, 2*time.Second)
		err := a.ctl.Start(ctx, r.ID)
		cancel()
		if err == nil || r.ctx.Err() != nil {
			return
		}
		if refused(err) {
			r.cancel(fmt.Errorf("%w: %w", errStartRefused, err))
			return
		}
		log.Warn("cannot tell the controller the run started", "err", err, "attempt", i+1)
		if !ctxtime.Sleep(r.ctx, 200*time.Millisecond) {
			return
		}
	}
}

// beginExclusive counts an exclusive run in; two at once should not
// happen (the controller's slots exclude it): they run, with a warning.
func (a *Agent) beginExclusive(r *run, log *slog.Logger) {
	if !r.Exclusive {
		return
	}
	a.mu.Lock()
	a.exclusive++
	n := a.exclusive
	a.mu.Unlock()
	if n > 1 {
		log.Warn("exclusive runs overlap on this agent: their throughputs share the host", "exclusive_runs", n)
	}
}

func (a *Agent) endExclusive(r *run) {
	if r.Exclusive {
		a.mu.Lock()
		a.exclusive--
		a.mu.Unlock()
	}
}

// upload is a run's upload from what kinds.Execute returned; cause is
// why the run's context ended, if it did.
func upload(runID string, doc result.Doc, err error, cause error) fleet.Upload {
	msg := ""
	if err != nil {
		msg = err.Error()
		if cause != nil {
			msg = fmt.Sprintf("%v: %s", cause, msg)
		}
	}
	if doc == nil {
		if msg == "" {
			msg = "the test returned no document"
		}
		return fleet.Upload{State: fleet.RunFailed, Error: msg}
	}
	doc.Head().Command = []string{"fullpipe", "agent", "run", runID}
	b, merr := json.Marshal(doc)
	if merr != nil {
		return fleet.Upload{State: fleet.RunFailed, Error: fmt.Sprintf("encode the document: %v (%s)", merr, msg)}
	}
	return fleet.Upload{State: fleet.RunFinished, Error: msg, Doc: b}
}
