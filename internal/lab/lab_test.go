package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// These tests build real labs and judge them with tools we did not write
// (ping, iperf3). They need root and skip without it; CI runs them as root.

func needRoot(t *testing.T, tools ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("lab tests need root (network namespaces, TUN); CI runs them as root")
	}
	for _, tool := range append([]string{"ip"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (apt-get install -y iperf3 iputils-ping iproute2)", tool)
		}
	}
}

// startLab runs a lab for the test and removes it afterwards.
func startLab(t *testing.T, name string, d Direction) *Lab {
	t.Helper()
	l, err := Up(Config{Name: name, Seed: 1, Framing: FramingEthernet, Up: d, Down: d})
	if err != nil {
		t.Fatal(err)
	}
	runLab(t, l)
	return l
}

// runLab runs l's forwarder for the test and removes the lab afterwards.
func runLab(t *testing.T, l *Lab) {
	t.Helper()
	name := l.Name
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("forwarder: %v", err)
		}
		if err := l.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if nsExists(l.Client.NetNS) || nsExists(l.Server.NetNS) {
			t.Error("namespaces left behind")
		}
	})
	// Wait for the state file: Run has published.
	for i := 0; i < 100; i++ {
		if _, err := ReadState(name); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// inNSCmd runs argv in a namespace with a deadline.
func inNSCmd(ctx context.Context, ns string, argv ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns}, argv...)...)
}

var pingTime = regexp.MustCompile(`time=([0-9.]+) ms`)

// ping prints each RTT to 3 significant digits (0.1 ms at 20 ms) but the
// summary's min/avg/max to 1 µs; the accuracy checks use the summary.
var pingSummary = regexp.MustCompile(`= ([0-9.]+)/([0-9.]+)/([0-9.]+)/([0-9.]+) ms`)

// pingRTTs pings from the client and returns each RTT in ms.
func pingRTTs(t *testing.T, l *Lab, count int, size int) []float64 {
	rtts, _, _ := pingStats(t, l, count, size)
	return rtts
}

// pingStats also returns the summary's min and mean (µs resolution).
func pingStats(t *testing.T, l *Lab, count int, size int) (rtts []float64, minMs, meanMs float64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := inNSCmd(ctx, l.Client.NetNS, "ping", "-n", "-c", strconv.Itoa(count), "-i", "0.05", "-s", strconv.Itoa(size), l.Server.Addr.String()).CombinedOutput()
	if err != nil {
		t.Fatalf("ping: %v\n%s", err, out)
	}
	for _, m := range pingTime.FindAllStringSubmatch(string(out), -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		rtts = append(rtts, v)
	}
	if m := pingSummary.FindStringSubmatch(string(out)); m != nil {
		minMs, _ = strconv.ParseFloat(m[1], 64)
		meanMs, _ = strconv.ParseFloat(m[2], 64)
	}
	return rtts, minMs, meanMs
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestAddedRTT: ping's RTT is the set RTT plus the serialisation of the
// ping packet in each direction, plus the hosts' own round trip through two
// TUN devices. The issue asks for 0.2 ms. The TUN round trip itself is
// 0.07-0.3 ms here (the minimum of pings through a path without delay;
// kernel-notes measured 0.3-0.4 ms for a naive forwarder) and cannot be
// told apart from the emulator's error in one measurement, so the bound is
// the issue's 0.2 ms plus 0.1 ms for the TUN floor, and the result must
// not be early (the emulator never shortens a delay). Measured excess on an
// idle machine: 0.10-0.20 ms. The issue asks for the median; ping prints
// single RTTs only to 0.1 ms at 20 ms, so the check uses the mean of 40
// (printed to 1 µs), the stricter of the two (outliers count).
func TestAddedRTT(t *testing.T) {
	needRoot(t, "ping")
	for i, rate := range []int64{10e6, 100e6, 1e9} {
		t.Run(fmt.Sprintf("%d Mbit/s", rate/1e6), func(t *testing.T) {
			l := startLab(t, fmt.Sprintf("trtt%d", i), Direction{RateBps: rate, Delay: 10 * time.Millisecond})
			rtts, _, mean := pingStats(t, l, 40, 56)
			// 56 B of payload + 8 ICMP + 20 IP = 84 B, + 38 B Ethernet
			// framing, serialised once each way.
			ser := 2 * float64(84+38) * 8 / float64(rate) * 1e3
			want := 20 + ser
			got := mean
			t.Logf("mean %.3f ms (median %.1f ms), want %.3f ms (20 ms + %.3f ms serialisation)", got, median(rtts), want, ser)
			if got < want-0.02 || got > want+0.3 {
				t.Fatalf("ping mean %.3f ms, want %.3f ms + 0 to 0.3 ms", got, want)
			}
		})
	}
}

// iperf3 runs an iperf3 TCP test from client to server and returns the
// receiver's goodput in bit/s, omitting the first omit seconds (slow
// start) from the figure.
func iperf3(t *testing.T, l *Lab, secs, omit int, extra ...string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs+omit+20)*time.Second)
	defer cancel()
	srv := inNSCmd(ctx, l.Server.NetNS, "iperf3", "-s", "-1", "-B", l.Server.Addr.String(), "-p", "15201")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	time.Sleep(300 * time.Millisecond) // iperf3 has no readiness signal; retried below
	var out []byte
	var err error
	for try := 0; try < 5; try++ {
		args := append([]string{"iperf3", "-c", l.Server.Addr.String(), "-p", "15201", "-t", strconv.Itoa(secs), "-O", strconv.Itoa(omit), "-J"}, extra...)
		out, err = inNSCmd(ctx, l.Client.NetNS, args...).Output()
		if err == nil {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("iperf3: %v\n%s", err, out)
	}
	var r struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("iperf3 JSON: %v", err)
	}
	return r.End.SumReceived.BitsPerSecond
}

