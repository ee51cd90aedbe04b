package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/rfc6349"
)

// startSites brings a sites lab up for the test and removes it after,
// checking that no namespace is left behind.
func startSites(t *testing.T, cfg SitesConfig) *Sites {
	t.Helper()
	s, err := UpSites(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		sitesGone(t, s.SitesState)
	})
	return s
}

// sitesGone fails the test if any of st's namespaces or its state file
// is still there.
func sitesGone(t *testing.T, st SitesState) {
	t.Helper()
	for _, e := range st.Sites {
		if nsExists(e.NetNS) {
			t.Errorf("namespace %s left behind", e.NetNS)
		}
	}
	if _, err := os.Stat(sitesStatePath(st.Name)); err == nil {
		t.Errorf("state %s left behind", sitesStatePath(st.Name))
	}
}

// goodput is a TCP flow's ideal goodput over the bottleneck rate: 1448
// payload bytes per 1538-byte Ethernet frame (RFC 6349's maximum
// achievable TCP throughput, with timestamps).
func goodput(rateBps int64) float64 {
	return rfc6349.MaxTCPThroughput(float64(rateBps), 1500, 1448, rfc6349.Ethernet)
}

// sitesPing is what sitesRTT's pings need of the lab: ping's median is
// judged within 1 ms of Truth, of which the serialisations take up to
// 0.2 ms and the hosts 0.4 ms; the 0.4 ms left is 200 µs each way, and a
// median moves only if half its pings are late (medianBudget). It is
// tighter than pingBudget, which checkHostNoise asks for.
var sitesPing = medianBudget(200*time.Microsecond, "the median RTT's 1 ms less serialisations and hosts, each way")

// TestSites runs the three spokes of spokes() and judges, against
// Truth, the round trip of three pairs, the goodput of two, two flows
// sharing an uplink, and two meeting on a downlink that is not their
// bottleneck.
func TestSites(t *testing.T) {
	needRoot(t, "ping", "iperf3")
	s := startSites(t, spokes("tsites"))
	for _, p := range [][2]int{{0, 1}, {2, 0}, {1, 2}} {
		t.Run(fmt.Sprintf("rtt %s-%s", s.Config.Sites[p[0]].Name, s.Config.Sites[p[1]].Name), func(t *testing.T) {
			sitesRTT(t, s, p[0], p[1])
		})
	}
	for _, p := range [][2]int{{0, 1}, {2, 0}} {
		t.Run(fmt.Sprintf("goodput %s-%s", s.Config.Sites[p[0]].Name, s.Config.Sites[p[1]].Name), func(t *testing.T) {
			_, rate := s.Truth(p[0], p[1])
			var got float64
			held(t, s, RateBudget, func(int) {
				var err error
				if got, err = iperf3Between(s.NetNS(p[0]), s.NetNS(p[1]), s.Addr(p[1]), 15201, 4, 1); err != nil {
					t.Fatal(err)
				}
				t.Logf("%.2f Mbit/s", got/1e6)
			})
			// A queue of one BDP keeps the bottleneck busy through CUBIC's
			// back-offs (it needs 0.3/0.7 BDP); 5 % leaves room for the
			// host: the flow's CPU on 2 cores beside the forwarder.
			want := goodput(rate)
			t.Logf("%.2f Mbit/s, ideal %.2f Mbit/s (%.0f Mbit/s bottleneck)", got/1e6, want/1e6, float64(rate)/1e6)
			if math.Abs(got-want)/want > 0.05 {
				t.Errorf("goodput %.2f Mbit/s, want %.2f ± 5 %%", got/1e6, want/1e6)
			}
		})
	}
	t.Run("sockets in namespaces", func(t *testing.T) { sitesIn(t, s) })
	t.Run("shared uplink", func(t *testing.T) { sharedUplink(t, s) })
	t.Run("two into one", func(t *testing.T) { intoOne(t, s) })
	t.Run("no route", func(t *testing.T) {
		before := s.Stats()[0].NoRoute
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		a := s.Addr(0).As4()
		nowhere := netip.AddrFrom4([4]byte{a[0], a[1], a[2], 200})
		if out, err := inNSCmd(ctx, s.NetNS(0), "ping", "-n", "-c", "2", "-i", "0.2", "-W", "1", nowhere.String()).CombinedOutput(); err == nil {
			t.Fatalf("%v answered:\n%s", nowhere, out)
		}
		if got := s.Stats()[0].NoRoute - before; got < 2 {
			t.Fatalf("%d packets to %v counted as no route, want 2", got, nowhere)
		}
	})
}

