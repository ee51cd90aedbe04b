package tester

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"time"

	"github.com/fullpipe/fullpipe/internal/flow"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/schedule"
	"github.com/fullpipe/fullpipe/internal/sockopt"
	"github.com/fullpipe/fullpipe/internal/version"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// prober sends UDP echo probes to the responder and times the replies on
// its own monotonic clock (a reply's arrival from the kernel's receive
// stamp when the socket gives one), from its own record of each probe's
// send time:
// the stamp a reply carries back only identifies the probe. A reply whose
// stamp is not the one sent under its sequence number (a reply meant for
// another prober of the session, a stale or altered datagram) is not this
// prober's probe coming back and is rejected, never timed.
type prober struct {
	c       *net.UDPConn
	cookie  wire.Cookie
	clk     flow.Clock
	size    int
	onReply func(seq uint64, rtt time.Duration) // called from the reader; may be nil

	mu       sync.Mutex       // guards sentNs, rtts, next, rejected and the holds
	sentNs   map[uint64]int64 // each probe's send time on clk, by sequence number
	rtts     map[uint64]time.Duration
	next     uint64
	rejected int           // replies whose stamp or sequence number is not one sent
	holds    int           // replies whose responder said how long it held them (taken out of their RTTs)
	holdMax  time.Duration // the longest of those holds

	loaded     []time.Duration // set by loop before it returns
	loadedSent int

	done chan struct{} // closed when the reader ends (after close)
}

// probeSize is the default probe payload: the header and the room for
// the responder's hold (wire.EchoHeld), what the responder's echo budget
// counts a probe as at least.
const probeSize = wire.EchoStampLen

// dialUDP opens a UDP socket to the session's responder (its control
// port), from --bind when given.
func dialUDP(s *session) (*net.UDPConn, error) {
	raddr := &net.UDPAddr{IP: s.remote.IP, Port: s.remote.Port}
	var laddr *net.UDPAddr
	if s.target.Bind != "" {
		laddr = &net.UDPAddr{IP: net.ParseIP(s.target.Bind)}
	}
	c, err := net.DialUDP(s.target.network("udp"), laddr, raddr)
	if err != nil {
		return nil, dialError(raddr.String(), err)
	}
	return c, nil
}

// openProbing opens a session of req (an rtt-kind request: the responder
// only echoes) and a prober on it; done closes both.
func openProbing(ctx context.Context, t Target, req wire.Request) (s *session, p *prober, done func(), err error) {
	if s, err = open(ctx, t, req); err != nil {
		return nil, nil, nil, err
	}
	if p, err = newProber(s); err != nil {
		s.ctrl.Close()
		return nil, nil, nil, err
	}
	return s, p, func() { p.close(); s.ctrl.Close() }, nil
}

// newProber opens a UDP socket to the responder's port and starts the
// reader goroutine, which ends on close.
func newProber(s *session) (*prober, error) {
	c, err := dialUDP(s)
	if err != nil {
		return nil, err
	}
	return startProber(c, s.accept.Cookie), nil
}

// startProber starts a prober on c, a UDP socket connected to the
// responder, for the session of cookie; close ends its reader.
func startProber(c *net.UDPConn, cookie wire.Cookie) *prober {
	p := &prober{c: c, cookie: cookie, clk: flow.NewClock(), size: probeSize,
		sentNs: map[uint64]int64{}, rtts: map[uint64]time.Duration{}, done: make(chan struct{})}
	go p.routineRead()
	return p
}

func (p *prober) close() {
	p.c.Close()
	<-p.done
}

func (p *prober) routineRead() {
	defer close(p.done)
	buf := make([]byte, 65536)
	oob := make([]byte, sockopt.RxStampSpace)
	stamped := false
	if rc, err := p.c.SyscallConn(); err == nil {
		stamped = sockopt.EnableRxStamps(rc) == nil
	}
	for {
		n, oobn, _, _, err := p.c.ReadMsgUDPAddrPort(buf, oob)
		if err != nil {
			if errorIsClosed(err) {
				return
			}
			continue // ICMP errors surface as read errors on connected UDP
		}
		read := time.Now()
		now := read.Sub(p.clk.Start())
		if stamped {
			now = arrival(now, read, sockopt.ParseRxStamp(oob[:oobn]))
		}
		h, err := wire.ParseUDP(buf[:n])
		if err != nil || h.Type != wire.UDPEchoReply || h.Cookie != p.cookie {
			continue
		}
		p.mu.Lock()
		sent, ours := p.sentNs[h.Seq]
		_, dup := p.rtts[h.Seq]
		rtt := now - time.Duration(sent)
		switch {
		case !ours || sent != h.SentNs:
			p.rejected++
		case !dup:
			rtt = p.lessHold(rtt, h, buf[:n])
			p.rtts[h.Seq] = rtt
		}
		p.mu.Unlock()
		if ours && sent == h.SentNs && !dup && p.onReply != nil {
			p.onReply(h.Seq, rtt)
		}
	}
}

// holdFigures are the replies whose hold was taken out of their RTTs
// and the longest hold, in µs.
func (p *prober) holdFigures() (int, float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.holds, float64(p.holdMax.Nanoseconds()) / 1e3
}

// lessHold takes out of rtt the time the responder says it held the
// probe (wire.EchoHeld), and counts it; a hold that is not shorter than
// the round trip is not believed and leaves rtt whole. The caller holds
// mu.
func (p *prober) lessHold(rtt time.Duration, h wire.UDPHeader, b []byte) time.Duration {
	if h.EchoMode != wire.EchoHeld {
		return rtt
	}
	ns, ok := wire.EchoHold(b)
	if !ok || time.Duration(ns) >= rtt {
		return rtt
	}
	p.holds++
	p.holdMax = max(p.holdMax, time.Duration(ns))
	return rtt - time.Duration(ns)
}

