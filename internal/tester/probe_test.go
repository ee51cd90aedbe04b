package tester

import (
	"net"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/sockopt"
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
	p := fakeEchoProber(t, pathRTT, func(genuine []byte) [][]byte {
		h, err := wire.ParseUDP(genuine)
		if err != nil {
			return nil
		}
		other := append([]byte(nil), genuine...)
		h.SentNs += skew.Nanoseconds()
		wire.PutUDP(other, h)
		return [][]byte{other, genuine}
	})
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

// fakeEchoProber is a prober of a fake responder on loopback that
// answers each echo probe, delay after it came, with the datagrams
// replies makes of it (given the probe as a mirrored reply: its type
// set to UDPEchoReply), in order. Both end with the test.
func fakeEchoProber(t *testing.T, delay time.Duration, replies func(mirror []byte) [][]byte) *prober {
	t.Helper()
	srv, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	go func() { // ends when srv is closed
		buf := make([]byte, 2048)
		for {
			n, from, err := srv.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if h, err := wire.ParseUDP(buf[:n]); err != nil || h.Type != wire.UDPEcho {
				continue
			}
			mirror := append([]byte(nil), buf[:n]...)
			mirror[4] = wire.UDPEchoReply
			out := replies(mirror)
			time.AfterFunc(delay, func() {
				for _, b := range out {
					_, _ = srv.WriteToUDP(b, from)
				}
			})
		}
	}()
	c, err := net.DialUDP("udp", nil, srv.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	p := startProber(c, wire.NewCookie())
	t.Cleanup(p.close)
	return p
}

// TestArrivalFromKernelStamp: a reply's arrival is the kernel's receive
// stamp moved onto the prober's clock, so a reader scheduled 700 µs late
// does not add 700 µs to the round trip; a missing stamp, one ahead of
// the wall clock or one more than maxReadLag old (a stepped clock)
// leaves the read time, as does a lag longer than the clock has run.
// The lag is measured to the read's own instant (given, not read again),
// so the arrival is exact: a pause after the read is not taken out.
func TestArrivalFromKernelStamp(t *testing.T) {
	const now = 5 * time.Second
	wall := time.Now()
	for _, c := range []struct {
		name string
		st   sockopt.RxStamp
		want time.Duration // how much earlier than now
		keep bool          // now itself
	}{
		{"no stamp", sockopt.RxStamp{}, 0, true},
		{"read 700 µs after the stamp", sockopt.RxStamp{At: wall.Add(-700 * time.Microsecond), Stamped: true}, 700 * time.Microsecond, false},
		{"stamp ahead of the wall clock", sockopt.RxStamp{At: wall.Add(time.Hour), Stamped: true}, 0, true},
		{"stamp 2 s old: the clock stepped", sockopt.RxStamp{At: wall.Add(-2 * time.Second), Stamped: true}, 0, true},
	} {
		got := arrival(now, wall, c.st)
		switch {
		case c.keep && got != now:
			t.Errorf("%s: arrival %v, want the read time %v", c.name, got, now)
		case !c.keep && now-got != c.want:
			t.Errorf("%s: arrival %v before the read, want %v", c.name, now-got, c.want)
		}
	}
	if got := arrival(100*time.Microsecond, wall, sockopt.RxStamp{At: wall.Add(-time.Millisecond), Stamped: true}); got != 100*time.Microsecond {
		t.Errorf("a lag longer than the clock has run moved the arrival to %v", got)
	}
}

// TestProberTakesOutTheHold: a responder that answers 30 ms after a
// probe and says it held it 20 ms (wire.EchoHeld) is timed at the
// rest, 10 ms; one that mirrors the probe as it came (older than the
// mode: the probe's NoHold comes back) or claims a hold as long as the
// whole round trip is timed whole, and neither is counted as a hold.
func TestProberTakesOutTheHold(t *testing.T) {
	const delay, held = 30 * time.Millisecond, 20 * time.Millisecond
	for _, c := range []struct {
		name      string
		claim     int64 // written into the reply; 0: the probe comes back as it came
		min, max  time.Duration
		wantHolds int
	}{
		{"a hold of 20 ms", held.Nanoseconds(), delay - held, delay - held + 8*time.Millisecond, 3},
		{"a mirror of the probe", 0, delay, delay + 8*time.Millisecond, 0},
		{"a hold longer than the round trip", (40 * time.Millisecond).Nanoseconds(), delay, delay + 8*time.Millisecond, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := fakeEchoProber(t, delay, func(reply []byte) [][]byte {
				if c.claim != 0 {
					wire.PutEchoHold(reply, c.claim)
				}
				return [][]byte{reply}
			})
			rtts := p.burst(testCtx(t, 10*time.Second), 3, 10*time.Millisecond)
			if len(rtts) != 3 {
				t.Fatalf("%d of 3 probes answered", len(rtts))
			}
			for i, r := range rtts {
				if r < c.min || r > c.max {
					t.Errorf("probe %d: RTT %v, want %v to %v", i, r, c.min, c.max)
				}
			}
			if holds, most := p.holdFigures(); holds != c.wantHolds || (holds > 0 && most != float64(held.Microseconds())) {
				t.Errorf("%d holds taken out, the longest %.0f µs; want %d of %v", holds, most, c.wantHolds, held)
			}
		})
	}
}
