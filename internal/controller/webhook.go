package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// The webhook's bounds.
const (
	webhookQueue    = 1000             // results waiting; more are dropped and counted
	webhookAttempts = 8                // per result
	webhookFirst    = time.Second      // first retry's wait, doubled each time
	webhookMaxWait  = 2 * time.Minute  // longest wait between attempts
	webhookTimeout  = 10 * time.Second // per attempt
)

// webhook is the first archiver: it POSTs each stored result (a
// fleet.Result as JSON) to a URL, retrying with exponential backoff.
// Its queue lives in memory: what is queued or being retried when the
// controller stops is lost (logged with its count); the results
// themselves stay in the store. enqueue never blocks; run is the one
// goroutine that sends, and ends with its context.
type webhook struct {
	url     string
	log     *slog.Logger
	m       *metrics
	queue   chan fleet.Result
	http    *http.Client
	backoff time.Duration // webhookFirst; shorter in tests
}

func newWebhook(url string, log *slog.Logger, m *metrics) *webhook {
	return &webhook{url: url, log: log, m: m, queue: make(chan fleet.Result, webhookQueue),
		http: &http.Client{Timeout: webhookTimeout}, backoff: webhookFirst}
}

// enqueue queues r, or drops it (counted) when the queue is full.
func (h *webhook) enqueue(r fleet.Result) {
	select {
	case h.queue <- r:
	default:
		h.m.webhookLost.Inc()
		h.log.Warn("webhook queue full: result not delivered", "run", r.RunID)
	}
}

func (h *webhook) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			if n := len(h.queue); n > 0 {
				h.log.Warn("controller stopping: webhook deliveries lost", "queued", n)
			}
			return
		case r := <-h.queue:
			h.deliver(ctx, r)
		}
	}
}

// deliver sends r until it is taken (2xx), refused for good (4xx other
// than 408 and 429), or the attempts run out.
func (h *webhook) deliver(ctx context.Context, r fleet.Result) {
	body, err := json.Marshal(r)
	if err != nil {
		h.m.webhook.WithLabelValues("failed").Inc()
		return
	}
	wait := h.backoff
	for attempt := 1; ; attempt++ {
		retry, err := h.post(ctx, body)
		if err == nil {
			h.m.webhook.WithLabelValues("delivered").Inc()
			return
		}
		if !retry || attempt == webhookAttempts {
			h.m.webhook.WithLabelValues("failed").Inc()
			h.log.Error("webhook delivery failed", "run", r.RunID, "attempts", attempt, "error", err.Error())
			return
		}
		h.m.webhook.WithLabelValues("retried").Inc()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			h.log.Warn("controller stopping: webhook delivery lost", "run", r.RunID)
			return
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