// TestRateCeiling: a long TCP transfer with a large window reaches the
// TCP-level ceiling of the set rate within 2 %. Each 1500-byte packet
// carries 1448 bytes of payload (1500 − 20 IP − 20 TCP − 12 timestamps)
// and costs 1538 bytes at the bottleneck (Ethernet framing).
func TestRateCeiling(t *testing.T) {
	needRoot(t, "iperf3")
	const rate = 100e6
	l := startLab(t, "trate", Direction{RateBps: rate, Delay: 5 * time.Millisecond, QueueBytes: 500_000})
	got := iperf3(t, l, 6, 2)
	ceiling := rate * 1448 / 1538
	t.Logf("iperf3 %.2f Mbit/s, ceiling %.2f Mbit/s", got/1e6, ceiling/1e6)
	if math.Abs(got-ceiling)/ceiling > 0.02 {
		t.Fatalf("goodput %.2f Mbit/s, want %.2f ± 2 %%", got/1e6, ceiling/1e6)
	}
}

// TestQueueDelay: under a saturating flow the largest RTT is the base RTT
// plus a full queue's drain time (the issue: queue × 8 / rate, within
// 5 %), and the queue's drops are counted as queue drops.
//
// The flow is UDP at 1.5 × the rate, sent every 100 µs rather than in
// iperf3's default 1 ms bursts, so the queue is full all the time
// rather than only at the top of a TCP sawtooth, and every ping meets the
// same queue: the 100,000-byte limit holds 66 of the flood's 1500-byte
// packets (the 67th does not fit; a ping's 84 bytes always do), and the
// queue refills to 66 between two departures. A ping therefore waits
// behind 65 or 66 packets plus what is left of the one in service, each
// costing 1538 bytes at the bottleneck (Ethernet framing). That bounds
// every RTT from the packet arithmetic; the TUN devices add 0.1-0.3 ms
// (TestAddedRTT) and ping prints 0.1 ms.
func TestQueueDelay(t *testing.T) {
	needRoot(t, "iperf3", "ping")
	const rate, queue = 20e6, 100_000
	l := startLab(t, "tqueue", Direction{RateBps: rate, Delay: 5 * time.Millisecond, QueueBytes: queue})
	done := make(chan float64, 1)
	go func() { done <- iperf3(t, l, 5, 0, "-u", "-b", "30M", "-l", "1472", "--pacing-timer", "100") }()
	time.Sleep(1500 * time.Millisecond)
	rtts, _, meanMs := pingStats(t, l, 50, 56)
	<-done
	if len(rtts) < 40 {
		t.Fatalf("%d of 50 pings answered; a ping always fits beside 66 full-size packets", len(rtts))
	}
	ms := func(wireBytes float64) float64 { return wireBytes * 8 / rate * 1e3 }
	n := float64(queue / 1500)
	pingSer := 2 * ms(84+38)
	lower := 10 + ms((n-1)*1538) + pingSer
	upper := 10 + ms((n+1)*1538) + pingSer
	maxRTT := slices.Max(rtts)
	issue := 10 + ms(queue)
	t.Logf("RTT mean %.3f ms, max %.2f ms; packet arithmetic [%.3f, %.3f] ms; the issue's base + queue × 8 / rate %.2f ms",
		meanMs, maxRTT, lower, upper, issue)
	if math.Abs(maxRTT-issue)/issue > 0.05 {
		t.Errorf("max RTT under load %.2f ms, want %.2f ± 5 %%", maxRTT, issue)
	}
	if meanMs < lower || meanMs > upper+0.3 {
		t.Errorf("mean RTT under a full queue %.3f ms, want %.3f-%.3f ms (+0.3 ms TUN)", meanMs, lower, upper)
	}
	if mn := slices.Min(rtts); mn < lower-0.05 {
		t.Errorf("an RTT of %.2f ms is shorter than 65 packets ahead allow (%.3f ms)", mn, lower)
	}
	st := l.Snapshot()
	if st.Up.Drops["queue"] == 0 {
		t.Fatal("a flood at 1.5 × the rate overflowed no queue")
	}
	if st.Up.QueueMaxBytes > queue || st.Up.QueueMaxBytes < queue-1500 {
		t.Fatalf("max queue %d B, want the %d-B limit (within one packet)", st.Up.QueueMaxBytes, queue)
	}
}

