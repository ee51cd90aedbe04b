package lab

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/ping"
	"github.com/fullpipe/fullpipe/internal/report"
	"github.com/fullpipe/fullpipe/internal/result"
)

// The single-ended tests (fullpipe ping, unreach; docs/single.md) across
// a lab path, with no responder: the far namespace's own kernel answers,
// under its own ICMP rate limits (set per namespace with sysctl).

// The single-ended runs' figures are counts (answers, losses:
// CountBudget), medians of round trips (pingBudget), and rates over
// seconds (RateBudget): the far kernel's ICMP rate limits and a
// bottleneck's rate found by a search.

// singleEnded runs `fullpipe ARGS --json` from the client namespace
// toward the server, until the lab held its path over a run for b, and
// returns the document, and its text summary.
func singleEnded(t *testing.T, bin string, l *Lab, b Budget, args ...string) (*result.Ping, string) {
	t.Helper()
	var p *result.Ping
	var text string
	held(t, l, b, func(int) { p, text = singleEndedOnce(t, bin, l, args...) })
	return p, text
}

func singleEndedOnce(t *testing.T, bin string, l *Lab, args ...string) (*result.Ping, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	argv := append([]string{bin, args[0], l.Server.Addr.String(), "--json"}, args[1:]...)
	out, err := inNSCmd(ctx, l.Client.NetNS, argv...).Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv[1:], " "), err, out)
	}
	d, err := result.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := report.RenderPing.Text(&text, d); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s:%s", strings.Join(argv[1:], " "), text.String())
	return d.(*result.Ping), text.String()
}

// serverSysctl sets kernel settings of the server namespace (its ICMP
// rate limits are per namespace).
func serverSysctl(t *testing.T, l *Lab, settings ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := inNSCmd(ctx, l.Server.NetNS, append([]string{"sysctl", "-w"}, settings...)...).CombinedOutput(); err != nil {
		t.Fatalf("sysctl %v: %v\n%s", settings, err, out)
	}
}

// TestSingleEndedEchoRTT: fullpipe ping's RTT is the lab path's, 10 ms
// each way plus the serialisation of the 84-byte echo (56 B of data, 8
// ICMP, 20 IP) in 38 bytes of Ethernet framing at 10 Mbit/s each way.
// Tolerances, as TestAddedRTT's: no reply can come sooner than the
// emulator holds it (the send is stamped before sendto, the reply by the
// kernel as it arrives), less 10 µs for the clocks' reads; the median
// may exceed it by the TUN devices' and stacks' round trip (tunFloor) and
// 1 ms of the forwarder's lateness: the run is one the lab held for
// pingBudget (a quarter of the packets at most more than half of that
// 1 ms late, each way).
func TestSingleEndedEchoRTT(t *testing.T) {
	needRoot(t)
	bin := buildFullpipe(t)
	const delay, rate = 10 * time.Millisecond, 10e6
	l := startLab(t, "tsgl0", Direction{RateBps: rate, Delay: delay})
	p, text := singleEnded(t, bin, l, pingBudget, "ping", "-n", "40", "-i", "50ms")
	ser := time.Duration(math.Ceil(float64(84+38) * 8 * 1e9 / rate))
	want := 2 * (delay + ser)
	s := p.Summary
	if s.Received != 40 || p.Verdict.Kind != ping.Clean || !strings.Contains(text, "no loss") {
		t.Fatalf("%d of 40 answered, verdict %s", s.Received, p.Verdict.Kind)
	}
	if s.Stamped != s.Received {
		t.Errorf("%d of %d replies stamped by the kernel", s.Stamped, s.Received)
	}
	minRTT, median := time.Duration(s.MinUs*1e3), time.Duration(s.P50Us*1e3)
	if minRTT < want-10*time.Microsecond {
		t.Errorf("min RTT %v is below the path's %v", minRTT, want)
	}
	if bound := want + tunFloor + time.Millisecond; median > bound {
		t.Errorf("median RTT %v above %v (the path's %v, the TUN round trip %v, 1 ms of the forwarder's lateness)", median, bound, want, tunFloor)
	}
	t.Logf("path %v; fullpipe ping min %v, median %v, p90 %.3f ms", want, minRTT, median, s.P90Us/1e3)
}