// sitesRTT pings site j from site i and judges it in layers, as
// TestAddedRTT does: the emulator holds each ping exactly the base RTT
// plus the serialisation of the 84-byte packet (122 B framed) on each of
// the four links; ping sees that plus the hosts (TUN devices, stacks,
// the forwarder's lateness: checkHostNoise); and ping's median is within
// 1 ms of Truth's base RTT (the serialisations add 0.1-0.2 ms, the hosts
// 0.1-0.4 ms).
func sitesRTT(t *testing.T, s *Sites, i, j int) {
	t.Helper()
	rtt, _ := s.Truth(i, j)
	a, b := s.Config.Sites[i], s.Config.Sites[j]
	want := rtt
	for _, d := range []Direction{a.Up, b.Down, b.Up, a.Down} {
		want += ser(84, float64(d.RateBps))
	}
	trace := func() (up, down []TraceRecord) { r := s.Trace(); return r, r }
	var ps []pinged
	held(t, s, sitesPing, func(int) { ps = pingTrace(t, s.NetNS(i), s.Addr(j), 20, 20*time.Millisecond, 56, trace) })
	var late, excess []time.Duration
	var rtts []float64
	for _, p := range ps {
		rtts = append(rtts, ms(p.RTT))
		if p.Up.QueuedAheadPackets > 0 || p.Down.QueuedAheadPackets > 0 {
			continue
		}
		if d := p.Virtual - want; d < -4 || d > 4 {
			t.Errorf("ping %d: the emulator held it %v, want exactly %v", p.Seq, p.Virtual, want)
		}
		late, excess = append(late, p.Late), append(excess, p.Excess())
	}
	if len(excess) < len(ps)/2 {
		t.Fatalf("only %d of %d pings met an empty path", len(excess), len(ps))
	}
	med := median(rtts)
	t.Logf("truth %.3f ms; emulator %.6f ms; ping median %.2f ms, excess median %.3f ms; forwarder late + write work median %.3f ms",
		ms(rtt), ms(want), med, ms(quantile(excess, .5)), ms(quantile(late, .5)))
	checkHostNoise(t, excess, quantile(late, .5), tunFloor)
	if math.Abs(med-ms(rtt)) > 1 {
		t.Errorf("ping median %.2f ms, want Truth's %.3f ms ± 1 ms", med, ms(rtt))
	}
}

