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
	"sync"
	"time"

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
	TLS         *tls.Config   // when set, control connections must be TLS (data connections stay plain TCP)
	Log         *slog.Logger  // default: discard; rate-limited per client address (LogLinesPerAddr)
	// LogLinesPerAddr bounds the lines one client address may cause per
	// 10 s; the rest are counted in one "suppressed K lines" line. Default 20.
	LogLinesPerAddr int
	ResultsDir      string // when set, every test's Record is stored there, one JSON file per test
	Software        string // "fullpipe VERSION", sent in accept
	Kernel          string // uname release, sent in accept
}

// Defaults for zero Config fields.
const (
	DefaultMaxSessions = 16
	DefaultMaxDuration = 10 * time.Minute
	DefaultMaxStreams  = 32
	// handshakeTimeout bounds each step before a test starts.
	handshakeTimeout = 10 * time.Second
	// endGrace is how long past its duration a session may take to drain.
	endGrace = 15 * time.Second
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

	mu       sync.Mutex // guards sessions and rateBps
	sessions map[wire.Cookie]*session
	rateBps  int64 // sum of server-sent rate caps of live sessions

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
	logLim := newLogLimiter(cfg.Log.Handler(), cfg.LogLinesPerAddr, logWindow, time.Now)
	cfg.Log = slog.New(logLim.handler())
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
	}
	return &Server{cfg: cfg, authLim: newAuthLimiter(authBurst, authRefill), logLim: logLim, tcp: ln.(*net.TCPListener), udp: uc.(*net.UDPConn), born: time.Now(), sessions: map[wire.Cookie]*session{}}, nil
}

// Addr is the TCP address the server listens on (UDP uses the same port).
func (s *Server) Addr() *net.TCPAddr { return s.tcp.Addr().(*net.TCPAddr) }

// Serve accepts until ctx ends, then closes the listeners, ends every
// session and returns once all goroutines have finished.
func (s *Server) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { s.tcp.Close(); s.udp.Close() })
	defer stop()
	s.wg.Add(2)
	go s.routineUDP(ctx)
	go s.routineLogFlush(ctx)
	var err error
	for {
		c, aerr := s.tcp.AcceptTCP()
		if aerr != nil {
			if ctx.Err() == nil {
				err = aerr
			}
			break
		}
		s.wg.Add(1)
		go s.routineConn(ctx, c)
	}
	cancel()
	s.wg.Wait()
	return err
}

// routineConn reads a connection's preamble and hands it to the control
// or data path. It ends when that connection's work ends.
func (s *Server) routineConn(ctx context.Context, c *net.TCPConn) {
	defer s.wg.Done()
	conn, magic, version, err := s.preamble(c)
	if err != nil {
		s.cfg.Log.Info("dropped connection without a fullpipe preamble", "peer", c.RemoteAddr(), "err", err)
		conn.Close()
		return
	}
	if version != wire.Version {
		s.cfg.Log.Warn("refused client with another protocol version", "peer", c.RemoteAddr(), "theirs", version, "ours", wire.Version)
		if magic == wire.MagicControl {
			_ = wire.WritePreamble(conn, wire.MagicControl)
			_ = wire.Encode(conn, wire.TypeError, (&wire.VersionError{Ours: wire.Version, Theirs: version}).AsWire())
		}
		conn.Close()
		return
	}
	if magic == wire.MagicData {
		s.attachData(c)
		return
	}
	s.control(ctx, conn)
}

// routineUDP answers RTT probes, learns clients' UDP addresses and feeds
// UDP data to sessions. It ends when the UDP socket is closed.
func (s *Server) routineUDP(ctx context.Context) {
	defer s.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, from, err := s.udp.ReadFromUDPAddrPort(buf)
		recvNs := time.Since(s.born).Nanoseconds()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		h, err := wire.ParseUDP(buf[:n])
		if err != nil {
			continue
		}
		s.mu.Lock()
		ss := s.sessions[h.Cookie]
		s.mu.Unlock()
		if ss == nil || from.Addr().Unmap() != ss.peerIP {
			continue // only sessions' own clients get answers
		}
		switch h.Type {
		case wire.UDPEcho:
			buf[4] = wire.UDPEchoReply
			reply := n
			switch h.EchoMode {
			case wire.EchoSmall:
				reply = wire.UDPHeaderLen
			case wire.EchoSized:
				reply = max(wire.UDPHeaderLen, int(h.EchoSize))
				clear(buf[n:reply]) // padding, not a previous datagram's bytes
			case wire.EchoStamped:
				reply = max(n, wire.EchoStampLen)
				wire.PutEchoStamp(buf[:reply], recvNs)
			}
			_, _ = s.udp.WriteToUDPAddrPort(buf[:reply], from)
		case wire.UDPHello:
			ss.setUDPPeer(from)
		case wire.UDPData:
			ss.udpData(h, n)
		}
	}
}

// register adds a session if the limits allow it.
func (s *Server) register(ss *session, sendBps int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sessions) >= s.cfg.MaxSessions {
		return &wire.Error{Code: wire.CodeBusy, Message: fmt.Sprintf("responder is running its maximum of %d tests; try again shortly", s.cfg.MaxSessions)}
	}
	if s.cfg.MaxRateBps > 0 && s.rateBps+sendBps > s.cfg.MaxRateBps {
		return &wire.Error{Code: wire.CodeLimit, Message: fmt.Sprintf("requested send rate %d bit/s exceeds the responder's remaining rate budget of %d bit/s", sendBps, s.cfg.MaxRateBps-s.rateBps)}
	}
	s.sessions[ss.cookie] = ss
	s.rateBps += sendBps
	ss.sendBps = sendBps
	return nil
}

func (s *Server) unregister(ss *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[ss.cookie] == ss {
		delete(s.sessions, ss.cookie)
		s.rateBps -= ss.sendBps
	}
}

// Sessions returns how many tests are running (for tests and logs).
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// attachData reads a data connection's hello and gives it to its session.
func (s *Server) attachData(c *net.TCPConn) {
	var dh wire.DataHello
	m, err := wire.Decode(c)
	if err == nil {
		err = m.Into(wire.TypeData, &dh)
	}
	if err != nil {
		s.cfg.Log.Info("dropped data connection", "peer", c.RemoteAddr(), "err", err)
		c.Close()
		return
	}
	s.mu.Lock()
	ss := s.sessions[dh.Cookie]
	s.mu.Unlock()
	if ss == nil {
		s.cfg.Log.Info("dropped data connection for an unknown session", "peer", c.RemoteAddr())
		c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if err := ss.attach(c, dh); err != nil {
		s.cfg.Log.Info("dropped data connection", "peer", c.RemoteAddr(), "err", err)
		c.Close()
	}
}

func addrIP(a net.Addr) netip.Addr {
	if t, ok := a.(*net.TCPAddr); ok {
		ip, _ := netip.AddrFromSlice(t.IP)
		return ip.Unmap()
	}
	return netip.Addr{}
}
