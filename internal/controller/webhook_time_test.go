package controller

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// resultStore holds the results the webhook reads; the rest of
// fleet.Store is not there (nil: a call panics).
type resultStore struct {
	fleet.Store
}

func (resultStore) Result(_ context.Context, runID string) (fleet.Result, error) {
	return fleet.Result{RunID: runID, Doc: json.RawMessage(`{}`)}, nil
}

// hookCall is one POST the webhook made.
type hookCall struct {
	run string
	at  time.Time
}

// hookReceiver answers the webhook's POSTs in memory (an
// http.RoundTripper: no socket, so that it runs in a synctest bubble)
// with the status answer picks for the run's n-th attempt, from 1.
type hookReceiver struct {
	answer func(run string, n int) int

	mu    sync.Mutex // guards calls
	calls []hookCall
}

func (h *hookReceiver) RoundTrip(req *http.Request) (*http.Response, error) {
	var r fleet.Result
	if err := json.NewDecoder(req.Body).Decode(&r); err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.calls = append(h.calls, hookCall{r.RunID, time.Now()})
	n := len(h.times(r.RunID))
	h.mu.Unlock()
	code := h.answer(r.RunID, n)
	return &http.Response{StatusCode: code, Status: http.StatusText(code), Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

// times are run's attempts' times; h.mu is held.
func (h *hookReceiver) times(run string) []time.Time {
	var ts []time.Time
	for _, c := range h.calls {
		if c.run == run {
			ts = append(ts, c.at)
		}
	}
	return ts
}

// TestWebhookTiming, on fake time: a receiver that keeps answering 503
// gets webhookAttempts attempts, the waits doubling from webhookFirst
// (1, 2, 4 … 64 s); a result queued without a wake goes at the next
// sweep, exactly webhookSweep later, and after a 429 once more a second
// on; one queued with a wake goes at once, and a 400 is not retried.
func TestWebhookTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h *webhook
		recv := &hookReceiver{}
		recv.answer = func(run string, n int) int {
			switch {
			case run == "r1" && n == webhookAttempts:
				if _, err := h.intend("r2"); err != nil { // queued, no wake
					t.Error(err)
				}
				return http.StatusServiceUnavailable
			case run == "r1":
				return http.StatusServiceUnavailable
			case run == "r2" && n == 1:
				return http.StatusTooManyRequests
			case run == "r2":
				existed, err := h.intend("r3")
				if err != nil {
					t.Error(err)
				}
				h.settle("r3", existed, true) // stored: wakes the sender
				return http.StatusOK
			}
			return http.StatusBadRequest
		}
		var err error
		h, err = newWebhook("http://hook.test/", t.TempDir(), resultStore{}, slog.New(slog.DiscardHandler), newMetrics(&Controller{}))
		if err != nil {
			t.Fatal(err)
		}
		h.http = &http.Client{Transport: recv, Timeout: webhookTimeout}
		if _, err := h.intend("r1"); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
		defer cancel()
		t0 := time.Now()
		h.run(ctx)

		recv.mu.Lock()
		r1, r2, r3 := recv.times("r1"), recv.times("r2"), recv.times("r3")
		recv.mu.Unlock()
		var want []time.Time
		for at, wait := t0, webhookFirst; len(want) < webhookAttempts; at, wait = at.Add(wait), min(2*wait, webhookMaxWait) {
			want = append(want, at)
		}
		want = append(want, want[webhookAttempts-1].Add(webhookSweep)) // r2 at the next sweep
		want = append(want, want[webhookAttempts].Add(webhookFirst))   // r2 again after its 429
		want = append(want, want[webhookAttempts+1])                   // r3 at once, woken
		got := append(append(append([]time.Time{}, r1...), r2...), r3...)
		if len(got) != len(want) {
			t.Fatalf("attempts: r1 %d, r2 %d, r3 %d; want %d, 2, 1", len(r1), len(r2), len(r3), webhookAttempts)
		}
		for i := range want {
			if !got[i].Equal(want[i]) {
				t.Errorf("attempt %d at +%v, want +%v", i+1, got[i].Sub(t0), want[i].Sub(t0))
			}
		}
		byOutcome := outcomes(t, h.m.webhook)
		for outcome, n := range map[string]float64{"delivered": 1, "retried": webhookAttempts - 1 + 1, "failed": 2} {
			if byOutcome[outcome] != n {
				t.Errorf("deliveries %s: %v, want %v", outcome, byOutcome[outcome], n)
			}
		}
		if es, _ := os.ReadDir(h.dir); len(es) != 0 {
			t.Errorf("outbox holds %d files after every result was delivered or given up", len(es))
		}
	})
}

// outcomes are a counter vector's values by their one label's value.
func outcomes(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]float64{}
	for _, mf := range mfs {
		for _, x := range mf.GetMetric() {
			m[x.GetLabel()[0].GetValue()] = x.GetCounter().GetValue()
		}
	}
	return m
}
