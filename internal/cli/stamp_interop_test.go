package cli

// Interop with nokia/twampy (Python, TWAMP-Light), run as a real second
// process, opt-in: the tests skip unless a `twampy` command is on PATH
// (it is not on PyPI; install it by hand from its source, docs/stamp.md).
// Its `sender` measures against `fullpipe reflector`, and `fullpipe
// stamp` against its `responder`, on loopback and, as root, across a lab
// path. CI's interop proof is asmie/stamp-suite, from crates.io
// (stamp_suite_interop_test.go); the helpers here serve both.

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/lab"
	"github.com/fullpipe/fullpipe/internal/lab/labtest"
	"github.com/fullpipe/fullpipe/internal/result"
)

// twampyPath is the twampy command on PATH, or the test skips: twampy
// is checked by hand, not in CI (docs/stamp.md).
func twampyPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("twampy")
	if err != nil {
		t.Skip("twampy is not on PATH (opt-in, checked by hand: docs/stamp.md, Interop)")
	}
	return p
}

// daemon starts argv as a second process until the test ends (then it
// is interrupted, and killed 5 s later); its output is in the buffer.
// stop interrupts it now and waits for it.
func daemon(t *testing.T, argv ...string) (out *logBuffer, stop func()) {
	t.Helper()
	out = newLogBuffer()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(stop)
	return out, stop
}

// runFor runs argv to its end, 30 s at most, and returns its output.
func runFor(t *testing.T, argv ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%q still running after 30 s:\n%s", argv, out)
	}
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("%q: %v", argv, err)
	}
	return string(out)
}

// twampyStats is one row of twampy sender's table: delays in ms, loss in %.
type twampyStats struct{ minMs, maxMs, avgMs, lossPct float64 }

var twampyRow = regexp.MustCompile(`(?m)^\s*(Outbound|Inbound|Roundtrip):\s+(\S+?)(us|ms|sec)\s+(\S+?)(us|ms|sec)\s+(\S+?)(us|ms|sec)\s+\S+\s+([\d.]+)%`)

// parseTwampy reads twampy sender's table; no table (100 % loss) is
// no rows.
func parseTwampy(t *testing.T, out string) map[string]twampyStats {
	t.Helper()
	ms := func(v, unit string) float64 {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("twampy figure %q%s: %v", v, unit, err)
		}
		return f * map[string]float64{"us": 1e-3, "ms": 1, "sec": 1e3}[unit]
	}
	rows := map[string]twampyStats{}
	for _, m := range twampyRow.FindAllStringSubmatch(out, -1) {
		loss, _ := strconv.ParseFloat(m[8], 64)
		rows[m[1]] = twampyStats{ms(m[2], m[3]), ms(m[4], m[5]), ms(m[6], m[7]), loss}
	}
	return rows
}

