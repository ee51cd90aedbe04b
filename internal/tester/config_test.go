package tester

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/testkit"
)

// validator is what every engine config is.
type validator interface{ Validate() error }

// TestZeroConfigsValid: the zero value of every engine config, with its
// defaults, is valid, and the defaults are the documented ones.
func TestZeroConfigsValid(t *testing.T) {
	for name, cfg := range map[string]validator{
		"tcp":          result.TCPConfig{}.WithDefaults(),
		"udp":          result.UDPConfig{}.WithDefaults(),
		"rtt":          result.RTTConfig{}.WithDefaults(),
		"pmtu":         result.PMTUConfig{}.WithDefaults(),
		"train":        result.TrainConfig{}.WithDefaults(),
		"window point": result.WindowPointConfig{}.WithDefaults(),
	} {
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: zero value with defaults: %v", name, err)
		}
	}
	if c := (result.TCPConfig{}).WithDefaults(); c.Streams != 1 || c.Duration != 10*time.Second || c.Interval != time.Second {
		t.Errorf("tcp defaults %+v, want 1 stream, 10 s, 1 s intervals", c)
	}
	if c := (result.TCPConfig{Bytes: 1000}).WithDefaults(); c.Duration != 0 {
		t.Errorf("a byte-count test got a duration of %v", c.Duration)
	}
	if c := (result.UDPConfig{}).WithDefaults(); c != (result.UDPConfig{RateBps: 10e6, Size: 1400, Duration: 10 * time.Second, Interval: time.Second, Drain: 500 * time.Millisecond}) {
		t.Errorf("udp defaults %+v", c)
	}
	if c := (result.RTTConfig{}).WithDefaults(); c != (result.RTTConfig{Count: 10, Interval: 100 * time.Millisecond, Size: 64}) {
		t.Errorf("rtt defaults %+v", c)
	}
	if c := (result.PMTUConfig{}).WithDefaults(); c != (result.PMTUConfig{Tries: 3}) {
		t.Errorf("pmtu defaults %+v", c)
	}
	if c := (result.TrainConfig{}).WithDefaults(); c != (result.TrainConfig{Packets: 16, Size: 1472, Drain: 500 * time.Millisecond}) {
		t.Errorf("train defaults %+v", c)
	}
	c := result.WindowPointConfig{}.WithDefaults()
	if len(c.DSCPs) != 1 || c.DSCPs[0] != 0 || c.Baseline != 10 || c.BaselineGap != 20*time.Millisecond || c.ProbeGap != 100*time.Millisecond || c.TCP.Streams != 1 {
		t.Errorf("window point defaults %+v", c)
	}
	// What is set stays.
	if c := (result.TCPConfig{Streams: 3, Duration: time.Second, Interval: 200 * time.Millisecond}).WithDefaults(); c.Streams != 3 || c.Duration != time.Second || c.Interval != 200*time.Millisecond {
		t.Errorf("defaults overwrote set fields: %+v", c)
	}
}

func tcpCfg(f func(*result.TCPConfig)) result.TCPConfig {
	c := result.TCPConfig{}.WithDefaults()
	f(&c)
	return c
}

