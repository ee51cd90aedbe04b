// Package serve is the responder: it accepts control connections from
// testers, runs each test as its own session (many at once, within limits),
// and answers UDP probes and streams on the same port number.
package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fullpipe/fullpipe/internal/ctxtime"
	"github.com/fullpipe/fullpipe/internal/sockopt"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// Config is the responder's configuration; the zero value (plus a Listen
// address) is usable: zero limits take the defaults below.
type Config struct {
	Listen      string        // host:port; default ":6349"
	MaxSessions int           // concurrent tests; default 16
	MaxDuration time.Duration // per test; default 10m
	MaxStreams  int           // TCP streams per direction per test; default 32
	MaxRateBps  int64         // cap on what the server sends (UDP rate, TCP pacing), summed over sessions; 0 = none
	Secret      []byte        // when set, clients must prove it and the responder proves it back; at least 16 random bytes (wire.CheckSecret)
	// Keys, when set, are per-run keys (a fleet agent's): clients must
	// prove one live now, as with Secret, and the responder proves it
	// back. An empty ring refuses every client. With both, either does.
	Keys *KeyRing
	TLS  *tls.Config  // when set, control connections must be TLS (data connections stay plain TCP)
	Log  *slog.Logger // default: discard; rate-limited per client address (LogLinesPerAddr)
	// LogLinesPerAddr bounds the lines one client address may cause per
	// 10 s; the rest are counted in one "suppressed K lines" line. Default 20.
	LogLinesPerAddr int
	ResultsDir      string // when set, every test's Record is stored there, one JSON file per test
	Software        string // "fullpipe VERSION", sent in accept
	Kernel          string // uname release, sent in accept

	MaxConns           int      // open TCP connections; default DefaultMaxConns() (RLIMIT_NOFILE less a reserve)
	MaxConnsPerAddr    int      // per IPv4 address or IPv6 /64; default 2 × MaxStreams + 8
	MaxSessionsPerAddr int      // tests at once per address; default 4
	MaxWindow          int      // bytes; default KernelMaxWindow(), or 64 MiB with ForceSendBuffer
	ForceSendBuffer    bool     // size send buffers with SO_SNDBUFFORCE (past net.core.wmem_max)
	MaxWriteSize       int      // bytes per write call; default 16 MiB
	MaxProbeRate       int      // echo replies per second of a test's duration; default 1000
	MaxTrainBytes      int      // bytes of one packet train; default DefaultMaxTrainBytes
	AllowCC            []string // congestion controls a request may name; default AllowedCC()
	AllowDSCP          []int    // DSCP values a request may name; default DefaultDSCP() (0-47)
}

// Defaults for zero Config fields.
const (
	DefaultMaxSessions = 16
	DefaultMaxDuration = 10 * time.Minute
	DefaultMaxStreams  = 32
	// handshakeTimeout bounds each step before a test starts.
	handshakeTimeout = 10 * time.Second
	// preambleTimeout bounds the wait for a connection's preamble and,
	// on a data connection, its data frame.
	preambleTimeout = 2 * time.Second
	// writeTimeout bounds each write to a control connection once the
	// test runs: a client that stops reading cannot hold its session.
	writeTimeout = 2 * time.Second
)

func (c *Config) fill() {
	if c.Listen == "" {
		c.Listen = fmt.Sprintf(":%d", wire.DefaultPort)
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = DefaultMaxSessions
	}
	if c.MaxDuration <= 0 {
		c.MaxDuration = DefaultMaxDuration
	}
	if c.MaxStreams <= 0 {
		c.MaxStreams = DefaultMaxStreams
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.LogLinesPerAddr <= 0 {
		c.LogLinesPerAddr = DefaultLogLinesPerAddr
	}
	if c.Software == "" {
		c.Software = "fullpipe"
	}
	c.fillLimits()
}

func (c *Config) fillLimits() {
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns()
	}
	if c.MaxConnsPerAddr <= 0 {
		c.MaxConnsPerAddr = 2*c.MaxStreams + 8
	}
	if c.MaxSessionsPerAddr <= 0 {
		c.MaxSessionsPerAddr = DefaultMaxSessionsPerAddr
	}
	if c.MaxWindow <= 0 {
		c.MaxWindow = KernelMaxWindow()
		if c.ForceSendBuffer {
			c.MaxWindow = forcedMaxWindow
		}
	}
	if c.MaxWriteSize <= 0 {
		c.MaxWriteSize = DefaultMaxWriteSize
	}
	if c.MaxProbeRate <= 0 {
		c.MaxProbeRate = DefaultMaxProbeRate
	}
	if c.MaxTrainBytes <= 0 {
		c.MaxTrainBytes = DefaultMaxTrainBytes
	}
	if c.AllowCC == nil {
		c.AllowCC = AllowedCC()
	} else {
		c.AllowCC = LoadedCC(c.AllowCC)
	}
	if c.AllowDSCP == nil {
		c.AllowDSCP = DefaultDSCP()
	}
}

