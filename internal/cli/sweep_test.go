package cli

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/serve"
	"github.com/fullpipe/fullpipe/internal/sweep"
)

// Bad sweep input: one line, exit 2, nothing sent.
func TestSweepBadFlags(t *testing.T) {
	cases := map[string][]string{
		"missing a subcommand: window or msglen": {"sweep"},
		"unknown subcommand":                     {"sweep", "depth", "127.0.0.1"},
		"unknown flag: --cc":                     {"sweep", "msglen", "127.0.0.1", "--cc", "reno"},
		"--to":                                   {"sweep", "window", "127.0.0.1", "--from", "8mss", "--to", "4mss"},
		"--from":                                 {"sweep", "window", "127.0.0.1", "--from", "xmss"},
		"at most 256":                            {"sweep", "window", "127.0.0.1", "--from", "1", "--to", "1MB", "--step", "1"},
		"--direction":                            {"sweep", "window", "127.0.0.1", "--direction", "sideways"},
		"--dscp-probes":                          {"sweep", "window", "127.0.0.1", "--dscp-probes", "46,64"},
		"--duration":                             {"sweep", "window", "127.0.0.1", "-t", "10m"},
		"--sizes":                                {"sweep", "msglen", "127.0.0.1", "--sizes", "64,0"},
		"--length 0":                             {"tcp", "127.0.0.1", "--length", "0"},
		"missing HOST[:PORT]":                    {"sweep", "window"},
	}
	for want, args := range cases {
		code, out, errs := run(t, context.Background(), args...)
		if code != ExitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q (want one line mentioning %q)", args, code, out, errs, want)
		}
	}
}

func TestSweepHelpTeaches(t *testing.T) {
	code, out, _ := run(t, context.Background(), "sweep", "window", "--help")
	for _, frag := range []string{"Usage: fullpipe sweep window", "linear", "transition", "saturation", "overflow", "1448", "Examples:", "Units:"} {
		if code != 0 || !strings.Contains(out, frag) {
			t.Errorf("sweep --help (exit %d) lacks %q", code, frag)
		}
	}
}

func TestParseWindow(t *testing.T) {
	for in, want := range map[string]int64{"1mss": 1448, "4MSS": 5792, "1.5mss": 2172, "64KiB": 65536, "20000": 20000} {
		if got, err := parseWindow(in, 1448); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, err, want)
		}
	}
}

// TestSweepMsgLenLoopback: every size moves TCP data with writes of that
// size (bytes / writes is the size, the last write excepted), and the UDP
// receiver's rate is consistent with the sender's: never above it, and
// below it by no more than the datagrams counted lost (plus 5 % for the
// different spans the two ends time over). 10 Mbit/s is far below
// loopback's capacity, so it is also within 5 % of the offered rate.
func TestSweepMsgLenLoopback(t *testing.T) {
	addr := server(t, serve.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sizes := []int{64, 1000, 8192, 65536}
	code, out, errs := run(t, ctx, "sweep", "msglen", addr, "--sizes", "64,1000,8KiB,64KiB", "-t", "1s", "--udp-rate", "10M", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		Points []sweep.MsgLenPoint `json:"points"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(r.Points) != len(sizes) {
		t.Fatalf("%d points, want %d", len(r.Points), len(sizes))
	}
	for i, p := range r.Points {
		if p.SizeBytes != sizes[i] || p.TCPGoodputBps <= 0 || p.TCPWrites < 2 {
			t.Errorf("size %d: %+v", sizes[i], p)
			continue
		}
		// Every write but the last (cut short by the deadline) is full.
		if per := p.TCPBytesPerWrite; per > float64(p.SizeBytes) || per < float64(p.SizeBytes)*float64(p.TCPWrites-1)/float64(p.TCPWrites) {
			t.Errorf("size %d: %.2f bytes per write over %d writes", p.SizeBytes, per, p.TCPWrites)
		}
		if p.UDPSizeBytes != min(p.SizeBytes, 65507) {
			t.Errorf("size %d: UDP datagram %d B", p.SizeBytes, p.UDPSizeBytes)
		}
		if math.Abs(p.UDPSenderBps-10e6)/10e6 > 0.05 {
			t.Errorf("size %d: UDP sender %.0f bit/s, want 10 Mbit/s ± 5 %%", p.SizeBytes, p.UDPSenderBps)
		}
		lo := p.UDPSenderBps * (1 - p.UDPLossPct/100 - 0.05)
		if p.UDPReceiverBps > p.UDPSenderBps*1.05 || p.UDPReceiverBps < lo {
			t.Errorf("size %d: UDP receiver %.0f bit/s vs sender %.0f with %.2f %% lost", p.SizeBytes, p.UDPReceiverBps, p.UDPSenderBps, p.UDPLossPct)
		}
	}
}

// TestSweepWindowLoopback: on loopback no window overflows anything, so
// no point loses data or shows a queue; every point has its window held
// (in flight ≤ window), delay probes answered in both classes, and a
// positive goodput. An interrupt during the second point ends the sweep
// within seconds with the first point printed, exit 1.
func TestSweepWindowLoopback(t *testing.T) {
	addr := server(t, serve.Config{AllowCC: []string{"available"}}) // --cc cubic: loaded here, not in tcp_allowed_congestion_control
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code, out, errs := run(t, ctx, "sweep", "window", addr, "--from", "16KiB", "--to", "32KiB", "--step", "16KiB", "-t", "1s",
		"--dscp-probes", "46,0", "--cc", "cubic", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		Points []sweep.WindowPoint `json:"points"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(r.Points) != 2 {
		t.Fatalf("%d points", len(r.Points))
	}
	for _, p := range r.Points {
		if p.GoodputBps <= 0 || p.InflightMaxBytes > int64(p.WindowBytes) || !p.HasDelay || len(p.Classes) != 2 || p.Region == "" {
			t.Errorf("point %+v", p)
		}
		for _, c := range p.Classes {
			if c.Received == 0 || c.BaselineRecv == 0 || math.Abs(c.FwdMedianMs) > 5 || math.Abs(c.RevMedianMs) > 5 {
				t.Errorf("window %d, DSCP %d: %+v (loopback adds no queue)", p.WindowBytes, c.DSCP, c)
			}
		}
	}

	ictx, icancel := context.WithCancel(context.Background())
	time.AfterFunc(3500*time.Millisecond, icancel) // point 1 takes ~2 s
	start := time.Now()
	code, out, _ = run(t, ictx, "sweep", "window", addr, "--from", "16KiB", "--to", "64KiB", "--step", "16KiB", "-t", "2s")
	if took := time.Since(start); took > 8*time.Second {
		t.Errorf("took %v to stop after the interrupt at 3.5 s", took)
	}
	if code != ExitFailed || !strings.Contains(out, "PARTIAL") || !strings.Contains(out, "16,384 B") {
		t.Errorf("interrupted sweep: exit %d, output %s", code, out)
	}
}