// TestTCPConfigValidate: each rule of a TCP test at its edges, the
// request's own (streams, DSCP, interval, cc) and the client's (bytes
// against streams, reverse with bidir, window, MSS).
func TestTCPConfigValidate(t *testing.T) {
	checkValid(t, []validCase{
		{"streams 0", tcpCfg(func(c *result.TCPConfig) { c.Streams = 0 }), "streams: 0: want at least 1"},
		{"streams 1000", tcpCfg(func(c *result.TCPConfig) { c.Streams = 1000 }), ""}, // the responder's limit decides
		{"negative duration", tcpCfg(func(c *result.TCPConfig) { c.Duration, c.Bytes = -1, 10 }), "duration_ns: -1ns must not be negative"},
		{"no duration, no bytes", tcpCfg(func(c *result.TCPConfig) { c.Duration = 0 }), "needs a duration or a byte count"},
		{"duration and bytes", tcpCfg(func(c *result.TCPConfig) { c.Bytes = 10 }), "not both"},
		{"bytes = streams", tcpCfg(func(c *result.TCPConfig) { c.Duration, c.Bytes, c.Streams = 0, 4, 4 }), ""},
		{"bytes < streams", tcpCfg(func(c *result.TCPConfig) { c.Duration, c.Bytes, c.Streams = 0, 3, 4 }), "fewer than one byte per stream"},
		{"negative bytes", tcpCfg(func(c *result.TCPConfig) { c.Bytes = -1 }), "must not be negative"},
		{"reverse and bidir", tcpCfg(func(c *result.TCPConfig) { c.Reverse, c.Bidir = true, true }), "exclude each other"},
		{"window -1", tcpCfg(func(c *result.TCPConfig) { c.Window = -1 }), "must not be negative"},
		{"window 1 GiB", tcpCfg(func(c *result.TCPConfig) { c.Window = 1 << 30 }), ""},
		{"window past 1 GiB", tcpCfg(func(c *result.TCPConfig) { c.Window = 1<<30 + 1 }), "above the 1 GiB TCP maximum"},
		{"mss 87", tcpCfg(func(c *result.TCPConfig) { c.MSS = 87 }), "mss_bytes: 87: Linux accepts 88 to 65495 bytes"},
		{"mss 88", tcpCfg(func(c *result.TCPConfig) { c.MSS = 88 }), ""},
		{"mss 65495", tcpCfg(func(c *result.TCPConfig) { c.MSS = 65495 }), ""},
		{"mss_bytes: 65496", tcpCfg(func(c *result.TCPConfig) { c.MSS = 65496 }), "mss_bytes: 65496"},
		{"dscp 63", tcpCfg(func(c *result.TCPConfig) { c.DSCP = 63 }), ""},
		{"dscp 64", tcpCfg(func(c *result.TCPConfig) { c.DSCP = 64 }), "dscp: 64: want a code point from 0 to 63"},
		{"interval 10ms", tcpCfg(func(c *result.TCPConfig) { c.Interval = 10 * time.Millisecond }), ""},
		{"interval 9ms", tcpCfg(func(c *result.TCPConfig) { c.Interval = 9 * time.Millisecond }), "below the minimum of 10ms"},
		{"cc cubic", tcpCfg(func(c *result.TCPConfig) { c.CC = "cubic" }), ""},
		{"cc name", tcpCfg(func(c *result.TCPConfig) { c.CC = "cubic; rm" }), "not a congestion-control name"},
		{"negative pacing", tcpCfg(func(c *result.TCPConfig) { c.PacingBps = -1 }), "must not be negative"},
		{"negative write size", tcpCfg(func(c *result.TCPConfig) { c.WriteSize = -1 }), "write_size must not be negative"},
		{"pacing past 1 Tbit/s", tcpCfg(func(c *result.TCPConfig) { c.PacingBps = 1e12 + 1 }), "no interface sends faster"},
	})
}

func udpCfg(f func(*result.UDPConfig)) result.UDPConfig {
	c := result.UDPConfig{}.WithDefaults()
	f(&c)
	return c
}

func rttCfg(f func(*result.RTTConfig)) result.RTTConfig {
	c := result.RTTConfig{}.WithDefaults()
	f(&c)
	return c
}

// TestUDPRTTConfigValidate: the rules of UDP and RTT tests at their edges.
func TestUDPRTTConfigValidate(t *testing.T) {
	checkValid(t, []validCase{
		{"udp rate -1", udpCfg(func(c *result.UDPConfig) { c.RateBps = -1 }), "UDP needs a rate > 0"},
		{"udp size 17", udpCfg(func(c *result.UDPConfig) { c.Size = 17 }), "a size of 18 to 65507 bytes"},
		{"udp size 40", udpCfg(func(c *result.UDPConfig) { c.Size = 40 }), ""},
		{"udp size 65507", udpCfg(func(c *result.UDPConfig) { c.Size = 65507 }), ""},
		{"udp size 65508", udpCfg(func(c *result.UDPConfig) { c.Size = 65508 }), "a size of 18 to 65507 bytes"},
		{"udp negative duration", udpCfg(func(c *result.UDPConfig) { c.Duration = -1 }), "a UDP test needs a duration"},
		{"udp interval 9ms", udpCfg(func(c *result.UDPConfig) { c.Interval = 9 * time.Millisecond }), "below the minimum"},
		{"udp drain -1", udpCfg(func(c *result.UDPConfig) { c.Drain = -1 }), "drain_ns: -1ns must not be negative"},
		{"rtt count -1", rttCfg(func(c *result.RTTConfig) { c.Count = -1 }), "count: -1: want 1 to 1000000 probes"},
		{"rtt count 1e6", rttCfg(func(c *result.RTTConfig) { c.Count = 1e6; c.Interval = time.Millisecond }), ""},
		{"rtt count 1e6+1", rttCfg(func(c *result.RTTConfig) { c.Count = 1e6 + 1 }), "count: 1000001"},
		{"rtt interval 1ms", rttCfg(func(c *result.RTTConfig) { c.Interval = time.Millisecond }), ""},
		{"rtt interval below 1ms", rttCfg(func(c *result.RTTConfig) { c.Interval = time.Millisecond - 1 }), "below the 1ms minimum"},
		{"rtt size 39", rttCfg(func(c *result.RTTConfig) { c.Size = 39 }), "size_bytes: 39: want 40 to 65507 bytes"},
		{"rtt size 65508", rttCfg(func(c *result.RTTConfig) { c.Size = 65508 }), "size_bytes: 65508"},
	})
}