// Server is a running responder.
type Server struct {
	cfg     Config
	authLim *authLimiter
	logLim  *logLimiter
	tcp     *net.TCPListener
	udp     *net.UDPConn
	// born is the responder's monotonic time base for stamped echo
	// replies (wire.EchoStamped): receive times are ns since it.
	born time.Time

	refusedConns atomic.Int64 // connections closed at accept: a cap was reached
	acceptErrors atomic.Int64 // temporary accept errors waited out
	panics       atomic.Int64 // panics recovered

	mu       sync.Mutex // guards sessions, tags and rateBps
	sessions map[wire.Cookie]*session
	tags     map[uint32]*session // by wire.Cookie.Tag: compact headers name their session by it
	trains   int                 // train sessions registered: the UDP socket coalesces (GRO) only while none is
	rateBps  int64               // sum of server-sent rate caps of live sessions

	conns connLimits

	wg sync.WaitGroup // connection handlers and the UDP loop
}

// Listen opens the TCP and UDP sockets; Serve runs them.
func Listen(cfg Config) (*Server, error) {
	cfg.fill()
	if len(cfg.Secret) > 0 {
		if err := wire.CheckSecret(cfg.Secret); err != nil {
			return nil, fmt.Errorf("responder secret: %w", err)
		}
	}
	if cfg.ResultsDir != "" {
		if err := checkResultsDir(cfg.ResultsDir); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen tcp %s: %w", cfg.Listen, err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	host, _, _ := net.SplitHostPort(cfg.Listen)
	uc, err := net.ListenPacket("udp", net.JoinHostPort(host, fmt.Sprint(port)))
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("listen udp %s port %d: %w", host, port, err)
	}
	// Replies carry DF and ignore the PMTU cache, so a sized echo probes
	// the path MTU towards the client (best effort: the option may not
	// apply to a socket's family).
	if rc, err := uc.(*net.UDPConn).SyscallConn(); err == nil {
		_ = sockopt.SetDontFragment(rc, false)
		_ = sockopt.SetDontFragment(rc, true)
		// Every UDP test and train shares this socket: a receive buffer
		// that holds a burst while the reader is scheduled out (forced
		// past net.core.rmem_max as root), and the kernel's arrival stamps
		// and drop count for trains. Best effort: a smaller buffer or no
		// stamps still serve, and a train's result says so.
		_, _ = sockopt.SetRecvBuffer(rc, udpRecvBuffer)
		_ = sockopt.EnableRxStamps(rc)
	}
	s := newServer(cfg)
	s.tcp, s.udp = ln.(*net.TCPListener), uc.(*net.UDPConn)
	s.setGRO()
	return s, nil
}

// newServer is a responder of a filled cfg without its sockets: its
// limiters and counters (the fuzz targets run it as is).
func newServer(cfg Config) *Server {
	logLim := newLogLimiter(cfg.Log.Handler(), cfg.LogLinesPerAddr, logWindow, time.Now)
	cfg.Log = slog.New(logLim.handler())
	return &Server{cfg: cfg, authLim: newAuthLimiter(authBurst, authRefill), logLim: logLim, born: time.Now(), sessions: map[wire.Cookie]*session{}, tags: map[uint32]*session{},
		conns: connLimits{max: cfg.MaxConns, maxPerAddr: cfg.MaxConnsPerAddr}}
}

// Addr is the TCP address the server listens on (UDP uses the same port).
func (s *Server) Addr() *net.TCPAddr { return s.tcp.Addr().(*net.TCPAddr) }

