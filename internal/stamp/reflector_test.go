package stamp

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fullpipe/fullpipe/internal/testkit"
)

// startReflector runs a Reflector on 127.0.0.1 until the test ends.
func startReflector(t *testing.T, cfg ReflectorConfig) *Reflector {
	t.Helper()
	r := newReflector(t, cfg)
	serveReflector(t, r)
	return r
}

// newReflector binds a Reflector on 127.0.0.1 without serving it yet (a
// test may set its clock first).
func newReflector(t *testing.T, cfg ReflectorConfig) *Reflector {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	r, err := NewReflector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// serveReflector runs r until the test ends or stop is called: stop
// cancels Run and waits for it to return, so r's counters are final.
func serveReflector(t *testing.T, r *Reflector) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Error("Run did not return 5 s after its context was cancelled")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// fakeClock is a test's clock for a Reflector: it stands still until the
// test moves it, and the Reflector's goroutine may read it meanwhile.
type fakeClock struct{ ns atomic.Int64 }

var fakeEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (c *fakeClock) now() time.Time          { return fakeEpoch.Add(time.Duration(c.ns.Load())) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// dial is a client socket to r, closed when the test ends.
func dial(t *testing.T, r *Reflector) *net.UDPConn {
	t.Helper()
	c, err := net.DialUDP("udp", nil, r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// exchange sends b and returns the reply, or nil after wait.
func exchange(t *testing.T, c *net.UDPConn, b []byte, wait time.Duration) []byte {
	t.Helper()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	return readReply(t, c, wait)
}

func readReply(t *testing.T, c *net.UDPConn, wait time.Duration) []byte {
	t.Helper()
	buf := make([]byte, 65536)
	c.SetReadDeadline(time.Now().Add(wait))
	n, err := c.Read(buf)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil
		}
		t.Fatal(err)
	}
	return buf[:n]
}

func senderPacket(t *testing.T, seq uint32, size int) []byte {
	t.Helper()
	b := make([]byte, size)
	if err := EncodeSender(b, SenderPacket{Seq: seq, Timestamp: Stamp(time.Now(), NTP), ErrorEstimate: ErrorEstimate{Multiplier: 1}}, true); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReflectStateless(t *testing.T) {
	r := startReflector(t, ReflectorConfig{})
	t.Logf("kernel receive timestamps: %v", r.KernelTimestamps())
	if !r.KernelTimestamps() {
		t.Error("SO_TIMESTAMPNS was refused on Linux")
	}
	c := dial(t, r)
	setTTL(t, c, 17)
	req := senderPacket(t, 5, SenderSize)
	before := time.Now()
	rep := exchange(t, c, req, 2*time.Second)
	after := time.Now()
	if len(rep) != len(req) {
		t.Fatalf("reply of %d octets to a request of %d", len(rep), len(req))
	}
	p, err := DecodeReflector(rep)
	if err != nil {
		t.Fatal(err)
	}
	sp, _ := DecodeSender(req, false)
	if !r.ReceivedTTLs() || p.SenderTTL != 17 {
		t.Errorf("Ses-Sender TTL %d (received TTLs: %v), want 17 as sent", p.SenderTTL, r.ReceivedTTLs())
	}
	if p.Seq != 5 || p.SenderSeq != 5 || p.SenderTimestamp != sp.Timestamp || p.SenderErrorEstimate != sp.ErrorEstimate {
		t.Errorf("reply %+v to %+v", p, sp)
	}
	t2, t3 := p.ReceiveTimestamp.Time(NTP), p.Timestamp.Time(NTP)
	slack := time.Microsecond // the NTP fraction's rounding
	if t2.Before(before.Add(-slack)) || t3.Before(t2) || t3.After(after.Add(slack)) {
		t.Errorf("before %v ≤ T2 %v ≤ T3 %v ≤ after %v does not hold", before, t2, t3, after)
	}
	if p.ErrorEstimate.Valid() != nil || p.ErrorEstimate.Format != NTP {
		t.Errorf("reflector's error estimate %+v", p.ErrorEstimate)
	}
}

// setTTL sets the TTL of c's packets.
func setTTL(t *testing.T, c *net.UDPConn, ttl int) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TTL, ttl) }); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
}

