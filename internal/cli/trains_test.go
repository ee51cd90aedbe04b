package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/serve"
)

// TestTrainsLoopback: `fullpipe trains` up and down over loopback, whose
// only limit is the hosts: every train arrives whole at the rate it was
// sent, so the path reads clean both ways, in one JSON document. At
// --rate 100M the trains leave at 400 Mbit/s and stay under 5 MB; at 1G
// they left at 4 Gbit/s, up to 32 MB, and a host busy elsewhere spaced
// them on loopback itself (its receive path runs in deferred softirq
// work), a real bottleneck that the trains then read as a queue.
func TestTrainsLoopback(t *testing.T) {
	addr := server(t, serve.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code, out, errs := run(t, ctx, "trains", addr, "--rate", "100M", "--rtt", "1ms", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res struct {
		Test       string `json:"test"`
		Directions map[string]struct {
			Verdict struct {
				Kind string `json:"kind"`
				Why  string `json:"why"`
			} `json:"verdict"`
			Trains []struct {
				Packets    int `json:"packets"`
				LocalDrops int `json:"local_drops"`
			} `json:"trains"`
		} `json:"directions"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out)
	}
	for _, dir := range []string{"up", "down"} {
		d := res.Directions[dir]
		t.Logf("%s: %s after %d trains: %s", dir, d.Verdict.Kind, len(d.Trains), d.Verdict.Why)
		if d.Verdict.Kind != "clean" || len(d.Trains) < 2 || d.Trains[0].Packets != 16 {
			t.Errorf("%s: %s after %d trains, want clean after the series from 16 packets", dir, d.Verdict.Kind, len(d.Trains))
		}
	}
	if res.Test != "trains" {
		t.Errorf("test %q, want trains", res.Test)
	}
}

// TestTrainsUsage: without --rate or --rtt, or with a direction it does
// not know, trains says so in one line and exits 2.
func TestTrainsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"trains", "127.0.0.1", "--rtt", "20ms"},
		{"trains", "127.0.0.1", "--rate", "100M"},
		{"trains", "127.0.0.1", "--rate", "100M", "--rtt", "20ms", "--direction", "sideways"},
		{"trains", "127.0.0.1", "--rate", "100M", "--rtt", "20ms", "--mtu", "100"},
	} {
		code, _, errs := run(t, context.Background(), args...)
		if code != 2 || strings.Count(strings.TrimSpace(errs), "\n") > 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line (plus the usage hint)", args[3:], code, errs)
		}
	}
}
