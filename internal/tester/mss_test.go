package tester

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fullpipe/fullpipe/internal/serve"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// TestControlConnectionMSS: a request with an MSS clamps the control
// connection as well as the data connections, both ways: the MSS the
// tester announces in its SYN (advmss), which caps the responder's
// segments, and its own send MSS. Without it the control connection of a
// test on a black-holed path (MTU below the interface's, no ICMP) sends
// and receives full-size segments, and a frame larger than the path MTU
// is never delivered (issue 9, item 4). Loopback's MTU is 65,536 B, so an
// unclamped connection would announce about 65,483 B.
func TestControlConnectionMSS(t *testing.T) {
	_, addr := startServer(t, serve.Config{})
	ctx := testCtx(t, 10*time.Second)
	for _, mss := range []int{0, 1000} {
		s, err := open(ctx, Target{Addr: addr}, wire.Request{Kind: wire.KindRTT, Duration: time.Second, Interval: time.Second, MSS: mss})
		if err != nil {
			t.Fatal(err)
		}
		rc, err := s.tcp.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var info *unix.TCPInfo
		var gerr error
		if err := rc.Control(func(fd uintptr) { info, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil || gerr != nil {
			t.Fatal(err, gerr)
		}
		s.ctrl.Close()
		clamped := info.Advmss <= 1000 && info.Snd_mss <= 1000
		switch {
		case mss > 0 && !clamped:
			t.Errorf("request MSS %d: control connection announces %d B and sends %d B segments, want both ≤ %d", mss, info.Advmss, info.Snd_mss, mss)
		case mss == 0 && clamped:
			t.Errorf("no MSS requested: control connection announces %d B, sends %d B: clamped though nothing asked", info.Advmss, info.Snd_mss)
		}
	}
}
