package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/fullpipe/fullpipe/internal/ctxtime"
	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/method"
)

// Bounds of a run's event stream.
const (
	maxBatch     = 256             // events per call
	eventTimeout = 5 * time.Second // per call
	// finalTries bounds the attempts to send what is left at the end.
	finalTries = 3
)

// eventStream carries a run's progress to the controller: progress
// queues each event (numbered from 1), routineSend sends what is queued
// every period. The queue is bounded: when the controller is slower
// than the run, samples are dropped first (the oldest queued sample,
// or the new one), then the oldest events; drops are counted and leave
// gaps in Seq. Events are best effort: a run's result does not wait for
// them.
type eventStream struct {
	runID string
	ctl   Controller
	max   int

	mu      sync.Mutex // guards queue, seq, dropped, closed and refused
	queue   []queued
	seq     int
	dropped int
	closed  bool
	refused error         // the controller takes no more of this run's events (refused: 409 ended or cancelled, 413 its cap, or any other refusal for good)
	kick    chan struct{} // closed by close: the run ended, send the rest
}

type queued struct {
	ev     fleet.Event
	sample bool
}

func newEventStream(runID string, ctl Controller, max int) *eventStream {
	return &eventStream{runID: runID, ctl: ctl, max: max, kick: make(chan struct{})}
}

// progress is the run's method.Progress: it queues e, on the run's
// goroutine, without blocking.
func (s *eventStream) progress(e method.Event) {
	b, err := json.Marshal(e)
	if err != nil {
		b, _ = json.Marshal(method.Event{Kind: method.Warning, Step: e.Step, Text: fmt.Sprintf("event not encoded: %v", err)})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.refused != nil {
		return
	}
	s.seq++
	s.push([]queued{{ev: fleet.Event{RunID: s.runID, Seq: s.seq, Time: time.Now().UTC(), Event: b}, sample: e.Kind == method.Sample}}, false)
}

// push adds qs to the queue (at its front when again: a batch that
// failed), then drops past max: samples first, oldest first, then the
// oldest events. s.mu is held.
func (s *eventStream) push(qs []queued, again bool) {
	if again {
		s.queue = append(slices.Clone(qs), s.queue...)
	} else {
		s.queue = append(s.queue, qs...)
	}
	for len(s.queue) > s.max {
		i := slices.IndexFunc(s.queue, func(q queued) bool { return q.sample })
		if i < 0 {
			i = 0
		}
		s.queue = slices.Delete(s.queue, i, i+1)
		s.dropped++
	}
}

// close ends the stream: routineSend sends what is queued and returns.
func (s *eventStream) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.dropped > 0 {
		n := s.dropped
		if len(s.queue) >= s.max {
			n++ // this warning takes a queued event's place
		}
		b, _ := json.Marshal(method.Event{Kind: method.Warning, Text: fmt.Sprintf("%d progress events dropped: the controller took them more slowly than the run made them", n)})
		s.seq++
		s.push([]queued{{ev: fleet.Event{RunID: s.runID, Seq: s.seq, Time: time.Now().UTC(), Event: b}}}, false)
	}
	s.closed = true
	close(s.kick)
}

func (s *eventStream) droppedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// routineSend sends the queue every period until the stream is closed,
// then what is left (a few tries), and returns; or returns when ctx
// ends.
func (s *eventStream) routineSend(ctx context.Context, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.flush(ctx); refused(err) {
				log.Warn("progress events refused: the controller takes no more of this run's", "error", err.Error())
				return
			}
		case <-s.kick:
			for i := 0; i < finalTries && s.flush(ctx) != nil && s.refusedErr() == nil; i++ {
				if !ctxtime.Sleep(ctx, every) {
					break
				}
			}
			if n := s.pending(); n > 0 {
				log.Warn("progress events not delivered", "left", n)
			}
			return
		}
	}
}

func (s *eventStream) refusedErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

func (s *eventStream) pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// flush sends the queue, in batches, until it is empty or a call fails
// (the failed batch goes back to the queue's front).
func (s *eventStream) flush(ctx context.Context) error {
	for {
		s.mu.Lock()
		n := min(len(s.queue), maxBatch)
		batch := slices.Clone(s.queue[:n])
		s.queue = s.queue[n:]
		s.mu.Unlock()
		if n == 0 {
			return nil
		}
		es := make([]fleet.Event, n)
		for i, q := range batch {
			es[i] = q.ev
		}
		cctx, cancel := context.WithTimeout(ctx, eventTimeout)
		err := s.ctl.Events(cctx, s.runID, es)
		cancel()
		if err != nil {
			s.mu.Lock()
			if refused(err) {
				s.refused, s.queue = err, nil
			} else {
				s.push(batch, true)
			}
			s.mu.Unlock()
			return err
		}
	}
}