// sitesIn: a listener opened in c's namespace (In) is reached from a
// connection opened in a's, through the lab, from a's address.
func sitesIn(t *testing.T, s *Sites) {
	var ln net.Listener
	if err := s.In(2, func() (err error) { ln, err = net.Listen("tcp", netip.AddrPortFrom(s.Addr(2), 0).String()); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Addr, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c.RemoteAddr()
			c.Close()
		}
		close(accepted)
	}()
	err := s.In(0, func() error {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 2*time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case from := <-accepted:
		if ap, _ := netip.ParseAddrPort(fmt.Sprint(from)); ap.Addr() != s.Addr(0) {
			t.Errorf("c saw a connection from %v, want a's %v", from, s.Addr(0))
		}
	case <-time.After(2 * time.Second):
		t.Fatal("c accepted nothing in 2 s")
	}
}

// flows runs an iperf3 flow for each pair at once (from pair[0] to
// pair[1]), until the lab held its path over a run (RateBudget), and
// returns each one's goodput and the lab's account of that run.
func flows(t *testing.T, s *Sites, pairs ...[2]int) ([]float64, Account) {
	t.Helper()
	var out []float64
	a := held(t, s, RateBudget, func(int) { out = flowsOnce(t, s, pairs...) })
	return out, a
}

func flowsOnce(t *testing.T, s *Sites, pairs ...[2]int) []float64 {
	t.Helper()
	type res struct {
		bps float64
		err error
	}
	done := make([]chan res, len(pairs))
	for k, p := range pairs {
		done[k] = make(chan res, 1)
		go func() {
			bps, err := iperf3Between(s.NetNS(p[0]), s.NetNS(p[1]), s.Addr(p[1]), 15202+k, 4, 1)
			done[k] <- res{bps, err}
		}()
	}
	out := make([]float64, len(pairs))
	for k, c := range done {
		r := <-c
		if r.err != nil {
			t.Fatal(r.err)
		}
		out[k] = r.bps
		t.Logf("%s → %s: %.2f Mbit/s", s.Config.Sites[pairs[k][0]].Name, s.Config.Sites[pairs[k][1]].Name, r.bps/1e6)
	}
	return out
}

// sharedUplink: a → b and a → c at once share a's 50 Mbit/s uplink. b's
// 20 Mbit/s downlink limits the first, a's uplink the sum: together they
// get a's uplink's ideal goodput (47.1 Mbit/s) within 5 %, where two
// separate paths would give 18.8 + 47.1 Mbit/s.
func sharedUplink(t *testing.T, s *Sites) {
	got, _ := flows(t, s, [2]int{0, 1}, [2]int{0, 2})
	sum, want := got[0]+got[1], goodput(s.Config.Sites[0].Up.RateBps)
	t.Logf("sum %.2f Mbit/s, a's uplink ideal %.2f Mbit/s", sum/1e6, want/1e6)
	if math.Abs(sum-want)/want > 0.05 {
		t.Errorf("two flows out of a got %.2f Mbit/s together, want a's uplink's %.2f ± 5 %%", sum/1e6, want/1e6)
	}
}

// intoOne: a → c and b → c at once meet only on c's 100 Mbit/s
// downlink, which carries both (70 Mbit/s) without a queue: each flow
// gets its own uplink's ideal goodput within 5 %, as if alone, and the
// forwarder moves 66 Mbit/s of goodput.
func intoOne(t *testing.T, s *Sites) {
	got, a := flows(t, s, [2]int{0, 2}, [2]int{1, 2})
	for _, d := range a.Dirs {
		t.Logf("%s: queue drops %d", d.Name, d.Drops["queue"])
	}
	if d := a.Dirs[2*2+1].Drops["queue"]; d > 0 { // site 2's downlink (Sites.Mark: each site's up, then down)
		t.Errorf("c's downlink dropped %d packets: 70 Mbit/s into 100 Mbit/s overflowed a 300 kB queue", d)
	}
	for k, src := range []int{0, 1} {
		_, rate := s.Truth(src, 2)
		if want := goodput(rate); math.Abs(got[k]-want)/want > 0.05 {
			t.Errorf("%s → c: %.2f Mbit/s, want %.2f ± 5 %%", s.Config.Sites[src].Name, got[k]/1e6, want/1e6)
		}
	}
}

// TestSitesMTU: b's downlink has a 1400-byte MTU and answers with ICMP
// frag-needed, which reaches the sender in a: a 1500-byte DF ping from a
// to b is refused and a's kernel learns 1400 for b; c → b as well, from
// its own answer. Nothing else on the lab has an MTU.
func TestSitesMTU(t *testing.T) {
	needRoot(t, "ping")
	cfg := spokes("tsmtu")
	cfg.Sites[1].Down.MTU, cfg.Sites[1].Down.ICMP = 1400, true
	s := startSites(t, cfg)
	var crossed [2]bool
	var said, route [2]string
	held(t, s, CountBudget, func(int) {
		for k, src := range []int{0, 2} {
			crossed[k], said[k], route[k] = bigPing(s, src, 1)
		}
	})
	for k, src := range []int{0, 2} {
		if crossed[k] {
			t.Fatalf("a 1500-byte packet crossed a 1400 MTU:\n%s", said[k])
		}
		if !strings.Contains(route[k], "mtu 1400") {
			t.Errorf("%s did not learn MTU 1400 for b; ping said:\n%s\nroute: %s", s.Config.Sites[src].Name, said[k], route[k])
		}
	}
	if st := s.Stats()[1].Down; st.ICMPSent < 2 || st.Drops["mtu"] < 2 {
		t.Errorf("b's downlink: %d MTU drops, %d frag-needed sent; want at least 2 of each", st.Drops["mtu"], st.ICMPSent)
	}
}

// bigPing sends two 1500-byte DF pings (1472 B of ICMP payload + 28)
// from site src to site dst and says whether they crossed, what ping
// said and the route src then has to dst.
func bigPing(s *Sites, src, dst int) (crossed bool, said, route string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := inNSCmd(ctx, s.NetNS(src), "ping", "-n", "-c", "2", "-i", "0.2", "-W", "1", "-M", "do", "-s", "1472", s.Addr(dst).String()).CombinedOutput()
	rt, _ := inNSCmd(ctx, s.NetNS(src), "ip", "route", "get", s.Addr(dst).String()).CombinedOutput()
	return err == nil, string(out), string(rt)
}

// sitesHelperEnv names the lab TestSitesHelperProcess brings up.
const sitesHelperEnv = "FULLPIPE_SITES_HELPER"

// TestSitesHelperProcess is not a test: TestSitesCleanup runs it in a
// child process, which brings a sites lab up, says so and waits (at most
// a minute) to be killed.
func TestSitesHelperProcess(t *testing.T) {
	name := os.Getenv(sitesHelperEnv)
	if name == "" {
		t.Skip("helper process for TestSitesCleanup")
	}
	if _, err := UpSites(spokes(name)); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("up")
	time.Sleep(time.Minute) // real time: this process holds the lab until its parent kills it
	os.Exit(1)
}

// TestSitesCleanup: Close removes every namespace and ends every
// goroutine; a lab whose process was killed (SIGKILL) is refused by
// CleanupSites while that process lives and removed by it, or by the
// next UpSites of the name, once it is dead.
func TestSitesCleanup(t *testing.T) {
	needRoot(t)
	g0 := runtime.NumGoroutine()
	s, err := UpSites(spokes("tclose"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	sitesGone(t, s.SitesState)
	for deadline := time.Now().Add(2 * time.Second); runtime.NumGoroutine() > g0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // real time: the forwarder's goroutines end on real file descriptors closing
	}
	if g := runtime.NumGoroutine(); g > g0 {
		t.Errorf("%d goroutines after Close, %d before UpSites", g, g0)
	}

	st := crashedSites(t, "tcrash")
	if err := CleanupSites("tcrash"); err != nil {
		t.Fatalf("CleanupSites after the crash: %v", err)
	}
	sitesGone(t, st)
	st = crashedSites(t, "tcrash")
	s, err = UpSites(spokes("tcrash")) // cleans up first
	if err != nil {
		t.Fatalf("UpSites after a crash: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	sitesGone(t, st)
}

// crashedSites runs TestSitesHelperProcess in a child that brings the
// lab name up, checks that CleanupSites refuses it while the child
// lives, kills the child with SIGKILL and returns the state it left.
func crashedSites(t *testing.T, name string) SitesState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSitesHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), sitesHelperEnv+"="+name)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n') // ends with the child, at the latest
	if line != "up\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper: %q", line)
	}
	if err := CleanupSites(name); err == nil {
		t.Error("CleanupSites removed a lab whose process is alive")
	}
	_ = cmd.Process.Kill() // SIGKILL: the child cleans nothing
	_ = cmd.Wait()
	var st SitesState
	b, err := os.ReadFile(sitesStatePath(name))
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil {
		t.Fatalf("the killed lab's state: %v", err)
	}
	for _, e := range st.Sites {
		if !nsExists(e.NetNS) {
			t.Fatalf("namespace %s gone with its process: nothing stale to clean", e.NetNS)
		}
	}
	return st
}