// TestPMTUTrainPointConfigValidate: the rules of a path MTU search, a
// train and a window point at their edges.
func TestPMTUTrainPointConfigValidate(t *testing.T) {
	pt := func(f func(*result.WindowPointConfig)) result.WindowPointConfig {
		c := result.WindowPointConfig{}.WithDefaults()
		f(&c)
		return c
	}
	tr := func(f func(*result.TrainConfig)) result.TrainConfig {
		c := result.TrainConfig{}.WithDefaults()
		f(&c)
		return c
	}
	checkValid(t, []validCase{
		{"pmtu min 67", result.PMTUConfig{MinBytes: 67, Tries: 3}, "min_bytes: 67: want an IP packet size of 68 to 65535"},
		{"pmtu min 68", result.PMTUConfig{MinBytes: 68, Tries: 3}, ""},
		{"pmtu max 65536", result.PMTUConfig{MaxBytes: 65536, Tries: 3}, "max_bytes: 65536: want an IP packet size"},
		{"pmtu max below min", result.PMTUConfig{MinBytes: 1400, MaxBytes: 1399, Tries: 3}, "max_bytes: 1399 is below min 1400"},
		{"pmtu max = min", result.PMTUConfig{MinBytes: 1400, MaxBytes: 1400, Tries: 3}, ""},
		{"pmtu tries 0", result.PMTUConfig{}, "tries: 0: want 1 to 1000"},
		{"pmtu tries 1000", result.PMTUConfig{Tries: 1000}, ""},
		{"pmtu tries 1001", result.PMTUConfig{Tries: 1001}, "tries: 1001"},
		{"train 1 packet", tr(func(c *result.TrainConfig) { c.Packets = 1 }), "a train has 2 to 262144 packets, got 1"},
		{"train 262144 packets", tr(func(c *result.TrainConfig) { c.Packets, c.Size = 1<<18, 40 }), ""},
		{"train size 17", tr(func(c *result.TrainConfig) { c.Size = 17 }), "train packets carry 18 to 65507 bytes"},
		{"train overhead 257", tr(func(c *result.TrainConfig) { c.Overhead = 257 }), "overhead_bytes must be 0 to 256"},
		{"train negative rate", tr(func(c *result.TrainConfig) { c.RateBps = -1 }), "must not be negative"},
		{"train negative drain", tr(func(c *result.TrainConfig) { c.Drain = -1 }), "drain_ns: -1ns must not be negative"},
		{"point bad tcp", pt(func(c *result.WindowPointConfig) { c.TCP.Streams = -1 }), "tcp.streams: -1: want at least 1"},
		{"point bytes", pt(func(c *result.WindowPointConfig) { c.TCP.Duration, c.TCP.Bytes = 0, 1000 }), "runs for a duration"},
		{"point 4 classes", pt(func(c *result.WindowPointConfig) { c.DSCPs = []int{0, 10, 18, 46} }), ""},
		{"point 5 classes", pt(func(c *result.WindowPointConfig) { c.DSCPs = []int{0, 10, 18, 26, 46} }), "5 probe classes: want 1 to 4"},
		{"point dscp 64", pt(func(c *result.WindowPointConfig) { c.DSCPs = []int{64} }), "probe dscp 64"},
		{"point baseline -1", pt(func(c *result.WindowPointConfig) { c.Baseline = -1 }), "baseline of -1 probes"},
		{"point baseline gap 0", pt(func(c *result.WindowPointConfig) { c.BaselineGap = -1 }), "a positive gap"},
		{"point probe gap 1ms", pt(func(c *result.WindowPointConfig) { c.ProbeGap = time.Millisecond }), ""},
		{"point probe gap below 1ms", pt(func(c *result.WindowPointConfig) { c.ProbeGap = time.Millisecond - 1 }), "probe gap"},
		{"point settle -1", pt(func(c *result.WindowPointConfig) { c.Settle = -1 }), "settle -1ns"},
		{"point settle = duration", pt(func(c *result.WindowPointConfig) { c.Settle = c.TCP.Duration }), "settle 10s"},
	})
}

// TestBadConfigNoConnection: a bad config fails in every Run function
// before any connection: the listener at the target sees none.
func TestBadConfigNoConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	go func() { // ends when the listener closes
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	tg := Target{Addr: ln.Addr().String()}
	ctx := context.Background()
	for name, run := range map[string]func() error{
		"tcp":   func() error { _, err := RunTCP(ctx, tg, result.TCPConfig{Streams: -1}, nil); return err },
		"udp":   func() error { _, err := RunUDP(ctx, tg, result.UDPConfig{Size: 10}, nil); return err },
		"rtt":   func() error { _, err := RunRTT(ctx, tg, result.RTTConfig{Count: -1}, nil); return err },
		"pmtu":  func() error { _, err := RunPMTU(ctx, tg, result.PMTUConfig{Tries: -1}); return err },
		"train": func() error { _, err := RunTrain(ctx, tg, result.TrainConfig{Packets: 1}); return err },
		"point": func() error {
			_, err := RunWindowPoint(ctx, tg, result.WindowPointConfig{DSCPs: []int{99}})
			return err
		},
	} {
		if err := run(); err == nil || !strings.Contains(err.Error(), " test: ") {
			t.Errorf("%s: err = %v, want the config refused", name, err)
		}
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("%d connections for configs refused before the dial", n)
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
