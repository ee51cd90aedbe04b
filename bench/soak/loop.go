package main

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/fullpipe/fullpipe/internal/ctxtime"
	"github.com/fullpipe/fullpipe/internal/stamp"
	"github.com/fullpipe/fullpipe/internal/testkit"
)

// The reflector loop (issue 22): the responder runs its STAMP reflector
// (serve --stamp) at stampA; a second reflector, `fullpipe reflector`,
// runs at stampB; every 100 ms the abuse sends the responder's reflector
// a STAMP packet forged to come from stampB (a raw socket: root only).
// Without loop protection each forged packet starts a loop that outlives
// the attacker; with it, B drops every reply of A as a reflected packet.
const (
	stampA = "127.0.0.1:16862"
	stampB = "127.0.0.1:16863"
)

// loopCounts is what the loop abuse saw: packets forged, and the second
// reflector's closing counters (reflected, looped), or why not run.
type loopCounts struct {
	forged             int
	reflected, looped  int
	skipped, stopError string
}

// abuseLoop runs the second reflector and forges until ctx ends, then
// stops it and reads its closing log.
func abuseLoop(bin string, lc *loopCounts) func(context.Context, *abuseCounts) {
	return func(ctx context.Context, _ *abuseCounts) {
		if os.Geteuid() != 0 {
			lc.skipped = "needs root (a raw socket forges the source)"
			return
		}
		var log bytes.Buffer
		b := exec.Command(bin, "reflector", "--listen", stampB)
		b.Stderr = &log
		b.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // dies with the soak
		if err := b.Start(); err != nil {
			lc.skipped = err.Error()
			return
		}
		src, dst := netip.MustParseAddrPort(stampB), netip.MustParseAddrPort(stampA)
		pkt := make([]byte, stamp.SenderSize)
		for seq := uint32(0); ctxtime.Sleep(ctx, 100*time.Millisecond); seq++ {
			_ = stamp.EncodeSender(pkt, stamp.SenderPacket{Seq: seq, Timestamp: stamp.Stamp(time.Now(), stamp.NTP), ErrorEstimate: stamp.ErrorEstimate{Multiplier: 1}}, false)
			if err := testkit.ForgeUDP(src, dst, pkt); err == nil {
				lc.forged++
			}
		}
		time.Sleep(200 * time.Millisecond) // the last replies' round trip on loopback
		_ = b.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- b.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				lc.stopError = fmt.Sprintf("%v: %s", err, log.String())
			}
		case <-time.After(10 * time.Second):
			_ = b.Process.Kill()
			<-done
			lc.stopError = "still running 10 s after SIGTERM: killed"
		}
		c := testkit.LogCounters(log.Bytes(), "stamp reflector stopped")
		lc.reflected, lc.looped = -1, -1 // no closing line
		if c != nil {
			lc.reflected, lc.looped = c["reflected"], c["looped"]
		}
	}
}