// TestSingleEndedLoss: 5 % random loss each way is reported as loss, not
// as a rate limit: 1 − 0.95² = 9.75 % of 1000 echoes, within 4 standard
// deviations of the binomial (0.94 % each).
func TestSingleEndedLoss(t *testing.T) {
	needRoot(t)
	bin := buildFullpipe(t)
	l := startLab(t, "tsgl1", Direction{Delay: time.Millisecond, Loss: 0.05})
	p, text := singleEnded(t, bin, l, CountBudget, "ping", "-n", "1000", "-i", "2ms")
	const want = 9.75
	sd := math.Sqrt(want * (100 - want) / 1000) // %
	if got := p.Summary.LossPct; math.Abs(got-want) > 4*sd {
		t.Errorf("loss %.2f %%, want %.2f ± %.2f %%", got, want, 4*sd)
	}
	if p.Verdict.Kind != ping.Loss || strings.Contains(text, "rate-limited") {
		t.Errorf("verdict %+v, want loss", p.Verdict)
	}
}

// TestSingleEndedRateLimited: the far kernel limits its echo replies
// (echo reply added to icmp_ratemask, one per icmp_ratelimit = 100 ms to
// each peer after a burst of 6, Linux's XRLIM_BURST_FACTOR); 100 echoes/s
// for 3 s are reported as rate-limited at 10/s, not as 90 % loss. The
// limit is the reply rate after the burst: its error is one probe gap
// (10 ms) over the 2.9 s it spans, far under the 5 % allowed; the burst
// is 6 less the tokens that refill during it (0.6), so 6, give or take
// one for the jiffy the kernel counts in.
func TestSingleEndedRateLimited(t *testing.T) {
	needRoot(t)
	bin := buildFullpipe(t)
	l := startLab(t, "tsgl2", Direction{Delay: time.Millisecond})
	serverSysctl(t, l, "net.ipv4.icmp_ratemask=6169", "net.ipv4.icmp_ratelimit=100")
	p, text := singleEnded(t, bin, l, RateBudget, "ping", "-n", "300", "-i", "10ms")
	v := p.Verdict
	if v.Kind != ping.RateLimited || math.Abs(v.LimitPerSec-10) > 0.5 || v.Burst < 5 || v.Burst > 7 {
		t.Fatalf("verdict %+v, want rate-limited at 10/s, burst 6", v)
	}
	if !strings.Contains(text, "ICMP rate-limited at about 10/s") {
		t.Errorf("the summary does not say it:\n%s", text)
	}
}

