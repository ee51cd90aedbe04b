package method

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/testkit"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// sweepPrepared checks a window sweep's config as RunWindowSweep does:
// its own rules, then each point's as the engine will run it.
type sweepPrepared struct{ c result.WindowSweepConfig }

func (s sweepPrepared) Validate() error {
	if err := s.c.Validate(); err != nil {
		return err
	}
	return checkPoints(s.c)
}

// TestZeroMethodConfigs: the zero value of each method config, with its
// defaults, is valid, but for what only the user knows (the CIR; the
// rate and RTT of the path for trains), which its error names.
func TestZeroMethodConfigs(t *testing.T) {
	checkValid(t, []validCase{
		{"rfc6349 zero", result.RFC6349Config{}.WithDefaults(), "cir_bps: required"},
		{"rfc6349 with a cir", result.RFC6349Config{CIRBps: 10e6}.WithDefaults(), ""},
		{"window sweep zero", result.WindowSweepConfig{}.WithDefaults(), ""},
		{"msglen sweep zero", result.MsgLenSweepConfig{}.WithDefaults(), ""},
		{"trains zero", result.TrainsConfig{}.WithDefaults(), "rate_bps: 0 bit/s: the path's rate is required"},
		{"trains with rate and rtt", result.TrainsConfig{RateBps: 10e6, RTT: 20 * time.Millisecond}.WithDefaults(), ""},
	})
	c := result.RFC6349Config{CIRBps: 1}.WithDefaults()
	if len(c.Directions) != 2 || c.Duration != 30*time.Second || c.StepDuration != 5*time.Second || c.Link != "ethernet" ||
		c.Thresholds.MinActualPct != 95 || c.Thresholds.MinEfficiencyPct != 99 || c.ShapingConns != 4 {
		t.Errorf("rfc6349 defaults %+v", c)
	}
	w := result.WindowSweepConfig{}.WithDefaults()
	if len(w.Windows) != 64 || w.Windows[0] != 1448 || w.Windows[63] != 64*1448 || w.CC != "reno" || w.Settle != w.Duration/3 || w.Interval != 200*time.Millisecond {
		t.Errorf("window sweep defaults %+v", w)
	}
	m := result.MsgLenSweepConfig{}.WithDefaults()
	if len(m.Sizes) != 11 || m.Sizes[0] != 64 || m.Sizes[10] != 65536 || m.UDPRateBps != 50e6 || m.Duration != 5*time.Second {
		t.Errorf("msglen defaults %+v", m)
	}
	tr := result.TrainsConfig{RateBps: 7}.WithDefaults()
	if len(tr.Directions) != 2 || tr.MTU != 1500 || tr.Link != "ethernet" || tr.CIRBps != 7 {
		t.Errorf("trains defaults %+v", tr)
	}
}

