package flow

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/sockopt"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// loopPair is a receiving socket on addr ("127.0.0.1" or "::1") and a
// sending socket connected to it, both closed at the test's end.
func loopPair(t *testing.T, addr string) (rx, tx *net.UDPConn) {
	t.Helper()
	rx, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(addr)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rx.Close() })
	tx, err = net.DialUDP("udp", nil, rx.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Close() })
	return rx, tx
}

// TestSendUDPStopsAtDuration: at 9.2e18 bit/s a 40-byte datagram's gap
// rounded to 0 and the sender never reached its duration (150 MB in 1 s
// of a 100 ms test). The gap is now at least 1 ns and the sender also
// stops when its clock passes the duration: a 100 ms test returns within
// 100 ms plus one nanosleep quantum and scheduling (200 ms in all).
func TestSendUDPStopsAtDuration(t *testing.T) {
	if g := packetGap(40, 9.2e18); g < time.Nanosecond {
		t.Fatalf("gap %v at 9.2e18 bit/s", g)
	}
	_, tx := loopPair(t, "127.0.0.1")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var s UDPSender
	start := time.Now()
	spec := UDPSpec{RateBps: 9.2e18, Size: 40, Duration: 100 * time.Millisecond}
	SendUDP(ctx, NewUDPOut(tx, netip.AddrPort{}, 0), NewClock(), spec, &s)
	if took := time.Since(start); took > 200*time.Millisecond {
		t.Errorf("a 100 ms stream at 9.2e18 bit/s sent for %v (%d datagrams)", took, s.Packets.Load())
	}
	if !GeneratorLimited(s.Packets.Load(), spec.Scheduled(), s.Late.Load()) {
		t.Errorf("%d of %d datagrams sent, %d late: want generator-limited", s.Packets.Load(), spec.Scheduled(), s.Late.Load())
	}
}

// TestDSCPMarked: a datagram sent with a DSCP arrives with it, as the
// receiving socket reads it (IP_RECVTOS, IPV6_RECVTCLASS): from a socket
// of its own marked with SetDSCP (the client's), and from a shared
// unconnected socket with a control message per datagram (the
// responder's), over IPv4 and IPv6 loopback.
func TestDSCPMarked(t *testing.T) {
	for _, addr := range []string{"127.0.0.1", "::1"} {
		rx, tx := loopPair(t, addr)
		v6 := addr == "::1"
		rc, _ := rx.SyscallConn()
		if err := sockopt.SetRecvTOS(rc, v6); err != nil {
			t.Fatal(err)
		}
		trc, _ := tx.SyscallConn()
		if err := sockopt.SetDSCP(trc, 46, v6); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, wire.CompactLen)
		wire.PutUDP(b, wire.UDPHeader{Type: wire.UDPData})
		if _, err := NewUDPOut(tx, netip.AddrPort{}, 0).Write([][]byte{b}); err != nil {
			t.Fatal(err)
		}
		shared, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(addr)})
		if err != nil {
			t.Fatal(err)
		}
		defer shared.Close()
		to := rx.LocalAddr().(*net.UDPAddr).AddrPort()
		if _, err := NewUDPOut(shared, to, 10).Write([][]byte{b, b}); err != nil {
			t.Fatal(err)
		}
		in := NewUDPIn(rx, 4, 64, 64)
		var got []int
		for len(got) < 3 {
			_ = rx.SetReadDeadline(time.Now().Add(2 * time.Second))
			n, err := in.Read()
			if err != nil {
				t.Fatalf("%s: %v after %v", addr, err, got)
			}
			for i := range n {
				_, oob := in.Buf(i)
				d, ok := sockopt.ParseDSCP(oob)
				if !ok {
					t.Fatalf("%s: no TOS control message", addr)
				}
				got = append(got, d)
			}
		}
		if got[0] != 46 || got[1] != 10 || got[2] != 10 {
			t.Errorf("%s: DSCP received %v, want 46 (socket), 10, 10 (per datagram)", addr, got)
		}
	}
}

