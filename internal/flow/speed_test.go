package flow

import (
	"context"
	"net/netip"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSendSpeed measures the sender alone: 18-byte datagrams at an
// unreachable rate for 1 s to a loopback socket nobody reads (the
// kernel drops them at its full buffer, after delivery's work). A
// measurement, not a check: set FULLPIPE_SPEED=1 to run it.
func TestSendSpeed(t *testing.T) {
	if os.Getenv("FULLPIPE_SPEED") == "" {
		t.Skip("FULLPIPE_SPEED not set")
	}
	_, tx := loopPair(t, "127.0.0.1")
	var s UDPSender
	var r0, r1 unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &r0)
	start := time.Now()
	SendUDP(context.Background(), NewUDPOut(tx, netip.AddrPort{}, 0), NewClock(), UDPSpec{RateBps: 100e9, Size: 18, Duration: time.Second}, &s)
	el := time.Since(start)
	_ = unix.Getrusage(unix.RUSAGE_SELF, &r1)
	cpu := time.Duration(r1.Utime.Nano() - r0.Utime.Nano() + r1.Stime.Nano() - r0.Stime.Nano())
	t.Logf("%d datagrams in %v: %.3g/s, CPU %v (%.0f ns each)", s.Packets.Load(), el, float64(s.Packets.Load())/el.Seconds(), cpu, float64(cpu)/float64(s.Packets.Load()))
}