// Close closes the listeners of a server that will not be served (Serve
// closes them itself when its ctx ends); Serve after Close returns at once.
func (s *Server) Close() error {
	return errors.Join(ignoreClosed(s.tcp.Close()), ignoreClosed(s.udp.Close()))
}

func ignoreClosed(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Serve accepts until ctx ends, then closes the listeners, ends every
// session and returns once all goroutines have finished. Accept errors
// that a full fd table or memory pressure cause are waited out.
func (s *Server) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { s.tcp.Close(); s.udp.Close() })
	defer stop()
	s.wg.Add(2)
	go s.routineUDP(ctx)
	go s.routineLogFlush(ctx)
	err := s.acceptLoop(ctx, s.tcp.AcceptTCP)
	cancel()
	s.wg.Wait()
	return err
}

// acceptLoop hands each connection accept returns (s.tcp.AcceptTCP; a
// test's fake) to routineConn until the listener is closed. On a
// temporary error (EMFILE, ENFILE, ECONNABORTED, ENOBUFS, ENOMEM) it
// waits 5 ms, doubling to 1 s while the errors last, as net/http does; a
// connection beyond the connection caps is closed at once.
func (s *Server) acceptLoop(ctx context.Context, accept func() (*net.TCPConn, error)) error {
	var backoff time.Duration
	for {
		c, err := accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			if !temporaryAccept(err) {
				return fmt.Errorf("accept on %s: %w", s.Addr(), err)
			}
			s.acceptErrors.Add(1)
			backoff = min(max(5*time.Millisecond, 2*backoff), time.Second)
			s.cfg.Log.Warn("accept failed; waiting before the next", "err", err, "wait", backoff)
			if !ctxtime.Sleep(ctx, backoff) {
				return nil
			}
			continue
		}
		backoff = 0
		ip := addrIP(c.RemoteAddr())
		if !s.conns.acquire(ip) {
			s.refusedConns.Add(1)
			_ = c.SetLinger(0)
			c.Close()
			continue
		}
		s.wg.Add(1)
		go s.routineConn(ctx, c, ip)
	}
}