// TestBatchesShort: at 148,809 datagrams/s (10 Gbit/s of 64-byte frames
// asked as 18-byte payloads: 21.4 Mbit/s) a batch covers at most 50 µs
// of schedule, 7.4 gaps of 6.72 µs: at most 8 datagrams, so the stream
// leaves in short bursts, even when the sender catches up (batch after
// batch). On loopback a UDP GSO buffer arrives whole and a receiver with
// UDP GRO reads it as one buffer, so the buffers' sizes are the
// batches'. And every datagram sent arrives.
func TestBatchesShort(t *testing.T) {
	rx, tx := loopPair(t, "127.0.0.1")
	rc, _ := rx.SyscallConn()
	if err := sockopt.SetUDPGRO(rc, true); err != nil {
		t.Skip("no UDP GRO here:", err)
	}
	_, _ = sockopt.SetRecvBuffer(rc, 8<<20)
	spec := UDPSpec{RateBps: 18 * 8 * 148_809, Size: 18, Duration: 200 * time.Millisecond}
	var s UDPSender
	done := make(chan struct{})
	go func() {
		defer close(done)
		SendUDP(context.Background(), NewUDPOut(tx, netip.AddrPort{}, 0), NewClock(), spec, &s)
	}()
	in := NewUDPIn(rx, MaxBatch, 65536, sockopt.RxStampSpace)
	var batches []int
	total := 0
	for total < int(spec.Scheduled()) {
		_ = rx.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, err := in.Read()
		if err != nil {
			break
		}
		for i := range n {
			b, oob := in.Buf(i)
			k := 0
			Segments(b, sockopt.ParseRxStamp(oob).GSOSize, func([]byte) { k++ })
			batches = append(batches, k)
			total += k
		}
	}
	<-done
	slices.Sort(batches)
	t.Logf("%d datagrams in %d buffers, median %d, largest %d; %d late", total, len(batches), batches[len(batches)/2], batches[len(batches)-1], s.Late.Load())
	// a sender stalled at the end stops at the duration with what is
	// still due unsent: the sent count is the sender's, received all
	if uint64(total) != s.Packets.Load() {
		t.Errorf("received %d of %d sent (%d scheduled): want all", total, s.Packets.Load(), spec.Scheduled())
	}
	if m := batches[len(batches)-1]; m > 8 {
		t.Errorf("a batch of %d datagrams: want ≤ 8 (50 µs at 148,809/s)", m)
	}
}

// TestLateIsBehindByAGap: a datagram counts as late when it went out more
// than 1 ms and more than one gap behind its schedule (after the next one
// was due); in a slow stream a few ms of slip bunches with nothing.
func TestLateIsBehindByAGap(t *testing.T) {
	slow := UDPSpec{Size: 1472, RateBps: 1472 * 8 * 41} // 41 datagrams/s, 24.4 ms apart
	fast := UDPSpec{Size: 18, RateBps: 18 * 8 * 148_809}
	cases := []struct {
		name string
		spec UDPSpec
		n    int
		slip time.Duration
		late uint64
	}{
		{"slow, 2 ms behind", slow, 1, 2 * time.Millisecond, 0},
		{"slow, 23 ms behind", slow, 1, 23 * time.Millisecond, 0},
		{"slow, 30 ms behind", slow, 1, 30 * time.Millisecond, 1},
		{"fast, 0.9 ms behind", fast, 8, 900 * time.Microsecond, 0},
		// 1.1 ms behind: the first is late, and so are the batch's next
		// ones while they are still more than 1 ms behind (0.1 ms / 6.7 µs
		// = 14 more gaps of room, capped by the 7 left in the batch).
		{"fast, 1.1 ms behind", fast, 8, 1100 * time.Microsecond, 8},
	}
	for _, c := range cases {
		var s UDPSender
		s.sent(c.spec, 0, c.n, c.slip)
		if got := s.Late.Load(); got != c.late {
			t.Errorf("%s: late %d, want %d", c.name, got, c.late)
		}
	}
}

// TestGeneratorLimitedEdges: one datagram short of the schedule is the
// stream's end, not a slow generator; two short of 165 is; late
// datagrams count past 5 %.
func TestGeneratorLimitedEdges(t *testing.T) {
	cases := []struct {
		sent, scheduled, late uint64
		want                  bool
	}{
		{165, 165, 0, false},
		{164, 165, 0, false},
		{163, 165, 0, true},
		{99_500, 100_000, 0, false},
		{99_498, 100_000, 0, true},
		{1000, 1000, 50, false},
		{1000, 1000, 51, true},
	}
	for _, c := range cases {
		if got := GeneratorLimited(c.sent, c.scheduled, c.late); got != c.want {
			t.Errorf("GeneratorLimited(%d, %d, %d) = %v, want %v", c.sent, c.scheduled, c.late, got, c.want)
		}
	}
}
