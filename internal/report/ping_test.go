package report

import (
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/ping"
	"github.com/fullpipe/fullpipe/internal/result"
)

// A rate search that met a limiter says so in words, in the text and on
// the page, with its trials' table.
func TestPingSearchRateLimited(t *testing.T) {
	limited := ping.Verdict{Kind: ping.RateLimited, Sent: 2000, Answered: 206, LossPct: 89.7, OfferedPerSec: 1000, LimitPerSec: 100, Burst: 6, Explained: 1}
	d := &result.Ping{Meta: result.Meta{Schema: result.Schema, Test: "ping", Target: "198.18.0.2", Started: time.Unix(0, 0)},
		Config: result.PingConfig{Probe: result.ProbeEcho, Count: 20, Interval: 100 * time.Millisecond, Size: 56, Wait: time.Second,
			RateSearch: true, MinRate: 10, MaxRate: 1000, TrialDuration: 2 * time.Second, LossRatio: 0.005, Resolution: 0.05}.WithDefaults(),
		Socket: "raw", Verdict: limited, Warnings: []string{"the trials hit an ICMP rate limit at about 100 replies/s: the rates found are the limiter's, not the path's"},
		Search: &result.PingSearch{FrameBytes: 102, ZeroLossPPS: 101, ZeroLossBps: 101 * 816, AtRatioPPS: 101, AtRatioBps: 101 * 816,
			Trials: []result.PingTrial{{RatePPS: 1000, Sent: 2000, Received: 206, LossPct: 89.7, RepliesPPS: 103, MedianRTTUs: 1021, Verdict: limited}}}}
	var text strings.Builder
	if err := RenderPing.Text(&text, d); err != nil {
		t.Fatal(err)
	}
	page, err := RenderPing.HTML(d)
	if err != nil {
		t.Fatal(err)
	}
	contains(t, "text", text.String(), []string{"ICMP rate-limited at about 100/s (burst 6)", "101 probes/s (82.42 kbit/s in 102-byte frames)", "1.021 ms", "rate-limited"})
	contains(t, "page", string(page), []string{"ICMP rate-limited at about 100/s", "Rate search", "rate-limited at 100/s", "1.021 ms"})
	wellFormed(t, page)
}
