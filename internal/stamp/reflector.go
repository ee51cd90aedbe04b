package stamp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fullpipe/fullpipe/internal/sockopt"
)

// ReflectorConfig configures a Reflector. The zero value serves stateless,
// unauthenticated STAMP and TWAMP-Light on every address, port 862.
type ReflectorConfig struct {
	Addr          string        // "host:port" to listen on; default ":862"
	Stateful      bool          // reply with our own per-sender counter (RFC 8762 §4.3.1), not the sender's sequence
	Format        Format        // our timestamps' format (T2, T3); default NTP
	ErrorEstimate ErrorEstimate // of our clock; default unsynchronized, 1 ms (we do not know better)
	Key           []byte        // authenticated mode (RFC 8762 §4.2.2, §4.3.2) when set: HMAC key; unauthenticated packets are then dropped
	MaxSources    int           // senders (IPv4 address, IPv6 /64) we keep limits for, and sessions (address and port) stateful mode numbers; default 4096; past it the least recently heard is forgotten
	Idle          time.Duration // stateful mode: a session's numbering restarts at 0 after this long without a packet; default 5 min
	RatePPS       float64       // packets a second we answer per sender (IPv4 address, IPv6 /64); default 1000
	Burst         int           // packets a sender may send at once above RatePPS; default 100
	GlobalPPS     float64       // packets a second we answer from all senders together; default 20,000
	GlobalBurst   int           // packets all senders may send at once above GlobalPPS; default 2,000
	// RefusePorts are source ports never answered (a service's, not a
	// Session-Sender's): nil is WellKnownPorts (0-1023, 862 among them);
	// an empty, non-nil slice refuses none. The reflector's own port is
	// refused besides.
	RefusePorts []PortRange
}

func (c ReflectorConfig) withDefaults() ReflectorConfig {
	if c.Addr == "" {
		c.Addr = fmt.Sprintf(":%d", DefaultPort)
	}
	if c.ErrorEstimate.Multiplier == 0 {
		c.ErrorEstimate = EstimateFor(time.Millisecond, c.Format, false)
	}
	c.ErrorEstimate.Format = c.Format
	if c.MaxSources <= 0 {
		c.MaxSources = 4096
	}
	if c.Idle <= 0 {
		c.Idle = 5 * time.Minute
	}
	if c.RatePPS <= 0 {
		c.RatePPS = 1000
	}
	if c.Burst <= 0 {
		c.Burst = 100
	}
	if c.GlobalPPS <= 0 {
		c.GlobalPPS = DefaultGlobalPPS
	}
	if c.GlobalBurst <= 0 {
		c.GlobalBurst = DefaultGlobalBurst
	}
	if c.RefusePorts == nil {
		c.RefusePorts = WellKnownPorts
	}
	return c
}

// The global reply budget's defaults: at 44 octets a reply, 20,000 a
// second is 7 Mbit/s of UDP payload — what a whole fleet's senders need, far
// below what would make a reflector worth abusing.
const (
	DefaultGlobalPPS   = 20_000
	DefaultGlobalBurst = 2_000
)

// ReflectorStats counts what a Reflector did with each datagram.
type ReflectorStats struct {
	Received    uint64 // datagrams read
	Reflected   uint64 // replies sent
	Short       uint64 // too short to reflect without amplifying (below TWAMPReflectedMin, or AuthSize in authenticated mode)
	BadAuth     uint64 // authenticated mode: HMAC mismatch
	RateLimited uint64 // over the sender's rate
	OverBudget  uint64 // over the global budget (GlobalPPS)
	Looped      uint64 // a reflected packet (IsReflected): answering would start or feed a loop between reflectors
	RefusedPort uint64 // from a refused source port (RefusePorts, or our own)
	Evicted     uint64 // senders forgotten to make room for new ones (MaxSources)
	SendErrors  uint64
}

