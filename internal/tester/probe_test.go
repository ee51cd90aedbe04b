package tester

import (
	"net"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/wire"
)

// TestProberTimesItsOwnSends: a prober times each reply from its own
// record of when it sent that probe, and rejects a reply whose stamp is
// not the one it sent under that sequence number. The fake responder
// answers every probe after pathRTT with two replies carrying the same
// cookie and sequence number: first one stamped 15 ms later than the
// probe (what a reply timed on another clock of the session looks like,
// e.g. a prober started 15 ms earlier), then the genuine echo. A prober
// that subtracts the echoed stamp takes the first and reports 15 ms on a
// 30 ms path: the BDP of issue 9's run, halved.
func TestProberTimesItsOwnSends(t *testing.T) {
	const pathRTT, skew = 30 * time.Millisecond, 15 * time.Millisecond
	srv, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cookie := wire.NewCookie()
	go func() { // ends when srv is closed
		buf := make([]byte, 2048)
		for {
			n, from, err := srv.ReadFromUDP(buf)
			if err != nil {
				return
			}
			h, err := wire.ParseUDP(buf[:n])
			if err != nil || h.Type != wire.UDPEcho {
				continue
			}
			genuine := append([]byte(nil), buf[:n]...)
			genuine[4] = wire.UDPEchoReply
			other := append([]byte(nil), genuine...)
			h.Type, h.SentNs = wire.UDPEchoReply, h.SentNs+skew.Nanoseconds()
			wire.PutUDP(other, h)
			time.AfterFunc(pathRTT, func() {
				_, _ = srv.WriteToUDP(other, from)
				_, _ = srv.WriteToUDP(genuine, from)
			})
		}
	}()
	c, err := net.DialUDP("udp", nil, srv.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	p := startProber(c, cookie)
	defer p.close()
	const n = 5
	rtts := p.burst(testCtx(t, 10*time.Second), n, 10*time.Millisecond)
	if len(rtts) != n {
		t.Fatalf("%d of %d probes answered", len(rtts), n)
	}
	for i, r := range rtts {
		if r < pathRTT {
			t.Errorf("probe %d: RTT %v on a %v path: timed from a stamp it did not send", i, r, pathRTT)
		}
	}
	if got := p.rejectedReplies(); got != n {
		t.Errorf("%d replies rejected, want the %d with a stamp not sent", got, n)
	}
}