// arrival is when a reply read at now (on the prober's clock; read is
// the same instant as one time.Now, wall and monotonic) reached this
// host: the kernel's receive stamp, moved onto the clock by the wall
// time between the stamp and the read. Both readings are one: a lag
// taken by a second clock reading after now would count any pause
// between the two (a preempted reader) as the reply's lag and make the
// round trip shorter than the path (CI's fleet mesh read a 16 ms path
// as 15.59 ms). The stamp is used so that the round trip does not
// count how long this reader took to be scheduled (on a 2-vCPU VM a
// halted CPU's wake-up alone is up to 1 ms at p99: docs/lab.md). A
// stamp missing, ahead of the wall clock or more than maxReadLag before
// it (the wall clock stepped) leaves the read time.
func arrival(now time.Duration, read time.Time, st sockopt.RxStamp) time.Duration {
	if !st.Stamped {
		return now
	}
	if lag := read.Round(0).Sub(st.At); lag >= 0 && lag <= maxReadLag && lag <= now {
		return now - lag
	}
	return now
}

// maxReadLag bounds a believable gap between a reply's kernel stamp and
// its read: beyond it the wall clock stepped (a reader is not held a
// second).
const maxReadLag = time.Second

func errorIsClosed(err error) bool {
	return err != nil && (os.IsNotExist(err) || isClosed(err))
}

func isClosed(err error) bool { return err != nil && errors.Is(err, net.ErrClosed) }

// send sends one probe of the prober's size, mirrored back with the
// responder's hold when it has room for it, and returns its sequence
// number.
func (p *prober) send() uint64 {
	if p.size >= wire.EchoStampLen {
		return p.sendEcho(p.size, wire.EchoHeld, 0)
	}
	return p.sendEcho(p.size, wire.EchoMirror, 0)
}

// sendEcho sends one echo probe of payload bytes asking for the given
// reply mode, records its send time, and returns its sequence number.
func (p *prober) sendEcho(payload int, mode byte, replySize int) uint64 {
	buf := make([]byte, max(payload, wire.UDPHeaderLen))
	p.mu.Lock()
	seq := p.next
	p.next++
	ns := int64(p.clk.Since())
	p.sentNs[seq] = ns
	p.mu.Unlock()
	wire.PutUDP(buf, wire.UDPHeader{Type: wire.UDPEcho, Cookie: p.cookie, Seq: seq, SentNs: ns, EchoMode: mode, EchoSize: uint16(replySize)})
	if mode == wire.EchoHeld {
		wire.PutEchoHold(buf, wire.NoHold)
	}
	_, _ = p.c.Write(buf)
	return seq
}

// rejectedReplies is how many replies did not answer a probe as sent.
func (p *prober) rejectedReplies() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rejected
}

// replyWait is how long after its last probe a series waits for replies;
// loadedReplyWait, how long a tcp test's loaded probes wait for theirs
// after the load (loop): the queue the load built has drained by then.
const (
	replyWait       = result.ReplyWait
	loadedReplyWait = 500 * time.Millisecond
)

// seriesTime is how long series takes to send n probes gap apart: the
// first at once, the last (n−1) gaps later.
func seriesTime(n int, gap time.Duration) time.Duration {
	return schedule.SatMul(max(n-1, 0), gap)
}

// collect waits until probes [from, to) have all been answered or wait
// passes, and returns the RTTs of those answered, in sequence order.
func (p *prober) collect(from, to uint64, wait time.Duration) []time.Duration {
	deadline := time.Now().Add(wait)
	for {
		p.mu.Lock()
		got := 0
		for s := from; s < to; s++ {
			if _, ok := p.rtts[s]; ok {
				got++
			}
		}
		p.mu.Unlock()
		if uint64(got) == to-from || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond) // polling a local map, not the network
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []time.Duration
	for s := from; s < to; s++ {
		if r, ok := p.rtts[s]; ok {
			out = append(out, r)
		}
	}
	return out
}

// burst sends n probes gap apart and returns the RTTs answered.
func (p *prober) burst(ctx context.Context, n int, gap time.Duration) []time.Duration {
	p.mu.Lock()
	from := p.next
	p.mu.Unlock()
	sent := p.series(ctx, n, gap)
	return p.collect(from, from+uint64(sent), replyWait)
}

// series sends up to n probes (n ≤ 0: until ctx ends), gap apart on a
// schedule from its start, and returns how many it sent.
func (p *prober) series(ctx context.Context, n int, gap time.Duration) int {
	start := time.Now()
	t := time.NewTimer(0)
	defer t.Stop()
	sent := 0
	for n <= 0 || sent < n {
		select {
		case <-ctx.Done():
			return sent
		case <-t.C:
		}
		p.send()
		sent++
		t.Reset(time.Until(start.Add(time.Duration(sent) * gap)))
	}
	return sent
}

// loop probes every gap until ctx ends, then records the loaded samples.
func (p *prober) loop(ctx context.Context, gap time.Duration) {
	p.mu.Lock()
	from := p.next
	p.mu.Unlock()
	sent := p.series(ctx, 0, gap)
	p.loadedSent = sent
	p.loaded = p.collect(from, from+uint64(sent), loadedReplyWait)
}

// meta describes a run with this session.
func meta(s *session, test string) result.Meta {
	return result.Meta{
		Schema: result.Schema, Tool: "fullpipe", Version: version.Release, Command: os.Args, Test: test,
		Started: time.Now(), Target: s.addr,
		Client: result.Host{Software: version.Software(), Kernel: version.Kernel()},
		Server: result.Host{Software: s.accept.Server, Kernel: s.accept.Kernel},
	}
}
