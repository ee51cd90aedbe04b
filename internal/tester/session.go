// Package tester is the client side of every test: it opens a session with
// a responder, runs the data path locally (flow) and merges both ends'
// figures into the result model.
package tester

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/fullpipe/fullpipe/internal/frame"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/sockopt"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// Target says where the responder is and how to reach it.
type Target struct {
	Addr   string // HOST or HOST:PORT; default port 6349
	Secret []byte // shared secret: the responder must ask for it and prove it too
	Bind   string // local address to send from
	Family string // "4", "6" or "" (any)
	// TLS runs the control connection over TLS (data connections stay
	// plain TCP). With TLSPin (a certificate's SHA-256, wire.ParsePin)
	// the responder's certificate must be that one; without it, it must
	// be valid for the host under the system's roots.
	TLS    bool
	TLSPin []byte
}

// handshakeTimeout bounds each step before the measurement starts.
const handshakeTimeout = 10 * time.Second

// HostPort adds the default port to addr when it has none.
func HostPort(addr string) string {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	return net.JoinHostPort(addr, strconv.Itoa(wire.DefaultPort))
}

// session is an open control connection with an accepted test.
type session struct {
	target Target
	addr   string       // host:port
	ctrl   net.Conn     // the control connection: TCP, or TLS over it
	tcp    *net.TCPConn // the control connection's TCP socket (under TLS too)
	br     *bufio.Reader
	hello  wire.Hello
	accept wire.Accept
	remote *net.TCPAddr
}

func (t Target) network(base string) string { return base + t.Family }

func (t Target) dialer(control func(network, address string, c syscall.RawConn) error) *net.Dialer {
	d := &net.Dialer{Timeout: handshakeTimeout, Control: control}
	if t.Bind != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(t.Bind)}
	}
	return d
}

// dialError turns a dial failure into one line that says what to check.
func dialError(addr string, err error) error {
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr):
		return fmt.Errorf("cannot resolve %q: %w", dnsErr.Name, err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("connection to %s refused: is `fullpipe serve` running there, on that port? (%w)", addr, err)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.ETIMEDOUT):
		return fmt.Errorf("no answer from %s within %v: a firewall, or no host at that address (%w)", addr, handshakeTimeout, err)
	}
	return fmt.Errorf("connect to %s: %w", addr, err)
}

// open dials the responder, checks it is fullpipe of our version,
// checks req against the limits it announces, authenticates, and asks
// for req. A request that breaks the protocol's own rules is refused
// before the dial. A request with an MSS clamps the control connection
// too (controlMSS).
func open(ctx context.Context, t Target, req wire.Request) (*session, error) {
	if err := req.Validate(wire.FormOnly()); err != nil {
		return nil, fmt.Errorf("invalid request: %w", err)
	}
	s := &session{target: t, addr: HostPort(t.Addr)}
	mss := req.MSS
	if req.Kind == wire.KindTrain && mss == 0 {
		mss = trainControlMSS(req.Size)
	}
	c, err := t.dialer(controlMSS(mss)).DialContext(ctx, t.network("tcp"), s.addr)
	if err != nil {
		return nil, dialError(s.addr, err)
	}
	s.ctrl, s.tcp = c, c.(*net.TCPConn)
	s.remote = c.RemoteAddr().(*net.TCPAddr)
	if t.TLS {
		if s.ctrl, err = s.startTLS(ctx, c); err != nil {
			c.Close()
			return nil, err
		}
	}
	s.br = bufio.NewReader(s.ctrl)
	if err := s.handshake(ctx, req); err != nil {
		s.ctrl.Close()
		return nil, err
	}
	return s, nil
}

// controlMSS sets TCP_MAXSEG on the control connection before connect,
// so the MSS it announces in its SYN caps the responder's segments as
// well as ours. A test that clamps its data connections' MSS (to a path
// MTU found by probing) needs the same on the control connection: on a
// path that drops larger packets without ICMP (a PMTUD black hole) and
// with the kernel's PLPMTUD off (net.ipv4.tcp_mtu_probing = 0, the
// default), a frame of more than one full segment (an interval with
// series data and per-stream TCP_INFO is 1-3 kB) is retransmitted at
// the same size forever, and the result behind it never arrives.
//
// A train's control connection is clamped so that no segment is larger
// than the train's own datagrams, which the method sizes to the path MTU
// it found: the sender's holds ride on its stop message (up to 4096,
// about 100 kB), which on a black-holed path vanished whole (CI run 15,
// TestRFC6349BlackHole beside a busy core: "the responder sent no reading
// of the train"). A datagram of size bytes is an IP packet of size + 28
// (IPv4) or + 48 (IPv6); a segment of the same IP size carries size − 12
// either way.
func controlMSS(mss int) func(network, address string, c syscall.RawConn) error {
	if mss <= 0 {
		return nil
	}
	return func(_, _ string, rc syscall.RawConn) error {
		if err := sockopt.SetMaxSeg(rc, mss); err != nil {
			return fmt.Errorf("control connection: --mss %d: %w", mss, err)
		}
		return nil
	}
}