// Reflector is a STAMP Session-Reflector (RFC 8762 §4.3) that also answers
// TWAMP-Light Session-Senders (RFC 5357 appendix I): it reads test packets
// on one UDP socket and sends each back, timestamped, to its source, the
// same size as it came. Run serves; Close (or Run's context) ends it.
type Reflector struct {
	cfg    ReflectorConfig
	conn   *net.UDPConn
	kernel bool             // receive timestamps from the kernel (SO_TIMESTAMPNS)
	ttl    bool             // received TTL / Hop Limit from the kernel (IP_RECVTTL, IPV6_RECVHOPLIMIT)
	now    func() time.Time // time.Now; a test's clock: T3, T2 without a kernel stamp, and every interval (rate, idleness)

	mu       sync.Mutex                    // guards limits, sessions, global
	limits   *lru[netip.Prefix, bucket]    // per sender (IPv4 address, IPv6 /64)
	sessions *lru[netip.AddrPort, session] // stateful mode's numbering per session
	global   bucket                        // all senders together

	received, reflected, short, badAuth, limited, sendErr atomic.Uint64
	overBudget, looped, refusedPort, evicted              atomic.Uint64
	closeOnce                                             sync.Once
}

// bucket is a token bucket: tokens, refilled since last.
type bucket struct {
	tokens float64
	last   time.Time
}

// take refills b at rate a second up to burst since its last packet and
// takes a token, or reports false when there is none.
func (b *bucket) take(now time.Time, rate float64, burst int) bool {
	b.tokens = min(float64(burst), b.tokens+now.Sub(b.last).Seconds()*rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// session is stateful mode's state for one sender's session (address and
// port, RFC 8762 §4.3.1).
type session struct {
	seq  uint32    // our next sequence number for it
	last time.Time // its last packet, for Idle
}

// NewReflector binds the socket; Run serves it.
func NewReflector(cfg ReflectorConfig) (*Reflector, error) {
	cfg = cfg.withDefaults()
	ua, err := net.ResolveUDPAddr("udp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("stamp reflector address %q: %w", cfg.Addr, err)
	}
	conn, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("stamp reflector: %w (port %d needs root or CAP_NET_BIND_SERVICE; pass another port)", err, ua.Port)
	}
	r := newReflectorState(cfg)
	r.conn = conn
	if rc, err := conn.SyscallConn(); err == nil && sockopt.EnableRxStamps(rc) == nil {
		r.kernel = true
	}
	r.ttl = enableTTL(conn)
	return r, nil
}

// newReflectorState is a Reflector without its socket: its config (with
// defaults), its tables and the clock.
func newReflectorState(cfg ReflectorConfig) *Reflector {
	cfg = cfg.withDefaults()
	return &Reflector{cfg: cfg, now: time.Now,
		limits: newLRU[netip.Prefix, bucket](cfg.MaxSources), sessions: newLRU[netip.AddrPort, session](cfg.MaxSources),
		global: bucket{tokens: float64(cfg.GlobalBurst)}}
}

// Addr is the address the Reflector serves.
func (r *Reflector) Addr() *net.UDPAddr { return r.conn.LocalAddr().(*net.UDPAddr) }

// KernelTimestamps reports whether receive timestamps (T2) come from the
// kernel (SO_TIMESTAMPNS, when the datagram reached the socket) rather
// than from the clock read right after the read returned.
func (r *Reflector) KernelTimestamps() bool { return r.kernel }

// ReceivedTTLs reports whether the Ses-Sender TTL of replies is the
// received packet's TTL or Hop Limit (IP_RECVTTL, IPV6_RECVHOPLIMIT were
// taken); if not, or when a datagram carries none, it is 255.
func (r *Reflector) ReceivedTTLs() bool { return r.ttl }

// Stats is a snapshot of the counters.
func (r *Reflector) Stats() ReflectorStats {
	return ReflectorStats{
		Received: r.received.Load(), Reflected: r.reflected.Load(), Short: r.short.Load(),
		BadAuth: r.badAuth.Load(), RateLimited: r.limited.Load(), OverBudget: r.overBudget.Load(), Looped: r.looped.Load(),
		RefusedPort: r.refusedPort.Load(), Evicted: r.evicted.Load(), SendErrors: r.sendErr.Load(),
	}
}

// Close closes the socket, which ends Run. It is safe to call more than
// once and concurrently with Run.
func (r *Reflector) Close() error {
	var err error
	r.closeOnce.Do(func() { err = r.conn.Close() })
	return err
}

// Run reads and reflects packets, one at a time on the calling goroutine,
// until ctx is done or Close is called; it closes the socket on return
// and returns nil after either, or the read error that stopped it.
func (r *Reflector) Run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { r.Close() })
	defer stop()
	defer r.Close()
	buf := make([]byte, 65536)
	oob := make([]byte, sockopt.RxStampSpace+ttlSpace)
	for {
		n, oobn, _, from, err := r.conn.ReadMsgUDPAddrPort(buf, oob)
		a := arrival{from: from, at: r.now()}
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("stamp reflector read: %w", err)
		}
		a.t2 = a.at
		if st := sockopt.ParseRxStamp(oob[:oobn]); st.Stamped {
			a.t2 = st.At
		}
		var ok bool
		if a.ttl, ok = parseTTL(oob[:oobn]); !ok {
			a.ttl = 255 // unknown: see docs/stamp.md
		}
		r.received.Add(1)
		if reply := r.reflect(buf[:n], a); reply != nil {
			if _, err := r.conn.WriteToUDPAddrPort(reply, from); err != nil {
				r.sendErr.Add(1)
				continue
			}
			r.reflected.Add(1)
		}
	}
}