// reflectorCounter reads name=N from the reflector's last log line.
func reflectorCounter(t *testing.T, log, name string) int {
	t.Helper()
	m := regexp.MustCompile(`stamp reflector stopped.* ` + name + `=(\d+)`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no %s= in the reflector's last line:\n%s", name, log)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestTwampySenderToReflector: twampy's TWAMP-Light sender against
// fullpipe reflector --stateful on loopback. 44- and 41-byte requests
// are all answered (twampy counts no loss either way: our stateful
// numbering is what it expects); 14-byte requests get no reply, by
// design (a reply would be larger than the request), counted short.
func TestTwampySenderToReflector(t *testing.T) {
	tw := twampyPath(t)
	addr := "127.0.0.1:" + strconv.Itoa(freeUDPPort(t))
	log, stop := daemon(t, bin, "reflector", "--listen", addr, "--stateful")
	waitReflector(t, addr)
	for _, pad := range []int{30, 27} { // 44 and 41 bytes
		out := runFor(t, tw, "sender", addr, "127.0.0.1:0", "-c", "50", "-i", "10", "--padding", strconv.Itoa(pad))
		rows := parseTwampy(t, out)
		rt, ob, ib := rows["Roundtrip"], rows["Outbound"], rows["Inbound"]
		if len(rows) != 3 || rt.lossPct != 0 || ob.lossPct != 0 || ib.lossPct != 0 || rt.minMs <= 0 || rt.maxMs > 1000 {
			t.Errorf("padding %d: twampy saw %+v; want 3 rows, no loss, round trips in (0, 1 s]:\n%s", pad, rows, out)
		}
	}
	out := runFor(t, tw, "sender", addr, "127.0.0.1:0", "-c", "5", "-i", "10", "--padding", "0")
	if !strings.Contains(out, "NO STATS AVAILABLE (100% loss)") {
		t.Errorf("14-byte requests were answered:\n%s", out)
	}
	stop()
	if got := reflectorCounter(t, log.String(), "reflected"); got != 101 { // 1 probe of waitReflector + 2 × 50
		t.Errorf("reflector reflected %d, want 101:\n%s", got, log)
	}
	if got := reflectorCounter(t, log.String(), "short"); got != 5 {
		t.Errorf("reflector counted %d short requests, want 5", got)
	}
}

// stampRun runs the fullpipe binary's stamp (argv: the command to run it
// with, e.g. inside a namespace) and decodes its document.
func stampRun(t *testing.T, argv ...string) *result.STAMP {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%q: %v\n%s", argv, err, errb.String())
	}
	var d result.STAMP
	if err := json.Unmarshal(out.Bytes(), &d); err != nil {
		t.Fatalf("%q: %v in %q", argv, err, out.String())
	}
	return &d
}

// TestStampToTwampyResponder: fullpipe stamp --stateful against twampy's
// responder on loopback, padded (44-byte replies) and unpadded (38-byte
// replies without the Sender TTL). twampy's responder keeps its own
// counter per sender (stateful) and stamps T3 = T2, so every packet comes
// back with a residence of exactly 0.
func TestStampToTwampyResponder(t *testing.T) {
	tw := twampyPath(t)
	for _, pad := range []string{"30", "0"} {
		addr := "127.0.0.1:" + strconv.Itoa(freeUDPPort(t))
		_, stop := daemon(t, tw, "responder", addr, "--padding", pad)
		waitReflector(t, addr)
		d := stampRun(t, bin, "stamp", addr, "-n", "50", "-i", "10ms", "--stateful", "--timeout", "500ms", "--json")
		s := d.Summary
		if s.Received != 50 || s.Lost != 0 || s.Unknown != 0 || s.Residence.MaxUs != 0 || s.RTT.Count != 50 || s.RTT.MinUs <= 0 {
			t.Errorf("padding %s: %+v; want 50 replies, residence 0", pad, s)
		}
		stop()
	}
}

// TestTwampyAcrossLab: the same two ways across a lab path (root), 5 ms
// each way, 10 % random loss on the way to the reflector only. The round
// trip's minimum is the path's 10 ms (the lab adds its forwarding, well
// under 5 ms on a busy host); the loss is all forward: twampy places it
// from our stateful reflector's numbering, and fullpipe stamp from
// twampy's responder's.
func TestTwampyAcrossLab(t *testing.T) {
	tw := twampyPath(t)
	if os.Geteuid() != 0 {
		t.Skip("the lab needs root")
	}
	l := interopLab(t, "fpstamp")
	server := l.Server.Addr.String()
	const n = 200

	// Counts and minima: lab.CountBudget (lateness moves neither).
	var out string
	var got int
	labtest.Held(t, l, lab.CountBudget, func(int) {
		log, stop := daemon(t, inNS(l.Server.NetNS, bin, "reflector", "--listen", server+":862", "--stateful")...)
		waitLog(t, log, "stamp reflector listening") // a probe would cross the lossy path: its start line instead
		out = runFor(t, inNS(l.Client.NetNS, tw, "sender", server+":862", l.Client.Addr.String()+":0", "-c", strconv.Itoa(n), "-i", "10", "--padding", "30")...)
		stop()
		got = reflectorCounter(t, log.String(), "received")
	})
	rows := parseTwampy(t, out)
	checkLabTwampy(t, rows, got, n, out)

	var s result.STAMPSummary
	labtest.Held(t, l, lab.CountBudget, func(int) {
		_, stopTw := daemon(t, inNS(l.Server.NetNS, tw, "responder", server+":862", "--padding", "30")...)
		waitBound(t, l.Server.NetNS, 862)
		s = stampRun(t, inNS(l.Client.NetNS, bin, "stamp", server, "-n", strconv.Itoa(n), "-i", "10ms", "--stateful", "--json")...).Summary
		stopTw()
	})
	if s.RTT.MinUs < 10_000 || s.RTT.MinUs > 15_000 {
		t.Errorf("fullpipe stamp: min RTT %.0f µs; want the path's 10 ms plus under 5 ms of forwarding", s.RTT.MinUs)
	}
	// Binomial: 200 × 0.1 = 20 lost forward, σ = 4.2; ±4σ. None backward.
	if s.LostBackward != 0 || s.LostForward+s.LostUnknown < 3 || s.LostForward+s.LostUnknown > 37 || s.LostForward+s.LostBackward+s.LostUnknown != s.Lost {
		t.Errorf("fullpipe stamp: lost forward %d, backward %d, unknown %d of %d; want about 20 forward, none backward", s.LostForward, s.LostBackward, s.LostUnknown, s.Sent)
	}
	t.Logf("twampy → fullpipe reflector: %+v, reflector received %d of %d; fullpipe stamp → twampy: rtt min %.0f µs, lost forward %d backward %d unknown %d",
		rows, got, n, s.RTT.MinUs, s.LostForward, s.LostBackward, s.LostUnknown)
}

// interopLab runs, for the test, the interop tests' lab path: 5 ms each
// way, 10 % random loss towards the server only (seed 8762); it is
// stopped and removed when the test ends.
func interopLab(t *testing.T, name string) *lab.Lab {
	t.Helper()
	l, err := lab.Up(lab.Config{Name: name, Seed: 8762, Framing: lab.FramingEthernet, Up: lab.Direction{Delay: 5 * time.Millisecond, Loss: 0.1}, Down: lab.Direction{Delay: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- l.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("lab forwarder: %v", err)
		}
		if err := l.Close(); err != nil {
			t.Errorf("lab close: %v", err)
		}
	})
	return l
}

// inNS is argv run inside network namespace ns.
func inNS(ns string, argv ...string) []string {
	return append([]string{"ip", "netns", "exec", ns}, argv...)
}

// waitBound waits until a UDP socket in namespace ns is bound to port,
// 10 s at most (python's start on a busy host): twampy's responder prints
// nothing when it is ready, and a probe would cross the lossy path.
func waitBound(t *testing.T, ns string, port int) {
	t.Helper()
	for range 100 {
		out, err := exec.Command("ip", "netns", "exec", ns, "ss", "-Hlun", "sport", "=", ":"+strconv.Itoa(port)).Output()
		if err != nil {
			t.Fatalf("ss in %s: %v", ns, err)
		}
		if len(bytes.TrimSpace(out)) > 0 {
			return
		}
		time.Sleep(100 * time.Millisecond) // real time: a second process (python) binding its socket, with no signal but the socket
	}
	t.Fatalf("nothing bound UDP port %d in %s after 10 s", port, ns)
}

// checkLabTwampy checks twampy's view of the lab path through our
// reflector, which received got of n.
func checkLabTwampy(t *testing.T, rows map[string]twampyStats, got, n int, out string) {
	t.Helper()
	rt, ob, ib := rows["Roundtrip"], rows["Outbound"], rows["Inbound"]
	if len(rows) != 3 || rt.minMs < 10 || rt.minMs > 15 {
		t.Fatalf("twampy: %+v; want a minimum round trip of 10 ms plus under 5:\n%s", rows, out)
	}
	// twampy's outbound loss is from our reflector's numbering: it must be
	// what the reflector says it missed (± the packets after the last
	// reply, which twampy cannot place: 2 at most but with probability
	// 1e-3) and binomial around 10 %.
	missed := 100 * float64(n-got) / float64(n)
	if math.Abs(ob.lossPct-missed) > 1.01 || ib.lossPct != 0 || missed < 1.5 || missed > 18.5 {
		t.Errorf("twampy: outbound loss %.1f %%, inbound %.1f %%; the reflector missed %.1f %% (%d of %d); want them equal, about 10 %%, and no inbound loss:\n%s",
			ob.lossPct, ib.lossPct, missed, n-got, n, out)
	}
}