// TestMethodConfigValidate: each rule of the method configs at its edges.
func TestMethodConfigValidate(t *testing.T) {
	rfc := func(f func(*result.RFC6349Config)) result.RFC6349Config {
		c := result.RFC6349Config{CIRBps: 10e6}.WithDefaults()
		f(&c)
		return c
	}
	ws := func(f func(*result.WindowSweepConfig)) sweepPrepared {
		c := result.WindowSweepConfig{}.WithDefaults()
		f(&c)
		return sweepPrepared{c}
	}
	ml := func(f func(*result.MsgLenSweepConfig)) result.MsgLenSweepConfig {
		c := result.MsgLenSweepConfig{}.WithDefaults()
		f(&c)
		return c
	}
	trc := func(f func(*result.TrainsConfig)) result.TrainsConfig {
		c := result.TrainsConfig{RateBps: 10e6, RTT: 20 * time.Millisecond}.WithDefaults()
		f(&c)
		return c
	}
	checkValid(t, []validCase{
		{"rfc duration 1s", rfc(func(c *result.RFC6349Config) { c.Duration, c.StepDuration = time.Second, time.Second }), ""},
		{"rfc duration below 1s", rfc(func(c *result.RFC6349Config) { c.Duration = time.Second - 1 }), "throughput_duration_ns: 999.999999ms: want at least 1s"},
		{"rfc step below 1s", rfc(func(c *result.RFC6349Config) { c.StepDuration = time.Second - 1 }), "step_duration_ns: 999.999999ms: want at least 1s"},
		{"rfc shaping 2", rfc(func(c *result.RFC6349Config) { c.ShapingConns = 2 }), ""},
		{"rfc shaping 1", rfc(func(c *result.RFC6349Config) { c.ShapingConns = 1 }), "shaping_connections: 1"},
		{"rfc sweep 64", rfc(func(c *result.RFC6349Config) { c.SweepPoints = 64 }), ""},
		{"rfc sweep 65", rfc(func(c *result.RFC6349Config) { c.SweepPoints = 65 }), "sweep_points: 65"},
		{"rfc sweep -1", rfc(func(c *result.RFC6349Config) { c.SweepPoints = -1 }), "sweep_points: -1"},
		{"rfc max window 1500", rfc(func(c *result.RFC6349Config) { c.MaxWindow = 1500 }), ""},
		{"rfc max window 1499", rfc(func(c *result.RFC6349Config) { c.MaxWindow = 1499 }), "max_window_bytes: 1499"},
		{"rfc direction", rfc(func(c *result.RFC6349Config) { c.Directions = []vocab.Direction{"sideways"} }), "want up, down or both"},
		{"rfc direction twice", rfc(func(c *result.RFC6349Config) { c.Directions = []vocab.Direction{"up", "up"} }), "each once"},
		{"rfc link", rfc(func(c *result.RFC6349Config) { c.Link = "token-ring" }), `--link "token-ring"`},
		{"rfc threshold 100", rfc(func(c *result.RFC6349Config) { c.Thresholds.MinEfficiencyPct = 100 }), ""},
		{"rfc threshold 101", rfc(func(c *result.RFC6349Config) { c.Thresholds.MinActualPct = 101 }), "percentages of 0 to 100"},
		{"rfc cc", rfc(func(c *result.RFC6349Config) { c.CC = "Reno" }), "not a congestion-control name"},
		{"sweep no window", ws(func(c *result.WindowSweepConfig) { c.Windows = []int{} }), "0 windows: want 1 to 256"},
		{"sweep 257 windows", ws(func(c *result.WindowSweepConfig) { c.Windows = make([]int, 257) }), "257 windows"},
		{"sweep window 0", ws(func(c *result.WindowSweepConfig) { c.Windows = []int{0} }), "windows_bytes: 0 bytes"},
		{"sweep window past 1 GiB", ws(func(c *result.WindowSweepConfig) { c.Windows = []int{1<<30 + 1} }), "above the 1 GiB"},
		{"sweep mss 87", ws(func(c *result.WindowSweepConfig) { c.MSS = 87 }), "mss_bytes: 87"},
		{"sweep duration below 1s", ws(func(c *result.WindowSweepConfig) { c.Duration, c.Settle = time.Second-1, 0 }), "want at least 1s per point"},
		{"sweep interval 49ms", ws(func(c *result.WindowSweepConfig) { c.Interval = 49 * time.Millisecond }), "interval_ns: 49ms"},
		{"sweep interval half", ws(func(c *result.WindowSweepConfig) { c.Interval = c.Duration / 2 }), ""},
		{"sweep interval past half", ws(func(c *result.WindowSweepConfig) { c.Interval = c.Duration/2 + 1 }), "half of the duration"},
		{"sweep probe gap 9ms", ws(func(c *result.WindowSweepConfig) { c.ProbeGap = 9 * time.Millisecond }), "probe_gap_ns: 9ms"},
		{"sweep baseline 2", ws(func(c *result.WindowSweepConfig) { c.BaselineProbes = 2 }), "baseline_probes: 2"},
		{"sweep baseline 100", ws(func(c *result.WindowSweepConfig) { c.BaselineProbes = 100 }), ""},
		{"sweep 3 classes", ws(func(c *result.WindowSweepConfig) { c.ProbeDSCPs = []int{0, 10, 46} }), "at most two"},
		{"sweep dscp 64", ws(func(c *result.WindowSweepConfig) { c.ProbeDSCPs = []int{64} }), "probe dscp 64"},
		{"sweep settle past duration", ws(func(c *result.WindowSweepConfig) { c.Settle = c.Duration }), "settle"},
		{"msglen size 0", ml(func(c *result.MsgLenSweepConfig) { c.Sizes = []int{0} }), "sizes_bytes: 0 bytes"},
		{"msglen size 16 MiB", ml(func(c *result.MsgLenSweepConfig) { c.Sizes = []int{16 << 20} }), ""},
		{"msglen size past 16 MiB", ml(func(c *result.MsgLenSweepConfig) { c.Sizes = []int{16<<20 + 1} }), "1 B to 16 MiB"},
		{"msglen negative rate", ml(func(c *result.MsgLenSweepConfig) { c.UDPRateBps = -1 }), "UDP needs a rate > 0"},
		{"msglen interval past half", ml(func(c *result.MsgLenSweepConfig) { c.Interval = c.Duration/2 + 1 }), "half of the duration"},
		{"trains rtt 10s", trc(func(c *result.TrainsConfig) { c.RTT = 10 * time.Second }), ""},
		{"trains rtt past 10s", trc(func(c *result.TrainsConfig) { c.RTT = 10*time.Second + 1 }), "rtt_ns: 10.000000001s"},
		{"trains mtu 575", trc(func(c *result.TrainsConfig) { c.MTU = 575 }), "mtu_bytes: 575"},
		{"trains mtu 9216", trc(func(c *result.TrainsConfig) { c.MTU = 9216 }), ""},
		{"trains mtu 9217", trc(func(c *result.TrainsConfig) { c.MTU = 9217 }), "mtu_bytes: 9217"},
		{"trains negative cir", trc(func(c *result.TrainsConfig) { c.CIRBps = -1 }), "must not be negative"},
		{"trains direction", trc(func(c *result.TrainsConfig) { c.Directions = []vocab.Direction{"left"} }), "want up, down or both"},
	})
}