// TestPolicerVsShaper: at the same rate, a policer drops and adds almost
// no delay; a shaper (queue) delays and drops little.
func TestPolicerVsShaper(t *testing.T) {
	needRoot(t, "iperf3", "ping")
	const rate = 20e6
	run := func(name string, d Direction) (rttRise float64, st Stats) {
		l := startLab(t, name, d)
		base := median(pingRTTs(t, l, 10, 56))
		done := make(chan float64, 1)
		go func() { done <- iperf3(t, l, 4, 0, "-C", "cubic") }()
		time.Sleep(time.Second)
		loaded := median(pingRTTs(t, l, 40, 56))
		<-done
		return loaded - base, l.Snapshot()
	}
	pRise, pst := run("tpol", Direction{PoliceBps: rate, PoliceBurst: 30_000, Delay: 5 * time.Millisecond})
	sRise, sst := run("tshape", Direction{RateBps: rate, QueueBytes: 200_000, Delay: 5 * time.Millisecond})
	t.Logf("policer: +%.2f ms, %d policer drops; shaper: +%.2f ms, %d queue drops", pRise, pst.Up.Drops["policer"], sRise, sst.Up.Drops["queue"])
	// A policer has no queue: the network adds no delay, and what the
	// loaded RTT gains is the hosts' own queueing: the client's TUN queue
	// (up to 500 packets, ≈ 0.75 MB, which the forwarder drains at ≈ 6
	// Gbit/s: ≈ 1 ms) and scheduling on 2 CPUs; measured 1.2-2.3 ms. A 200 kB
	// queue at 20 Mbit/s is 80 ms when full, and a cubic flow keeps it at
	// least a quarter full. So: the policer's rise stays under 5 ms and
	// under a tenth of the shaper's.
	if pst.Up.Drops["policer"] == 0 || pRise > 5 || pRise > sRise/10 {
		t.Errorf("policer: %d drops, RTT rise %.2f ms (shaper %.2f ms); want drops and < 5 ms and < a tenth of the shaper's", pst.Up.Drops["policer"], pRise, sRise)
	}
	if sRise < 20 {
		t.Errorf("shaper: RTT rise %.2f ms; want > 20 ms", sRise)
	}
	tot := sst.Up.RxPackets
	if float64(sst.Up.Drops["queue"]) > 0.02*float64(tot) {
		t.Errorf("shaper dropped %d of %d packets; want under 2 %%", sst.Up.Drops["queue"], tot)
	}
}

// TestMTU: with a 1400-byte path MTU and no ICMP a 1472-byte DF UDP
// payload (1500-byte packet) vanishes and a 1372-byte one (1400) passes;
// with ICMP the sender's kernel learns 1400.
func TestMTU(t *testing.T) {
	needRoot(t, "ping")
	ping := func(l *Lab, size int) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := inNSCmd(ctx, l.Client.NetNS, "ping", "-n", "-c", "2", "-i", "0.2", "-W", "1", "-M", "do", "-s", strconv.Itoa(size), l.Server.Addr.String()).CombinedOutput()
		return string(out), err
	}
	// ping's ICMP payload: 1500 − 20 − 8 = 1472; 1400 − 28 = 1372.
	l := startLab(t, "tmtu", Direction{MTU: 1400})
	if out, err := ping(l, 1372); err != nil {
		t.Fatalf("1400-byte packet should pass: %v\n%s", err, out)
	}
	if out, err := ping(l, 1472); err == nil {
		t.Fatalf("1500-byte packet passed a 1400 MTU:\n%s", out)
	}
	if d := l.Snapshot().Up.Drops["mtu"]; d < 2 {
		t.Fatalf("mtu drops %d, want 2", d)
	}
	li := startLab(t, "tmtui", Direction{MTU: 1400, ICMP: true})
	out, _ := ping(li, 1472)
	if !strings.Contains(out, "mtu = 1400") && !strings.Contains(out, "mtu=1400") {
		// The first probe triggers ICMP; the kernel then reports the
		// learned MTU for the next one.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rt, _ := inNSCmd(ctx, li.Client.NetNS, "ip", "route", "get", li.Server.Addr.String()).CombinedOutput()
		if !strings.Contains(string(rt), "mtu 1400") {
			t.Fatalf("kernel did not learn MTU 1400; ping said:\n%s\nroute: %s", out, rt)
		}
	}
	if li.Snapshot().Up.ICMPSent == 0 {
		t.Fatal("no ICMP frag-needed sent")
	}
}