func TestReflectStateful(t *testing.T) {
	r := startReflector(t, ReflectorConfig{Stateful: true, Format: PTP})
	a, b := dial(t, r), dial(t, r)
	for i, seq := range []uint32{100, 200, 300} {
		p, err := DecodeReflector(exchange(t, a, senderPacket(t, seq, SenderSize), 2*time.Second))
		if err != nil || p.Seq != uint32(i) || p.SenderSeq != seq || p.ErrorEstimate.Format != PTP {
			t.Errorf("a's packet %d: %+v, %v", i, p, err)
		}
		if err := p.Timestamp.Valid(PTP); err != nil {
			t.Error(err)
		}
	}
	p, err := DecodeReflector(exchange(t, b, senderPacket(t, 7, SenderSize), 2*time.Second))
	if err != nil || p.Seq != 0 || p.SenderSeq != 7 {
		t.Errorf("b's first packet: %+v, %v (each sender has its own counter)", p, err)
	}
}

// TWAMP-Light requests of every size a reflected packet fits in get a
// reply of their own size; shorter ones none.
func TestReflectTWAMPSizes(t *testing.T) {
	r := startReflector(t, ReflectorConfig{})
	c := dial(t, r)
	for _, size := range []int{TWAMPSenderMin, 40, 41, 42, 43, 44, 45, 128, 1472, 9000} {
		wait := 2 * time.Second // a reply on a loaded host
		if size < TWAMPReflectedMin {
			wait = 300 * time.Millisecond // for none
		}
		rep := exchange(t, c, senderPacket(t, uint32(size), size), wait)
		switch {
		case size < TWAMPReflectedMin && rep != nil:
			t.Errorf("%d octets: a reply of %d (amplification)", size, len(rep))
		case size >= TWAMPReflectedMin && len(rep) != size:
			t.Errorf("%d octets: a reply of %d, want the same size", size, len(rep))
		case rep != nil:
			if p, err := DecodeReflector(rep); err != nil || p.SenderSeq != uint32(size) {
				t.Errorf("%d octets: %+v, %v", size, p, err)
			}
		}
	}
	// The reflector counts a reply after writing it: the last count may
	// land just after the reply did.
	testkit.Poll(2*time.Second, func() bool { return r.Stats().Reflected == 8 })
	if s := r.Stats(); s.Short != 2 || s.Reflected != 8 {
		t.Errorf("stats %+v: want 2 short, 8 reflected", s)
	}
}

// Garbage of every length, sent as fast as the socket takes it, is never
// answered with more octets than it had; the reflector keeps serving.
func TestReflectGarbage(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	r := startReflector(t, ReflectorConfig{RatePPS: 1e6, Burst: 100_000})
	c := dial(t, r)
	const n = 2000
	sent := 0
	for i := range n {
		b := make([]byte, rng.IntN(200))
		if i%100 == 0 {
			b = make([]byte, 1+rng.IntN(65000))
		}
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
		sent++
		if rep := readReply(t, c, 0); rep != nil && len(rep) > len(b) {
			t.Fatalf("reply of %d octets to %d", len(rep), len(b))
		}
	}
	// Drain: replies are never larger than 65000, and are at least 41.
	for range n {
		rep := readReply(t, c, 200*time.Millisecond)
		if rep == nil {
			break
		}
		if len(rep) < TWAMPReflectedMin {
			t.Fatalf("a reply of %d octets", len(rep))
		}
	}
	s := r.Stats()
	t.Logf("sent %d: %+v", sent, s)
	if s.Received == 0 || s.Reflected+s.Short != s.Received {
		t.Errorf("counters do not add up: %+v", s)
	}
	// Still serving.
	if rep := exchange(t, c, senderPacket(t, 1, SenderSize), 2*time.Second); len(rep) != SenderSize {
		t.Errorf("after the garbage: reply %d octets", len(rep))
	}
}

