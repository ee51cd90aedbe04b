package tester

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/serve"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// TestControlConnectionMSS: a request with an MSS clamps the control
// connection as well as the data connections, both ways: the MSS the
// tester announces in its SYN (advmss), which caps the responder's
// segments, and its own send MSS. Without it the control connection of a
// test on a black-holed path (MTU below the interface's, no ICMP) sends
// and receives full-size segments, and a frame larger than the path MTU
// is never delivered (issue 9, item 4). A train's is clamped to its
// datagrams' size less 12 (a segment of the same IP size): its stop
// message carries up to 4096 holds, which vanished on a black-holed path
// (CI run 15). Loopback's MTU is 65,536 B, so an unclamped connection
// would announce about 65,483 B.
func TestControlConnectionMSS(t *testing.T) {
	_, addr := startServer(t, serve.Config{})
	ctx := testCtx(t, 10*time.Second)
	train := result.TrainConfig{Packets: 16, Size: 400, Drain: 10 * time.Millisecond}.WithDefaults().Request()
	for _, c := range []struct {
		req  wire.Request
		want int // the most either MSS may be (0: not clamped)
	}{
		{wire.Request{Kind: wire.KindRTT, Duration: time.Second, Interval: time.Second}, 0},
		{wire.Request{Kind: wire.KindRTT, Duration: time.Second, Interval: time.Second, MSS: 1000}, 1000},
		{train, train.Size - 12},
	} {
		s, err := open(ctx, Target{Addr: addr}, c.req)
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
		case c.want > 0 && (int(info.Advmss) > c.want || int(info.Snd_mss) > c.want):
			t.Errorf("%s request (MSS %d): control connection announces %d B and sends %d B segments, want both ≤ %d", c.req.Kind, c.req.MSS, info.Advmss, info.Snd_mss, c.want)
		case c.want == 0 && clamped:
			t.Errorf("no MSS requested: control connection announces %d B, sends %d B: clamped though nothing asked", info.Advmss, info.Snd_mss)
		}
	}
}