// TestSingleEndedUnreach: UDP to a closed port of the far host. With
// Linux's default limit (one per icmp_ratelimit = 1000 ms to each peer
// after a burst of 6) 50 datagrams/s for 10 s draw about 6 + 10, and the
// verdict names the limit, 1/s within 5 % (one 20 ms gap over the 9 s
// its replies span); with the limit off (icmp_ratelimit 0) every
// datagram draws a port unreachable, counted and timed (2 ms each way).
func TestSingleEndedUnreach(t *testing.T) {
	needRoot(t)
	bin := buildFullpipe(t)
	l := startLab(t, "tsgl3", Direction{Delay: 2 * time.Millisecond})
	// A limited run is repeated after 7 s: the peer's bucket (6 tokens,
	// one a second) is full again for the next run's burst.
	var p *result.Ping
	var text string
	a, err := Holder{Lab: l, Budget: RateBudget, Pause: 7 * time.Second, Logf: t.Logf}.Run(context.Background(), func(int) error {
		p, text = singleEndedOnce(t, bin, l, "unreach", "-n", "500", "-i", "20ms")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("held: %s", a.Summary(RateBudget))
	v := p.Verdict
	if v.Kind != ping.RateLimited || math.Abs(v.LimitPerSec-1) > 0.05 || v.Burst < 5 || v.Burst > 7 {
		t.Errorf("default limit: verdict %+v, want rate-limited at 1/s, burst 6", v)
	}
	if !strings.Contains(text, "ICMP rate-limited at about 1/s") {
		t.Errorf("the summary does not say it:\n%s", text)
	}
	// Then unlimited (this order: the peer's bucket, which Linux keeps
	// across runs, is full for the default's run and spent after this).
	serverSysctl(t, l, "net.ipv4.icmp_ratelimit=0")
	p, _ = singleEnded(t, bin, l, CountBudget, "unreach", "-n", "100", "-i", "10ms")
	if s := p.Summary; s.Received != 100 || p.Verdict.Kind != ping.Clean || s.MinUs < 4000 || s.OtherICMP != 0 {
		t.Errorf("unlimited: %d of 100 unreachables, min RTT %.0f µs (want ≥ 4 ms), verdict %s, other ICMP %d, send errors %d, unmatched %d", s.Received, s.MinUs, p.Verdict.Kind, s.OtherICMP, s.SendErrors, s.Unmatched)
	}
}

// TestSingleEndedRateSearch: the echo rate search through a 2 Mbit/s
// bottleneck with a 200-packet queue finds its rate in probes/s: each
// 56-byte echo is 84 IP bytes + 38 of framing = 976 bits, so 2049/s both
// ways (requests and replies are the same size). Bounds: the search's
// resolution (2 %) below; above, what the queue absorbs in a trial (200
// probes over 4 s: 50/s). The queue is that deep because near the rate
// it barely drains: a stall of the sender or of the lab's forwarder
// longer than the queue holds (200 probes, 98 ms) loses probes at any
// rate close below it, and with a 64-packet queue (31 ms) that happened
// here at load 5 on 2 cores. The search reads the path's rate
// (RateBudget); one that still meets such a stall ends low: rerun it
// before blaming the search.
func TestSingleEndedRateSearch(t *testing.T) {
	needRoot(t)
	bin := buildFullpipe(t)
	const rate = 2e6
	l := startLab(t, "tsgl4", Direction{RateBps: rate, Delay: time.Millisecond, QueuePackets: 200})
	p, text := singleEnded(t, bin, l, RateBudget, "ping", "--rate-search", "--min-rate", "100", "--max-rate", "8000", "--trial", "4s", "--wait", "300ms", "--resolution", "2")
	capacity := rate / (122 * 8)
	s := p.Search
	if lo, hi := capacity/1.02, capacity+50; s.ZeroLossPPS < lo || s.ZeroLossPPS > hi {
		t.Errorf("zero loss at %.0f probes/s, want %.0f to %.0f", s.ZeroLossPPS, lo, hi)
	}
	if p.Verdict.Kind == ping.RateLimited || strings.Contains(text, "rate-limited") {
		t.Errorf("a bottleneck read as a rate limiter: %+v", p.Verdict)
	}
}

// TestSingleEndedPingSocket: with root's group let into ping sockets in
// the client namespace (net.ipv4.ping_group_range is per namespace),
// fullpipe ping uses an unprivileged ICMP datagram socket, whose replies
// the kernel matches by the socket's own identifier, and times them the
// same way.
func TestSingleEndedPingSocket(t *testing.T) {
	needRoot(t)
	bin := buildFullpipe(t)
	l := startLab(t, "tsgl5", Direction{Delay: 5 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := inNSCmd(ctx, l.Client.NetNS, "sysctl", "-w", "net.ipv4.ping_group_range=0 0").CombinedOutput(); err != nil {
		t.Fatalf("sysctl: %v\n%s", err, out)
	}
	p, _ := singleEnded(t, bin, l, CountBudget, "ping", "-n", "20", "-i", "20ms")
	if s := p.Summary; p.Socket != "ping" || s.Received != 20 || s.Stamped != 20 || s.MinUs < 10_000 {
		t.Errorf("socket %s: %d of 20 answered, %d stamped, min RTT %.0f µs (want ≥ 10 ms)", p.Socket, s.Received, s.Stamped, s.MinUs)
	}
}

// TestSingleEndedSearchRateLimited: an echo rate search against a host
// that limits its echo replies to 10/s after a burst of 6 (as in
// TestSingleEndedRateLimited) finds the limiter, not a path: the verdict
// is rate-limited at 10/s (within 5 %), a warning says the rates found
// are the limiter's, and the zero-loss rate is what its bucket passes in
// a 2 s trial: at most 10/s + 6 over 2 s = 13/s, at least 10/s less the
// search's 5 % resolution.
func TestSingleEndedSearchRateLimited(t *testing.T) {
	needRoot(t)
	bin := buildFullpipe(t)
	l := startLab(t, "tsgl6", Direction{Delay: time.Millisecond})
	serverSysctl(t, l, "net.ipv4.icmp_ratemask=6169", "net.ipv4.icmp_ratelimit=100")
	p, text := singleEnded(t, bin, l, RateBudget, "ping", "--rate-search", "--min-rate", "2", "--max-rate", "400", "--trial", "2s", "--wait", "200ms")
	if v := p.Verdict; v.Kind != ping.RateLimited || math.Abs(v.LimitPerSec-10) > 0.5 {
		t.Errorf("verdict %+v, want rate-limited at 10/s", v)
	}
	if z := p.Search.ZeroLossPPS; z < 10/1.05 || z > 13 {
		t.Errorf("zero loss at %.1f probes/s, want 9.5 to 13", z)
	}
	if !strings.Contains(text, "ICMP rate limit at about 10 replies/s") {
		t.Errorf("no warning of the limit:\n%s", text)
	}
}
