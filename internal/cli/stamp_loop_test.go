package cli

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/stamp"
	"github.com/fullpipe/fullpipe/internal/testkit"
)

// TestReflectorLoopForged is issue 22's loop attack as it comes in the
// field: two reflectors, each a `fullpipe reflector` process of its own,
// and an attacker (this test) that forges the source of 5 STAMP packets,
// sent to A as if from B's address and port, through a raw socket whose
// IP header it writes itself. Before the loop check, A's reply was a
// request to B and B's to A, forever (4,925 reflections a side in 20 s,
// across a lab path). Now A answers each forged packet once, to B, and B
// drops A's replies as reflected packets: after 1 s of real time (a loop
// at the default 1,000 replies/s per sender would count hundreds), each
// process's own closing log says A reflected 5 (and the probe that found
// it up), B none of them and looped 5. A legitimate sender is still
// answered by A afterwards. Needs root (a raw socket).
func TestReflectorLoopForged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the attacker forges its source through a raw socket (CI runs it as root)")
	}
	a, b := freeUDPPort(t), freeUDPPort(t)
	for a == b {
		b = freeUDPPort(t)
	}
	ra, rb := startReflectorProc(t, a), startReflectorProc(t, b)
	probesA, probesB := probeUntilUp(t, ra.addr), probeUntilUp(t, rb.addr)
	const injected = 5
	for i := range injected {
		pkt := make([]byte, stamp.SenderSize)
		if err := stamp.EncodeSender(pkt, stamp.SenderPacket{Seq: uint32(i), Timestamp: stamp.Stamp(time.Now(), stamp.NTP), ErrorEstimate: stamp.ErrorEstimate{Multiplier: 1}}, false); err != nil {
			t.Fatal(err)
		}
		if err := testkit.ForgeUDP(netip.MustParseAddrPort(rb.addr), netip.MustParseAddrPort(ra.addr), pkt); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second) // real time: a loop shows only in real processes left to run
	probesA += probeUntilUp(t, ra.addr)
	sa, sb := ra.stop(t), rb.stop(t)
	t.Logf("A: %v; B: %v; probes to A %d, to B %d", sa, sb, probesA, probesB)
	// A reflected the forged packets once each, and at most every probe
	// (one answered each time it was probed, the others perhaps late); B
	// only its probes, and dropped each of A's replies.
	if sa["reflected"] < 2+injected || sa["reflected"] > probesA+injected || sb["reflected"] > probesB || sb["looped"] != injected || sa["looped"] != 0 {
		t.Errorf("A reflected %d (looped %d), B reflected %d (looped %d): want %d plus at most %d late probes, and at most %d and %d: the loop dies within one round trip",
			sa["reflected"], sa["looped"], sb["reflected"], sb["looped"], 2+injected, probesA-2, probesB, injected)
	}
}

// probeUntilUp sends one STAMP test packet at a time to addr until one
// is answered (5 s at most) and returns how many it sent.
func probeUntilUp(t *testing.T, addr string) int {
	t.Helper()
	for n := 1; n <= 50; n++ {
		s, err := stamp.NewSender(stamp.SenderConfig{Target: addr, Count: 1, Wait: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if res, _ := s.Run(context.Background()); res.Received == 1 {
			return n
		}
	}
	t.Fatalf("no reflector answers at %s after 5 s", addr)
	return 0
}

// reflectorProc is a `fullpipe reflector` process and its log.
type reflectorProc struct {
	addr string
	cmd  *exec.Cmd
	log  *bytes.Buffer
}

// startReflectorProc starts the binary's reflector on 127.0.0.1:port; the
// test's end kills it if stop did not end it.
func startReflectorProc(t *testing.T, port int) *reflectorProc {
	t.Helper()
	p := &reflectorProc{addr: "127.0.0.1:" + strconv.Itoa(port), log: &bytes.Buffer{}}
	p.cmd = exec.Command(bin, "reflector", "--listen", p.addr)
	p.cmd.Stderr = p.log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // dies with the test binary
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	return p
}

// stop ends the process with SIGTERM, as an operator would, and returns
// the counters of its closing log line ("stamp reflector stopped").
func (p *reflectorProc) stop(t *testing.T) map[string]int {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("reflector %s: %v on SIGTERM; log:\n%s", p.addr, err, p.log)
		}
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		t.Fatalf("reflector %s still running 10 s after SIGTERM; log:\n%s", p.addr, p.log)
	}
	if c := testkit.LogCounters(p.log.Bytes(), "stamp reflector stopped"); c != nil {
		return c
	}
	t.Fatalf("reflector %s logged no end; log:\n%s", p.addr, p.log)
	return nil
}