// TestMethodRunRefusesBadConfig: each method's Run refuses a bad config
// before it connects (nothing listens at the target: a dial would say
// "refused").
func TestMethodRunRefusesBadConfig(t *testing.T) {
	ctx := context.Background()
	tg := tester.Remote{T: tester.Target{Addr: "127.0.0.1:1"}}
	for name, run := range map[string]func() error{
		"rfc6349": func() error { _, err := Run(ctx, tg, result.RFC6349Config{}, nil); return err },
		"window":  func() error { _, err := RunWindowSweep(ctx, tg, result.WindowSweepConfig{MSS: 1}, nil); return err },
		"msglen": func() error {
			_, err := RunMsgLenSweep(ctx, tg, result.MsgLenSweepConfig{Sizes: []int{-1}}, nil)
			return err
		},
		"trains": func() error { _, err := Trains(ctx, tg, result.TrainsConfig{}, nil); return err },
	} {
		if err := run(); err == nil || !strings.Contains(err.Error(), "config: ") || strings.Contains(err.Error(), "refused") {
			t.Errorf("%s: err = %v, want the config refused before any dial", name, err)
		}
	}
}

type validCase struct {
	name string
	cfg  interface{ Validate() error }
	want string
}

func checkValid(t *testing.T, cases []validCase) {
	t.Helper()
	for _, c := range cases {
		testkit.CheckValid(t, c.name, c.cfg, c.want)
	}
}
