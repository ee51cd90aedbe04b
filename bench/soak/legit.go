package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fullpipe/fullpipe/internal/ctxtime"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/wire"
)

var kinds = []string{"tcp", "udp", "rtt", "mtu"}

// tally counts legitimate tests per kind: completed, refused, failed.
type tally struct {
	mu     sync.Mutex
	counts map[string]*[3]int
	errs   []string
}

func (t *tally) add(kind string, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.counts == nil {
		t.counts = map[string]*[3]int{}
	}
	c := t.counts[kind]
	if c == nil {
		c = &[3]int{}
		t.counts[kind] = c
	}
	var we *wire.Error
	switch {
	case err == nil:
		c[0]++
	case errors.As(err, &we) && (we.Code == wire.CodeBusy || we.Code == wire.CodeLimit):
		c[1]++
	default:
		c[2]++
		if len(t.errs) < 5 {
			t.errs = append(t.errs, kind+": "+err.Error())
		}
	}
}

func (t *tally) get(kind string) [3]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.counts[kind]; c != nil {
		return *c
	}
	return [3]int{}
}

func (t *tally) total() (out [3]int) {
	for _, k := range kinds {
		c := t.get(k)
		for i := range out {
			out[i] += c[i]
		}
	}
	return out
}

func (t *tally) sampleErrors() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.errs...)
}

// legitLoop runs client i's tests one after another, kinds in turn,
// from its own address 127.0.1.(i+1), until ctx ends; each test has 20 s.
// A refused test is retried after the advised wait (at most 2 s).
func legitLoop(ctx context.Context, i int, t *tally) {
	target := tester.Target{Addr: addr, Bind: fmt.Sprintf("127.0.1.%d", i+1)}
	for n := i; ctx.Err() == nil; n++ {
		kind := kinds[n%len(kinds)]
		tctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := legitTest(tctx, target, kind, n)
		cancel()
		if ctx.Err() != nil && err != nil {
			return // cut by the end of the run: not counted
		}
		t.add(kind, err)
		var we *wire.Error
		if errors.As(err, &we) {
			ctxtime.Sleep(ctx, min(max(we.RetryAfter, 100*time.Millisecond), 2*time.Second))
		}
	}
}

// legitTest runs one short test at a modest rate: 1-2 s, 20 Mbit/s.
func legitTest(ctx context.Context, target tester.Target, kind string, n int) error {
	reverse := n%2 == 1
	var err error
	switch kind {
	case "tcp":
		_, err = tester.RunTCP(ctx, target, result.TCPConfig{Streams: 1, Duration: time.Second, Interval: 500 * time.Millisecond, Reverse: reverse, PacingBps: 20e6}, nil)
	case "udp":
		_, err = tester.RunUDP(ctx, target, result.UDPConfig{RateBps: 20e6, Size: 1200, Duration: time.Second, Reverse: reverse, Interval: 500 * time.Millisecond, Drain: 200 * time.Millisecond}, nil)
	case "rtt":
		_, err = tester.RunRTT(ctx, target, result.RTTConfig{Count: 50, Interval: 20 * time.Millisecond, Size: 64}, nil)
	case "mtu":
		_, err = tester.RunPMTU(ctx, target, result.PMTUConfig{MinBytes: 1200, MaxBytes: 9000, Tries: 2})
	}
	return err
}
