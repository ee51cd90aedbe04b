package flow

import (
	"context"
	"net"
	"net/netip"
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
	// EchoEvery makes every EchoEvery-th datagram (sequence numbers
	// EchoEvery−1, 2·EchoEvery−1, …) a mirrored echo: a latency probe
	// inside the stream, which the receiver counts as data too. 0: none.
	EchoEvery int
}

// IsProbe reports whether datagram seq of the stream is a latency probe.
func (spec UDPSpec) IsProbe(seq uint64) bool {
	return spec.EchoEvery > 0 && seq%uint64(spec.EchoEvery) == uint64(spec.EchoEvery-1)
}

// Scheduled is how many datagrams the stream's schedule holds: one
// every packet gap over its duration.
func (spec UDPSpec) Scheduled() uint64 {
	gap := packetGap(spec.Size, spec.RateBps)
	return uint64((spec.Duration + gap - 1) / gap)
}

// UDPSender counts what a UDP sender sent, and how well it kept its
// schedule: a sender the host starves of CPU falls behind and catches up
// in a burst, which a queue may drop and a receiver would blame on the
// path.
type UDPSender struct {
	Packets atomic.Uint64
	Bytes   atomic.Uint64
	Probes  atomic.Uint64 // of Packets, latency probes (UDPSpec.EchoEvery)
	Late    atomic.Uint64 // datagrams sent more than LateSlip and more than one gap behind their schedule
	MaxSlip atomic.Int64  // the most any datagram was behind its schedule, ns
}

// LateSlip is how far behind its schedule a datagram must be sent to count
// as late: 1 ms, ten times nanosleep's overshoot here, is 12.5 kB of
// back-to-back packets at 100 Mbit/s. A datagram must also be more than
// one gap behind (lateThreshold): at 41 frames/s, 24 ms apart, a datagram
// 2 ms late still leaves 22 ms before the next and bunches with nothing.
const LateSlip = time.Millisecond

// lateThreshold is how far behind its schedule a datagram of a stream
// with gap between datagrams counts as late: sent after the next one was
// due, in a catch-up burst, and more than LateSlip.
func lateThreshold(gap time.Duration) time.Duration { return max(LateSlip, gap) }

// GeneratorLimited reports whether a sender that sent sent datagrams of
// the scheduled, late of them more than LateSlip behind, could not hold
// its rate: it sent less than 99.5 % of its schedule (a sender slower
// than its rate stops at the duration with the rest unsent), or more
// than 5 % of its datagrams late (it kept up only in catch-up bursts).
// A stall it caught up (tens of ms of a shared host's CPU going
// elsewhere) is not: its late datagrams are counted apart. One datagram
// short is allowed whatever the count: a sender stops when its duration
// ends, so a last datagram due just before the end and not yet out is
// skipped (in a 1 s stream of 165 datagrams, that alone is 0.6 %).
func GeneratorLimited(sent, scheduled, late uint64) bool {
	return float64(sent)+1 < 0.995*float64(scheduled) || float64(late) > 0.05*float64(sent)
}

// slipped records a datagram sent slip behind its schedule, in a stream
// with gap between datagrams.
func (s *UDPSender) slipped(slip, gap time.Duration) {
	if slip > lateThreshold(gap) {
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
// A UDP stream's datagrams due within maxLead leave in one sendmmsg.
const maxLead = 50 * time.Microsecond

// maxNap bounds one sleep so a cancelled ctx is seen promptly.
const maxNap = 10 * time.Millisecond

// SendUDP sends spec's stream with out until its duration ends or ctx
// ends. Timestamps are on clk. When a datagram is due, it and those due
// within maxLead after it (at most MaxBatch) leave in one system call (a
// sender behind its schedule catches up in such batches, back to back),
// each stamped with the time of the call; the thread sleeps in nanosleep
// between, so a batch covers at most maxLead of the schedule (8
// datagrams at 148,809/s, 50 at 1 M/s). Transient send errors
// (ENOBUFS, ECONNREFUSED from an ICMP) are counted as not sent and do not
// stop the stream.
func SendUDP(ctx context.Context, out *UDPOut, clk Clock, spec UDPSpec, s *UDPSender) {
	bufs := make([][]byte, MaxBatch)
	for i := range bufs {
		bufs[i] = make([]byte, spec.Size)
	}
	gap := packetGap(spec.Size, spec.RateBps)
	total := spec.Scheduled()
	begin := clk.Since()
	defer lockPaced()()
	for seq := uint64(0); seq < total; {
		due := begin + time.Duration(seq)*gap
		// The schedule ends at the duration and so does the clock: a
		// sender behind its schedule (a rate above what the host can
		// send) stops on time too.
		if clk.Since()-begin >= spec.Duration || !sleepUntil(ctx, clk, due) {
			return
		}
		now := clk.Since()
		// those due within maxLead of the first, whether the sender is
		// on time or behind (then batch after batch, no sleep between)
		k := min(uint64(MaxBatch), total-seq, uint64(maxLead/gap)+1)
		for i := range k {
			h := wire.UDPHeader{Type: wire.UDPData, Cookie: spec.Cookie, Seq: seq + i, SentNs: int64(now)}
			if spec.IsProbe(seq + i) {
				h.Type = wire.UDPEcho
			}
			wire.PutUDP(bufs[i], h)
		}
		n, err := out.Write(bufs[:k])
		s.sent(spec, seq, n, now-due)
		seq += uint64(n)
		if err != nil {
			seq++ // not sent
		}
	}
}

// sleepUntil sleeps in nanosleep until clk reaches t; false when ctx
// ended first.
func sleepUntil(ctx context.Context, clk Clock, t time.Duration) bool {
	for lead := t - clk.Since(); lead > 0; lead = t - clk.Since() {
		if ctx.Err() != nil {
			return false
		}
		ts := unix.NsecToTimespec(int64(min(lead, maxNap)))
		_ = unix.Nanosleep(&ts, nil)
	}
	return ctx.Err() == nil
}

// sent counts n datagrams from seq on sent, the first slip behind its
// schedule.
func (s *UDPSender) sent(spec UDPSpec, seq uint64, n int, slip time.Duration) {
	if n <= 0 {
		return
	}
	s.Packets.Add(uint64(n))
	s.Bytes.Add(uint64(n * spec.Size))
	if spec.EchoEvery > 0 {
		e := uint64(spec.EchoEvery)
		s.Probes.Add((seq+uint64(n))/e - seq/e)
	}
	gap := packetGap(spec.Size, spec.RateBps)
	s.slipped(slip, gap)
	if t := lateThreshold(gap); slip > t {
		// the batch's later datagrams were due later, by a gap each
		s.Late.Add(uint64(min(int64(n-1), int64((slip-t)/gap))))
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
