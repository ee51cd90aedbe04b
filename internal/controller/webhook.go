package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync/atomic"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// The webhook's bounds.
const (
	webhookMaxPending = 100_000          // run IDs in the outbox; more are dropped and counted
	webhookAttempts   = 8                // per result
	webhookFirst      = time.Second      // first retry's wait, doubled each time
	webhookMaxWait    = 2 * time.Minute  // longest wait between attempts
	webhookTimeout    = 10 * time.Second // per attempt
	webhookSweep      = 30 * time.Second // the outbox is read again at least this often
)

// webhook is the first archiver: it POSTs each stored result (a
// fleet.Result as JSON, read from the store) to a URL, retrying with
// exponential backoff.
//
// Its queue is an outbox directory in StateDir: one empty file per run
// ID, written before the upload is acknowledged and removed once the
// result is delivered or refused for good. A controller that stops or
// dies with deliveries pending sends them when it starts again, so
// delivery is at least once (a receiver dedupes by run_id); deliveries
// are lost only with the state directory, or when the outbox is full.
// enqueue never blocks on the network; run is the one goroutine that
// sends, and ends with its context.
type webhook struct {
	url         string
	changesOnly bool   // Config.WebhookChanges: only results whose health changed (healthChanged)
	dir         string // the outbox
	store       fleet.Store
	log         *slog.Logger
	m           *metrics
	wake        chan struct{} // cap 1: something was queued
	count       atomic.Int64  // files in the outbox, about (set at each sweep)
	http        *http.Client
	backoff     time.Duration // webhookFirst; shorter in tests
}

// healthChanged says whether r's health differs from its previous
// result's: both judged and different, or a first judgement that is an
// alert.
func healthChanged(r fleet.Result) bool {
	if r.PreviousHealth == "" {
		return r.Health == fleet.HealthAlert
	}
	return r.Health != "" && r.Health != r.PreviousHealth
}

func newWebhook(url, stateDir string, st fleet.Store, log *slog.Logger, m *metrics) (*webhook, error) {
	dir := filepath.Join(stateDir, "outbox")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("controller webhook outbox: %w", err)
	}
	return &webhook{url: url, dir: dir, store: st, log: log, m: m, wake: make(chan struct{}, 1),
		http: &http.Client{Timeout: webhookTimeout}, backoff: webhookFirst}, nil
}

// runIDs are what the store makes (hex); anything else in the outbox is
// not ours.
var runID = regexp.MustCompile(`^[0-9a-zA-Z_-]{1,128}$`)

// intend writes run's outbox file (empty, named by its ID) before its
// result is stored, so that a controller dying in between still delivers
// it when it starts again; existed says a file was there already (an
// upload retried after such a death). When the outbox is full the result
// is dropped (counted) and no file written.
func (h *webhook) intend(run string) (existed bool, err error) {
	if !runID.MatchString(run) {
		return false, fmt.Errorf("webhook: run ID %q cannot name an outbox file", run)
	}
	path := filepath.Join(h.dir, run)
	if _, err := os.Stat(path); err == nil {
		return true, nil
	}
	if h.count.Load() >= webhookMaxPending {
		h.m.webhookLost.Inc()
		h.log.Warn("webhook outbox full: result not delivered", "run", run)
		return false, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return false, fmt.Errorf("webhook outbox: %w", err)
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		return false, fmt.Errorf("webhook outbox: %w", err)
	}
	h.count.Add(1)
	return false, nil
}

// settle follows the store's answer: a result stored (or one whose file
// an earlier, interrupted upload left) is sent; a file written for an
// upload that stored nothing is removed.
func (h *webhook) settle(run string, existed, stored bool) {
	if !stored && !existed {
		if os.Remove(filepath.Join(h.dir, run)) == nil {
			h.count.Add(-1)
		}
		return
	}
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// pending are the run IDs in the outbox, oldest first.
func (h *webhook) pending() ([]string, error) {
	es, err := os.ReadDir(h.dir)
	if err != nil {
		return nil, err
	}
	type item struct {
		id string
		t  time.Time
	}
	var items []item
	for _, e := range es {
		if fi, err := e.Info(); err == nil && e.Type().IsRegular() && runID.MatchString(e.Name()) {
			items = append(items, item{e.Name(), fi.ModTime()})
		}
	}
	slices.SortFunc(items, func(a, b item) int { return a.t.Compare(b.t) })
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.id
	}
	return ids, nil
}

func (h *webhook) run(ctx context.Context) {
	for {
		ids, err := h.pending()
		if err != nil {
			h.log.Error("webhook outbox", "error", err.Error())
		}
		h.count.Store(int64(len(ids)))
		for _, id := range ids {
			if ctx.Err() != nil {
				break
			}
			if h.deliver(ctx, id) && os.Remove(filepath.Join(h.dir, id)) == nil {
				h.count.Add(-1)
			}
		}
		t := time.NewTimer(webhookSweep)
		select {
		case <-ctx.Done():
			t.Stop()
			if ids, _ := h.pending(); len(ids) > 0 {
				h.log.Info("controller stopping: webhook deliveries wait in the outbox for the next start", "pending", len(ids))
			}
			return
		case <-h.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// deliver sends run's result until it is taken (2xx), refused for good
// (4xx other than 408 and 429, or no such result), or the attempts run
// out: done says so. It is not done when ctx ends first.
func (h *webhook) deliver(ctx context.Context, run string) (done bool) {
	r, err := h.store.Result(ctx, run)
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		h.m.webhook.WithLabelValues("failed").Inc()
		h.log.Error("webhook: reading the result", "run", run, "error", err.Error())
		return errors.Is(err, fleet.ErrNotFound)
	}
	if h.changesOnly && !healthChanged(r) {
		return true // stored otherwise than an earlier upload judged it
	}
	body, err := json.Marshal(r)
	if err != nil {
		h.m.webhook.WithLabelValues("failed").Inc()
		return true
	}
	wait := h.backoff
	for attempt := 1; ; attempt++ {
		retry, err := h.post(ctx, body)
		switch {
		case err == nil:
			h.m.webhook.WithLabelValues("delivered").Inc()
			return true
		case ctx.Err() != nil:
			return false
		case !retry || attempt == webhookAttempts:
			h.m.webhook.WithLabelValues("failed").Inc()
			h.log.Error("webhook delivery failed", "run", run, "attempts", attempt, "error", err.Error())
			return true
		}
		h.m.webhook.WithLabelValues("retried").Inc()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		wait = min(2*wait, webhookMaxWait)
	}
}

// post makes one attempt; retry says whether another may succeed.
func (h *webhook) post(ctx context.Context, body []byte) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.http.Do(req)
	if err != nil {
		return true, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	switch {
	case resp.StatusCode < 300:
		return false, nil
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return true, fmt.Errorf("webhook answered %s", resp.Status)
	}
	return false, fmt.Errorf("webhook refused the result: %s", resp.Status)
}
