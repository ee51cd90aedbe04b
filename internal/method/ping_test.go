package method

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/method/fakenet"
	"github.com/fullpipe/fullpipe/internal/ping"
	"github.com/fullpipe/fullpipe/internal/result"
)

func TestPingRuns(t *testing.T) {
	cases := []struct {
		name      string
		path      *fakenet.Path
		cfg       result.PingConfig
		kind      ping.Kind
		lossPct   [2]float64 // range
		limitPPS  float64
		burst     int
		medianRTT time.Duration
	}{
		{"clean 20 ms", &fakenet.Path{BaseRTT: 20 * time.Millisecond}, result.PingConfig{Count: 50}, ping.Clean, [2]float64{0, 0}, 0, 0, 20 * time.Millisecond},
		{"5 % each way", &fakenet.Path{BaseRTT: 5 * time.Millisecond, LossPct: 5}, result.PingConfig{Count: 2000, Interval: time.Millisecond}, ping.Loss, [2]float64{7.5, 12}, 0, 0, 5 * time.Millisecond},
		{"limited 10/s burst 6", &fakenet.Path{BaseRTT: time.Millisecond, ICMPLimitPPS: 10, ICMPBurst: 6}, result.PingConfig{Count: 300, Interval: 10 * time.Millisecond}, ping.RateLimited, [2]float64{85, 90}, 10, 6, time.Millisecond},
		{"unreach limited 1/s burst 6", &fakenet.Path{BaseRTT: time.Millisecond, ICMPLimitPPS: 1, ICMPBurst: 6}, result.PingConfig{Probe: result.ProbeUnreach, Count: 200, Interval: 50 * time.Millisecond}, ping.RateLimited, [2]float64{90, 95}, 1, 6, time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Ping(context.Background(), c.path, c.cfg, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			v, s := r.Verdict, r.Summary
			if v.Kind != c.kind || s.LossPct < c.lossPct[0] || s.LossPct > c.lossPct[1] {
				t.Fatalf("%s with %.2f %% lost, want %s with %v %%", v.Kind, s.LossPct, c.kind, c.lossPct)
			}
			if c.limitPPS > 0 && (math.Abs(v.LimitPerSec-c.limitPPS)/c.limitPPS > 0.05 || v.Burst != c.burst) {
				t.Errorf("limit %.2f/s burst %d, want %v/s burst %d", v.LimitPerSec, v.Burst, c.limitPPS, c.burst)
			}
			if got := time.Duration(s.P50Us * 1e3); got != c.medianRTT {
				t.Errorf("median RTT %v, want %v", got, c.medianRTT)
			}
		})
	}
}

// The rate search finds a bottleneck's rate in probes/s: 1 Mbit/s counts
// 122 bytes per 56-byte probe (IPv4, ICMP, Ethernet framing 38), so 1024.6
// probes/s; its 10-probe queue lets a 2 s trial run 5 probes/s above.
func TestPingSearchBottleneck(t *testing.T) {
	p := &fakenet.Path{BaseRTT: 2 * time.Millisecond, RateBps: 1e6, QueueBytes: 1220}
	r, err := Ping(context.Background(), p, result.PingConfig{RateSearch: true, Resolution: 0.01}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	capacity := 1e6 / (122 * 8)
	s := r.Search
	if s.ZeroLossPPS < capacity/1.01 || s.ZeroLossPPS > capacity+5 {
		t.Errorf("zero loss at %.1f probes/s, want %.1f to %.1f", s.ZeroLossPPS, capacity/1.01, capacity+5)
	}
	if s.AtRatioPPS < s.ZeroLossPPS || s.AtRatioPPS > capacity*1.01/(1-0.005)+5 {
		t.Errorf("0.5 %% loss at %.1f probes/s", s.AtRatioPPS)
	}
	if s.FrameBytes != 102 || s.ZeroLossBps != s.ZeroLossPPS*102*8 {
		t.Errorf("frame %d B, %.0f bit/s", s.FrameBytes, s.ZeroLossBps)
	}
	if r.Verdict.Kind != ping.Capacity {
		t.Errorf("verdict %+v, want capacity (the queue's delay grew)", r.Verdict)
	}
	t.Logf("%d trials, zero loss %.1f/s, 0.5 %% %.1f/s", len(s.Trials), s.ZeroLossPPS, s.AtRatioPPS)
}

// A rate search against a host that limits its replies names the
// limiter: the rate found is its, not the path's.
func TestPingSearchRateLimited(t *testing.T) {
	p := &fakenet.Path{BaseRTT: time.Millisecond, ICMPLimitPPS: 100, ICMPBurst: 50}
	r, err := Ping(context.Background(), p, result.PingConfig{RateSearch: true, MaxRate: 2000, TrialDuration: time.Second}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict.Kind != ping.RateLimited || math.Abs(r.Verdict.LimitPerSec-100) > 5 {
		t.Fatalf("verdict %+v, want rate-limited at 100/s", r.Verdict)
	}
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "ICMP rate limit at about 100 replies/s") {
		t.Errorf("warnings %q", r.Warnings)
	}
}

func TestPingExecuteAndPartial(t *testing.T) {
	d, err := PingRunner.Run(context.Background(), &fakenet.Path{BaseRTT: time.Millisecond}, result.PingConfig{Count: 3}, nil)
	if _, ok := d.(*result.Ping); !ok || err != nil {
		t.Fatalf("%T, %v", d, err)
	}
	p := &fakenet.Path{BaseRTT: time.Millisecond, ICMPLimitPPS: 100, StallAfter: 2}
	r, err := Ping(context.Background(), p, result.PingConfig{RateSearch: true}, nil, nil)
	if !errors.Is(err, result.ErrPartial) || r == nil || !r.Partial || len(r.Search.Trials) != 2 {
		t.Fatalf("%v, %+v", err, r)
	}
	if _, err := Ping(context.Background(), p, result.PingConfig{Size: 5}, nil, nil); err == nil {
		t.Error("size 5 accepted")
	}
}
