package tester

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/serve"
)

// TestTrainControlMSS: a train's control connection carries no segment
// larger than the train's datagrams (size − 12 bytes of TCP payload at
// most: a datagram of size bytes is an IP packet of size + 28, a segment
// with timestamps of payload + 52), so its stop message, with up to
// 4096 holds, crosses a path that black-holes anything larger. On
// loopback (MTU 65,536) it would otherwise be about 65,000.
func TestTrainControlMSS(t *testing.T) {
	_, addr := startServer(t, serve.Config{})
	cfg := result.TrainConfig{Packets: 16, Size: 400, Drain: 10 * time.Millisecond}.WithDefaults()
	s, err := open(testCtx(t, 10*time.Second), Target{Addr: addr}, cfg.Request())
	if err != nil {
		t.Fatal(err)
	}
	defer s.ctrl.Close()
	rc, err := s.tcp.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var mss int
	var gerr error
	if err := rc.Control(func(fd uintptr) { mss, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG) }); err != nil || gerr != nil {
		t.Fatal(err, gerr)
	}
	if mss > cfg.Size-12 || mss < 88-12 {
		t.Errorf("control connection's MSS %d B, want at most %d (the train's %d-byte datagrams less 12)", mss, cfg.Size-12, cfg.Size)
	}
}