// arrival is what the reading loop knows of one datagram besides its
// octets.
type arrival struct {
	from netip.AddrPort
	at   time.Time // r.now() when the read returned: the clock of the rate limit and of idleness (monotonic)
	t2   time.Time // receive timestamp (T2): the kernel's (CLOCK_REALTIME) when there is one, else at
	ttl  uint8     // received TTL or Hop Limit, 255 when unknown
}

// reflect turns a request into its reply, in place (the reply is the
// request's buffer, the same length), or nil to drop it.
func (r *Reflector) reflect(b []byte, a arrival) []byte {
	var req SenderPacket
	var err error
	if len(r.cfg.Key) > 0 {
		req, err = DecodeSenderAuth(b, r.cfg.Key)
	} else if len(b) >= TWAMPReflectedMin { // no reply larger than the request
		req, err = DecodeSender(b, true)
	} else {
		err = &ShortError{Layout: "session-sender", Len: len(b), Min: TWAMPReflectedMin}
	}
	var short *ShortError
	switch {
	case errors.As(err, &short):
		r.short.Add(1)
		return nil
	case err != nil:
		r.badAuth.Add(1)
		return nil
	case IsReflected(b, len(r.cfg.Key) > 0):
		r.looped.Add(1)
		return nil
	case refusedPort(a.from.Port(), r.cfg.RefusePorts, r.ownPort()):
		r.refusedPort.Add(1)
		return nil
	}
	seq, ok := r.admit(a.from, req.Seq, a.at)
	if !ok {
		return nil
	}
	rep := ReflectorPacket{
		Seq: seq, ErrorEstimate: r.cfg.ErrorEstimate,
		ReceiveTimestamp: Stamp(a.t2, r.cfg.Format),
		SenderSeq:        req.Seq, SenderTimestamp: req.Timestamp, SenderErrorEstimate: req.ErrorEstimate,
		SenderTTL: a.ttl,
	}
	rep.Timestamp = Stamp(r.now(), r.cfg.Format) // T3, as late as we can before the write
	if len(r.cfg.Key) > 0 {
		err = EncodeReflectorAuth(b, rep, r.cfg.Key)
	} else {
		err = EncodeReflector(b, rep)
	}
	if err != nil {
		return nil // cannot happen: the sizes were checked above
	}
	return b
}

// ownPort is the port the Reflector serves (0 without a socket).
func (r *Reflector) ownPort() uint16 {
	if r.conn == nil {
		return 0
	}
	return r.Addr().AddrPort().Port()
}

// admit applies the sender's rate limit, then the global budget, and
// keeps stateful mode's numbering; it returns the sequence number to
// reply with, or false to drop the packet.
func (r *Reflector) admit(from netip.AddrPort, senderSeq uint32, now time.Time) (uint32, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, found, evicted := r.limits.get(limitKey(from.Addr()))
	if evicted {
		r.evicted.Add(1)
	}
	if !found {
		*b = bucket{tokens: float64(r.cfg.Burst), last: now}
	}
	if !b.take(now, r.cfg.RatePPS, r.cfg.Burst) {
		r.limited.Add(1)
		return 0, false
	}
	if !r.global.take(now, r.cfg.GlobalPPS, r.cfg.GlobalBurst) {
		r.overBudget.Add(1)
		return 0, false
	}
	if !r.cfg.Stateful {
		return senderSeq, true
	}
	s, found, evicted := r.sessions.get(from)
	if evicted {
		r.evicted.Add(1)
	}
	if !found || now.Sub(s.last) > r.cfg.Idle {
		*s = session{}
	}
	s.last = now
	seq := s.seq
	s.seq++
	return seq, true
}