// A burst past the rate limit is cut to the bucket; other senders are
// served meanwhile. The clock stands still: the bucket gives exactly its
// burst.
func TestReflectRateLimit(t *testing.T) {
	var clk fakeClock
	r := newReflector(t, ReflectorConfig{RatePPS: 1, Burst: 10})
	r.now = clk.now
	stop := serveReflector(t, r)
	a, b := dial(t, r), dialFrom(t, r, "127.0.0.2") // limits are per address
	for i := range 100 {
		if _, err := a.Write(senderPacket(t, uint32(i), SenderSize)); err != nil {
			t.Fatal(err)
		}
	}
	// One socket, read in order: b's reply comes after a's 100 were taken.
	if rep := exchange(t, b, senderPacket(t, 1, SenderSize), 2*time.Second); rep == nil {
		t.Error("another sender was not served")
	}
	stop()
	s := r.Stats()
	// 10 from a's bucket, none refilled; 1 from b's.
	if s.Received != 101 || s.Reflected != 11 || s.RateLimited != s.Received-s.Reflected {
		t.Errorf("100 packets at once, burst 10, then 1 from another sender: %+v", s)
	}
}

// TestAdmitBucketExact: the per-sender token bucket to the nanosecond,
// on the times admit is given (no socket, no clock). 8 packets a second
// refill a token in exactly 125 ms (binary fractions: no rounding).
func TestAdmitBucketExact(t *testing.T) {
	r := newReflectorState(ReflectorConfig{RatePPS: 8, Burst: 3})
	a, c := netip.MustParseAddrPort("192.0.2.1:1000"), netip.MustParseAddrPort("192.0.2.3:1000")
	for _, from := range []netip.AddrPort{a, c} {
		for i := range 3 {
			if _, ok := r.admit(from, 0, fakeEpoch); !ok {
				t.Fatalf("%v: packet %d of a burst of 3 refused", from, i+1)
			}
		}
	}
	for _, st := range []struct {
		name string
		from netip.AddrPort
		at   time.Duration // after the bursts
		want bool
	}{
		{"a's 4th at once: bucket empty", a, 0, false},
		{"a 1 ns before 125 ms: not yet a token", a, 125*time.Millisecond - time.Nanosecond, false},
		{"c at 125 ms: 1 token at 8/s", c, 125 * time.Millisecond, true},
		{"c again at 125 ms: empty", c, 125 * time.Millisecond, false},
	} {
		if _, ok := r.admit(st.from, 0, fakeEpoch.Add(st.at)); ok != st.want {
			t.Errorf("%s: admitted %v, want %v", st.name, ok, st.want)
		}
	}
	if r.limited.Load() != 3 {
		t.Errorf("%d rate limited, want 3", r.limited.Load())
	}
}

func TestReflectAuthenticated(t *testing.T) {
	key := []byte("reflector key")
	r := startReflector(t, ReflectorConfig{Key: key})
	c := dial(t, r)
	req := make([]byte, AuthSize+16)
	if err := EncodeSenderAuth(req, SenderPacket{Seq: 9, ErrorEstimate: ErrorEstimate{Multiplier: 1}}, key); err != nil {
		t.Fatal(err)
	}
	rep := exchange(t, c, req, 2*time.Second)
	if len(rep) != len(req) {
		t.Fatalf("reply of %d octets to %d", len(rep), len(req))
	}
	if p, err := DecodeReflectorAuth(rep, key); err != nil || p.SenderSeq != 9 {
		t.Errorf("reply %+v, %v", p, err)
	}
	if exchange(t, c, senderPacket(t, 1, SenderSize), 200*time.Millisecond) != nil {
		t.Error("an unauthenticated packet was answered in authenticated mode")
	}
	req[3] ^= 1
	if exchange(t, c, req, 200*time.Millisecond) != nil {
		t.Error("a packet with a bad HMAC was answered")
	}
	if s := r.Stats(); s.Short != 1 || s.BadAuth != 1 || s.Reflected != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestReflectorClose(t *testing.T) {
	r, err := NewReflector(ReflectorConfig{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return 5 s after Close")
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := NewReflector(ReflectorConfig{Addr: "127.0.0.1:notaport"}); err == nil {
		t.Error("a bad address was taken")
	}
}
