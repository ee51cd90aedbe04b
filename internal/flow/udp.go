package flow

import (
	"context"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fullpipe/fullpipe/internal/stats"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// UDPSpec describes a paced UDP stream.
type UDPSpec struct {
	Cookie   wire.Cookie
	RateBps  int64         // UDP payload bit/s
	Size     int           // payload bytes per datagram (≥ wire.MinUDPSize; below wire.UDPHeaderLen the compact header)
	Duration time.Duration // how long to send
}

// UDPSender counts what a UDP sender sent, and how well it kept its
// schedule: a sender the host starves of CPU falls behind and catches up
// in a burst, which a queue may drop and a receiver would blame on the
// path.
type UDPSender struct {
	Packets atomic.Uint64
	Bytes   atomic.Uint64
	Late    atomic.Uint64 // datagrams sent more than LateSlip behind their schedule
	MaxSlip atomic.Int64  // the most any datagram was behind its schedule, ns
}

// LateSlip is how far behind its schedule a datagram must be sent to count
// as late: 1 ms, ten times nanosleep's overshoot here, is 12.5 kB of
// back-to-back packets at 100 Mbit/s.
const LateSlip = time.Millisecond

// slipped records a datagram sent slip behind its schedule.
func (s *UDPSender) slipped(slip time.Duration) {
	if slip > LateSlip {
		s.Late.Add(1)
	}
	if int64(slip) > s.MaxSlip.Load() {
		s.MaxSlip.Store(int64(slip)) // one writer
	}
}

// ConnWriter sends on a connected UDP socket.
func ConnWriter(c *net.UDPConn) func([]byte) error {
	return func(b []byte) error { _, err := c.Write(b); return err }
}

// AddrWriter sends from an unconnected socket to one peer address.
func AddrWriter(c *net.UDPConn, to netip.AddrPort) func([]byte) error {
	return func(b []byte) error { _, err := c.WriteToUDPAddrPort(b, to); return err }
}

// maxLead is how far ahead of its schedule a paced sender may run before it
// sleeps; sending is scheduled from the stream's start (seq × gap), never
// from "now", so timer overshoot is caught up rather than accumulated.
// The sender sleeps with nanosleep on its own OS thread: Go timers
// overshoot by about 1 ms here, which would send 1 ms of packets as one
// burst (37 kB at 300 Mbit/s: enough to overflow a small router queue
// and be mistaken for line loss); nanosleep overshoots by 50-100 µs.
const maxLead = 50 * time.Microsecond

// maxNap bounds one sleep so a cancelled ctx is seen promptly.
const maxNap = 10 * time.Millisecond

// SendUDP sends spec's stream with write until its duration ends or ctx
// ends. Timestamps are on clk. Transient send errors (ENOBUFS, ECONNREFUSED
// from an ICMP) are counted as not sent and do not stop the stream.
func SendUDP(ctx context.Context, write func([]byte) error, clk Clock, spec UDPSpec, s *UDPSender) {
	buf := make([]byte, spec.Size)
	gap := packetGap(spec.Size, spec.RateBps)
	begin := clk.Since()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for seq := uint64(0); ; seq++ {
		due := begin + time.Duration(seq)*gap
		// The schedule ends at the duration and so does the clock: a
		// sender behind its schedule (a rate above what the host can
		// send) stops on time too.
		if due-begin >= spec.Duration || clk.Since()-begin >= spec.Duration || ctx.Err() != nil {
			return
		}
		for lead := due - clk.Since(); lead > maxLead; lead = due - clk.Since() {
			if ctx.Err() != nil {
				return
			}
			ts := unix.NsecToTimespec(int64(min(lead, maxNap)))
			_ = unix.Nanosleep(&ts, nil)
		}
		now := clk.Since()
		wire.PutUDP(buf, wire.UDPHeader{Type: wire.UDPData, Cookie: spec.Cookie, Seq: seq, SentNs: int64(now)})
		if write(buf) == nil {
			s.Packets.Add(1)
			s.Bytes.Add(uint64(len(buf)))
			s.slipped(now - due)
		}
	}
}

// packetGap is the time between datagrams of size bytes at rateBps, at
// least 1 ns (a gap that rounds to 0 would never move the schedule).
func packetGap(size int, rateBps int64) time.Duration {
	if rateBps <= 0 {
		return time.Second
	}
	gap := time.Duration(float64(size*8) / float64(rateBps) * float64(time.Second))
	return max(gap, time.Nanosecond)
}

// UDPReceiver accounts for one UDP stream's arrivals. Safe for one writer
// (Add) and concurrent readers (Stats).
type UDPReceiver struct {
	mu      sync.Mutex // guards all below
	seq     *stats.SeqTracker
	jitter  stats.Jitter
	bytes   uint64
	firstNs int64
	lastNs  int64
}

// NewUDPReceiver returns an empty receiver.
func NewUDPReceiver() *UDPReceiver { return &UDPReceiver{seq: stats.NewSeqTracker()} }

// NewUDPReceiverFor returns an empty receiver whose duplicate detection
// covers sequence numbers below n (a stream of n datagrams): later ones
// still count, as unique, and cost no memory.
func NewUDPReceiverFor(n uint64) *UDPReceiver {
	return &UDPReceiver{seq: stats.NewSeqTrackerFor(n)}
}

// Add records one data datagram of n payload bytes received at now.
func (r *UDPReceiver) Add(h wire.UDPHeader, n int, now time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq.Add(h.Seq)
	r.jitter.Add(time.Duration(h.SentNs), now)
	r.bytes += uint64(n)
	if r.firstNs == 0 {
		r.firstNs = max(int64(now), 1)
	}
	r.lastNs = int64(now)
}

// Stats returns the figures so far. sent, when known (> 0), lets trailing
// losses count.
func (r *UDPReceiver) Stats(sent uint64) wire.UDPStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := r.seq.Result()
	if sent > 0 {
		res = r.seq.ResultWithSent(sent)
	}
	return wire.UDPStats{
		Packets: res.Received, Bytes: r.bytes, Unique: res.Unique, Lost: res.Lost,
		Duplicates: res.Duplicates, Reordered: res.Reordered,
		JitterNanos: int64(r.jitter.Value()), FirstRxNs: r.firstNs, LastRxNs: r.lastNs,
	}
}