// trainControlMSS is the control connection's MSS for a train of
// datagrams of size bytes: segments whose packets are no larger than its
// datagrams' (the MSS of their IP packet, size − 12), at least TCP's
// least (88).
func trainControlMSS(size int) int {
	return max(frame.MSS(size+frame.IPv4UDP), result.MinMSS)
}

func (s *session) handshake(ctx context.Context, req wire.Request) error {
	stop := context.AfterFunc(ctx, func() { _ = s.ctrl.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	_ = s.ctrl.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := wire.WritePreamble(s.ctrl, wire.MagicControl); err != nil {
		return fmt.Errorf("%s: %w", s.addr, err)
	}
	magic, version, err := wire.ReadPreamble(s.br)
	if err != nil {
		var nf *wire.NotFullpipeError
		if errors.As(err, &nf) || errors.Is(err, net.ErrClosed) {
			return fmt.Errorf("%s: %w", s.addr, err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: waiting for the responder's greeting: %w", s.addr, ctx.Err())
		}
		return fmt.Errorf("%s is not a fullpipe responder (no greeting: %v)", s.addr, err)
	}
	if magic != wire.MagicControl {
		return fmt.Errorf("%s: %w", s.addr, &wire.NotFullpipeError{Got: []byte(magic)})
	}
	if version != wire.Version {
		return fmt.Errorf("%s: %w", s.addr, &wire.VersionError{Ours: wire.Version, Theirs: version})
	}
	if err := s.read(wire.TypeHello, &s.hello); err != nil {
		return err
	}
	if err := req.Validate(s.hello.Announced()); err != nil {
		return &NotSentError{Addr: s.addr, Err: err.(*wire.RequestError)}
	}
	if err := s.authenticate(req); err != nil {
		return err
	}
	if err := s.read(wire.TypeAccept, &s.accept); err != nil {
		return err
	}
	_ = s.ctrl.SetDeadline(time.Time{})
	return nil
}

// authenticate sends the request and, when the responder asks for the
// secret, proves it and checks the responder's proof in return. A client
// with a secret insists on that proof: a responder that asks for no
// secret could be anyone.
func (s *session) authenticate(req wire.Request) error {
	secret, challenge := s.target.Secret, s.hello.Challenge
	switch {
	case challenge == nil && len(secret) > 0:
		return fmt.Errorf("%s: %w", s.addr, &wire.ResponderAuthError{Why: "it asks for no secret"})
	case challenge != nil && len(secret) == 0:
		return fmt.Errorf("%s requires a shared secret: pass --secret-file", s.addr)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	// The frame carries body byte for byte (it is already compact JSON),
	// so both ends' proofs cover the same bytes.
	if err := wire.Encode(s.ctrl, wire.TypeRequest, json.RawMessage(body)); err != nil {
		return fmt.Errorf("%s: control connection: %w", s.addr, err)
	}
	if challenge == nil {
		return nil
	}
	nonce := wire.NewNonce()
	a := wire.Auth{Nonce: nonce, MAC: wire.ProofMAC(secret, wire.RoleClient, challenge, nonce, body)}
	if err := wire.Encode(s.ctrl, wire.TypeAuth, a); err != nil {
		return fmt.Errorf("%s: control connection: %w", s.addr, err)
	}
	var ok wire.AuthOK
	if err := s.read(wire.TypeAuthOK, &ok); err != nil {
		var pe *wire.ProtocolError
		if errors.As(err, &pe) {
			return fmt.Errorf("%s: %w", s.addr, &wire.ResponderAuthError{Why: pe.Reason})
		}
		return err
	}
	if !wire.CheckProof(secret, wire.RoleResponder, challenge, nonce, body, ok.MAC) {
		return fmt.Errorf("%s: %w", s.addr, &wire.ResponderAuthError{Why: "its proof does not match"})
	}
	return nil
}

// NotSentError is a request the responder would refuse: it breaks a
// limit the responder announced in its hello, so the client closed the
// connection without sending it (no test was opened). Err carries the
// code and the message the responder would have answered with.
type NotSentError struct {
	Addr string
	Err  *wire.RequestError
}

func (e *NotSentError) Error() string {
	return fmt.Sprintf("%s would refuse this test (%s), so it was not sent: %s", e.Addr, e.Err.Code, e.Err.Message)
}

func (e *NotSentError) Unwrap() error { return e.Err }

// read reads one control message of type typ into v.
func (s *session) read(typ string, v any) error {
	m, err := wire.Decode(s.br)
	if err != nil {
		return fmt.Errorf("%s: control connection: %w", s.addr, err)
	}
	return m.Into(typ, v)
}

// startTest sends start and waits for started; the caller's clock starts
// when this returns.
func (s *session) startTest(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { _ = s.ctrl.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	_ = s.ctrl.SetDeadline(time.Now().Add(2 * handshakeTimeout))
	defer s.ctrl.SetDeadline(time.Time{})
	if err := wire.Encode(s.ctrl, wire.TypeStart, nil); err != nil {
		return err
	}
	return s.read(wire.TypeStarted, nil)
}

// dataConn opens one data connection for stream idx.
func (s *session) dataConn(ctx context.Context, idx int, clientSends bool, opts sendOpts) (*net.TCPConn, error) {
	control := func(network, address string, rc syscall.RawConn) error {
		return opts.apply(rc, clientSends)
	}
	c, err := s.target.dialer(control).DialContext(ctx, s.target.network("tcp"), s.remote.String())
	if err != nil {
		return nil, dialError(s.remote.String(), err)
	}
	tc := c.(*net.TCPConn)
	if err := wire.WritePreamble(tc, wire.MagicData); err == nil {
		err = wire.Encode(tc, wire.TypeData, wire.DataHello{Cookie: s.accept.Cookie, Stream: idx, ClientSends: clientSends})
		if err == nil {
			return tc, nil
		}
	}
	tc.Close()
	return nil, fmt.Errorf("data connection %d: %w", idx, err)
}

// sendOpts are socket options for data connections, set before connect
// (MSS must be: it is announced in the SYN).
type sendOpts struct {
	MSS       int
	CC        string
	PacingBps int64
	DSCP      int
	Window    int
	IPv6      bool
}

func (o sendOpts) apply(rc syscall.RawConn, sends bool) error {
	if o.MSS > 0 {
		if err := sockopt.SetMaxSeg(rc, o.MSS); err != nil {
			return fmt.Errorf("--mss %d: %w", o.MSS, err)
		}
	}
	if o.DSCP > 0 {
		if err := sockopt.SetDSCP(rc, o.DSCP, o.IPv6); err != nil {
			return fmt.Errorf("--dscp: %w", err)
		}
	}
	if !sends {
		return nil
	}
	if o.CC != "" {
		if err := sockopt.SetCongestion(rc, o.CC); err != nil {
			return fmt.Errorf("--cc: %w", err)
		}
	}
	if o.PacingBps > 0 {
		if err := sockopt.SetMaxPacingRate(rc, o.PacingBps); err != nil {
			return fmt.Errorf("--pacing-rate: %w", err)
		}
	}
	return nil
}

// stopAndWait asks the responder to stop and reads its result; used when
// the client ends a test early. It waits at most a second.
func (s *session) stopAndWait(reason string, results <-chan serverMsg) *wire.Result {
	return s.stopWith(wire.Stop{Reason: reason}, results)
}

// stopWith is stopAndWait with a stop message that says more than why.
func (s *session) stopWith(stop wire.Stop, results <-chan serverMsg) *wire.Result {
	_ = s.ctrl.SetWriteDeadline(time.Now().Add(time.Second))
	_ = wire.Encode(s.ctrl, wire.TypeStop, stop)
	t := time.NewTimer(time.Second)
	defer t.Stop()
	for {
		select {
		case m, ok := <-results:
			if !ok {
				return nil
			}
			if m.result != nil {
				return m.result
			}
		case <-t.C:
			return nil
		}
	}
}

// serverMsg is an interval or the result from the responder.
type serverMsg struct {
	interval *wire.Interval
	result   *wire.Result
	err      error
}

// readLoop delivers the responder's intervals and result until the
// connection ends; it closes out when it returns (after the result, or on
// error, which it sends first).
func (s *session) readLoop(out chan<- serverMsg) {
	defer close(out)
	for {
		m, err := wire.Decode(s.br)
		if err != nil {
			out <- serverMsg{err: fmt.Errorf("responder %s: control connection lost: %w", s.addr, err)}
			return
		}
		switch m.Type {
		case wire.TypeInterval:
			var iv wire.Interval
			if err := m.Into(wire.TypeInterval, &iv); err != nil {
				out <- serverMsg{err: err}
				return
			}
			out <- serverMsg{interval: &iv}
		default:
			var r wire.Result
			if err := m.Into(wire.TypeResult, &r); err != nil {
				out <- serverMsg{err: err}
				return
			}
			out <- serverMsg{result: &r}
			return
		}
	}
}

func setRecvBuffer(rc syscall.RawConn, n int) (int, error) { return sockopt.SetRecvBuffer(rc, n) }