func temporaryAccept(err error) bool {
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ECONNABORTED, syscall.ENOBUFS, syscall.ENOMEM} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// survive, deferred, turns a panic into a log line so that one client's
// input cannot stop the responder.
func (s *Server) survive(where, peer string) {
	if r := recover(); r != nil {
		s.panics.Add(1)
		s.cfg.Log.Error("recovered from a panic; the responder goes on", "in", where, "peer", peer, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	}
}

// routineConn reads a connection's preamble and hands it to the control
// or data path. It ends when that connection's work ends, and releases
// the connection's slot. c is a *net.TCPConn but for the fuzz target's
// in-memory pipes, which only the control path accepts.
func (s *Server) routineConn(ctx context.Context, c net.Conn, ip netip.Addr) {
	defer s.wg.Done()
	defer s.conns.release(ip)
	defer c.Close()
	defer s.survive("connection", c.RemoteAddr().String())
	conn, magic, version, err := s.preamble(c)
	if tc, ok := conn.(*tls.Conn); ok {
		defer tc.Close() // close_notify before c's close
	}
	if err != nil {
		s.cfg.Log.Info("dropped connection without a fullpipe preamble", "peer", c.RemoteAddr(), "err", err)
		return
	}
	if version != wire.Version {
		s.cfg.Log.Warn("refused client with another protocol version", "peer", c.RemoteAddr(), "theirs", version, "ours", wire.Version)
		if magic == wire.MagicControl {
			_ = conn.SetWriteDeadline(time.Now().Add(writeTimeout))
			_ = wire.WritePreamble(conn, wire.MagicControl)
			_ = wire.Encode(conn, wire.TypeError, (&wire.VersionError{Ours: wire.Version, Theirs: version}).AsWire())
		}
		return
	}
	if magic == wire.MagicData {
		s.attachData(ctx, c)
		return
	}
	s.control(ctx, conn)
}

// register adds a session if the limits allow it. A busy answer carries
// when the first session in the way is due to end.
func (s *Server) register(ss *session, sendBps int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	var all, mine []time.Time
	for _, o := range s.sessions {
		all = append(all, o.endBy)
		if addrKey(o.peerIP) == addrKey(ss.peerIP) {
			mine = append(mine, o.endBy)
		}
	}
	if len(s.sessions) >= s.cfg.MaxSessions {
		return &wire.Error{Code: wire.CodeBusy, RetryAfter: retryAfter(all, now), Message: fmt.Sprintf("responder is running its maximum of %d tests (--max-sessions); try again shortly", s.cfg.MaxSessions)}
	}
	if len(mine) >= s.cfg.MaxSessionsPerAddr {
		return &wire.Error{Code: wire.CodeBusy, RetryAfter: retryAfter(mine, now), Message: fmt.Sprintf("your address already runs the responder's maximum of %d tests per address (--max-sessions-per-addr)", s.cfg.MaxSessionsPerAddr)}
	}
	if s.cfg.MaxRateBps > 0 && wire.SatAdd(s.rateBps, sendBps) > s.cfg.MaxRateBps {
		return &wire.Error{Code: wire.CodeLimit, RetryAfter: retryAfter(all, now), Message: fmt.Sprintf("requested send rate %d bit/s exceeds the responder's remaining rate budget of %d bit/s (--max-rate)", sendBps, s.cfg.MaxRateBps-s.rateBps)}
	}
	// The responder draws the cookie, so it keeps the live sessions' tags
	// apart by drawing again rather than refusing the client.
	for s.tags[ss.cookie.Tag()] != nil || s.sessions[ss.cookie] != nil {
		ss.cookie = wire.NewCookie()
	}
	s.sessions[ss.cookie] = ss
	s.tags[ss.cookie.Tag()] = ss
	if ss.req.Kind == wire.KindTrain {
		s.trains++
		s.setGRO()
	}
	s.rateBps += sendBps
	ss.sendBps = sendBps
	return nil
}

// setGRO turns the UDP socket's receive coalescing (UDP GRO) on while no
// train session is registered: a fast udp stream is then read 64
// datagrams a call, but a train needs each datagram's own kernel receive
// stamp, which coalesced datagrams share. s.mu held.
func (s *Server) setGRO() {
	if s.udp == nil {
		return
	}
	if rc, err := s.udp.SyscallConn(); err == nil {
		_ = sockopt.SetUDPGRO(rc, s.trains == 0)
	}
}

func (s *Server) unregister(ss *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[ss.cookie] == ss {
		delete(s.sessions, ss.cookie)
		delete(s.tags, ss.cookie.Tag())
		if ss.req.Kind == wire.KindTrain {
			s.trains--
			s.setGRO()
		}
		s.rateBps -= ss.sendBps
	}
}

// Stats are the responder's counters, for tests, logs and the soak.
type Stats struct {
	Sessions, Conns                    int
	RefusedConns, AcceptErrors, Panics int64
}

// Stats returns the responder's counters now.
func (s *Server) Stats() Stats {
	return Stats{Sessions: s.Sessions(), Conns: s.conns.open(), RefusedConns: s.refusedConns.Load(), AcceptErrors: s.acceptErrors.Load(), Panics: s.panics.Load()}
}

// Sessions returns how many tests are running (for tests and logs).
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// attachData reads a data connection's hello and gives it to its session;
// it returns when the session is done with the connection.
func (s *Server) attachData(ctx context.Context, conn net.Conn) {
	c, ok := conn.(*net.TCPConn)
	if !ok {
		return
	}
	var dh wire.DataHello
	m, err := wire.DecodeLimit(c, wire.MaxSmallFrame)
	if err == nil {
		err = m.Into(wire.TypeData, &dh)
	}
	if err != nil {
		s.cfg.Log.Info("dropped data connection", "peer", c.RemoteAddr(), "err", err)
		return
	}
	s.mu.Lock()
	ss := s.sessions[dh.Cookie]
	s.mu.Unlock()
	if ss == nil {
		s.cfg.Log.Info("dropped data connection for an unknown session", "peer", c.RemoteAddr())
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if err := ss.attach(c, dh); err != nil {
		s.cfg.Log.Info("dropped data connection", "peer", c.RemoteAddr(), "err", err)
		return
	}
	// The session closes the connection when it ends; hold the
	// connection's slot until then.
	select {
	case <-ss.done:
	case <-ctx.Done():
	}
}

func addrIP(a net.Addr) netip.Addr {
	if t, ok := a.(*net.TCPAddr); ok {
		ip, _ := netip.AddrFromSlice(t.IP)
		return ip.Unmap()
	}
	return netip.Addr{}
}
