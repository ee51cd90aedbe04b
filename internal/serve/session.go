package serve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fullpipe/fullpipe/internal/cpuload"
	"github.com/fullpipe/fullpipe/internal/flow"
	"github.com/fullpipe/fullpipe/internal/sockopt"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// session is one test. Its control goroutine (control) owns it from the
// request to the result; data connections and UDP packets reach it from
// other goroutines through attach, setUDPPeer and udpData.
type session struct {
	srv     *Server
	cookie  wire.Cookie
	req     wire.Request
	peer    string // the control connection's remote address
	peerIP  netip.Addr
	sendBps int64 // guarded by srv.mu
	log     *slog.Logger

	endBy     time.Time     // when the session is due to end at the latest (retry-after); guarded by srv.mu once registered
	done      chan struct{} // closed when control has ended the session
	mu        sync.Mutex    // guards the fields below
	streams   []*stream
	attachErr error
	streamErr error            // the first error a stream ended with during the test
	udpPeer   netip.AddrPort   // reverse UDP: where the stream goes (first hello's source)
	udpPorts  []netip.AddrPort // registered UDP sources (≤ req.UDPPorts, default 1)
	clock     flow.Clock
	load      cpuload.Mark // the process's CPU counters when the test started
	started   bool
	// Echo budget left (echoBudget) and what was not answered.
	echoPackets, echoBytes      int64
	echoRefused, foreignPackets int64

	// TCP time series (run's goroutine after startWorkers): bytes this
	// side receives per bin, RTT of the streams it sends, and how much of
	// each the client already has.
	rx      *flow.Series
	rtt     flow.RTTSeries
	rxSent  int
	rttSent int

	attached chan struct{} // a data connection or UDP peer arrived (cap 1)
	udpRx    *flow.UDPReceiver
	// the shared socket's drop count (SO_RXQ_OVFL) at an upload's first
	// datagram and its latest (mu)
	dropsSeen      bool
	drops0, drops1 uint32
	udpTx          flow.UDPSender

	tos []byte // the control message that marks its echo replies with req.DSCP (nil: none)

	train     *trainState  // a train session (KindTrain); set before the session is registered
	trainSent atomic.Int64 // datagrams of a reverse train sent
}

// stream is one data connection of a session.
type stream struct {
	conn  *net.TCPConn
	hello wire.DataHello
	ctr   flow.Counter
}

func (st *stream) serverSends() bool { return !st.hello.ClientSends }

func (ss *session) notify() {
	select {
	case ss.attached <- struct{}{}:
	default:
	}
}

// attach adds a data connection, applying the sending side's socket options.
func (ss *session) attach(c *net.TCPConn, dh wire.DataHello) error {
	if addrIP(c.RemoteAddr()) != ss.peerIP {
		return errors.New("data connection from another host than the control connection")
	}
	st := &stream{conn: c, hello: dh}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.started {
		return errors.New("data connection after the test started")
	}
	if len(ss.streams) >= ss.expectedStreams() {
		return errors.New("more data connections than the test asked for")
	}
	// The hello must name a stream the request asked for: its direction
	// decides who sends (and what the rate budget reserved), so a client
	// cannot turn an upload into an unpaced download.
	wantClient := !ss.req.Reverse
	if dh.Stream < 0 || dh.Stream >= ss.req.Streams || (!ss.req.Bidir && dh.ClientSends != wantClient) {
		return fmt.Errorf("data connection for stream %d (client sends: %v), which the request did not ask for", dh.Stream, dh.ClientSends)
	}
	for _, o := range ss.streams {
		if o.hello.Stream == dh.Stream && o.hello.ClientSends == dh.ClientSends {
			return fmt.Errorf("a second data connection for stream %d", dh.Stream)
		}
	}
	if st.serverSends() {
		if err := applySendOpts(c, ss.req, ss.pacingBps(), ss.srv.cfg.ForceSendBuffer); err != nil && ss.attachErr == nil {
			ss.attachErr = err
		}
	}
	ss.streams = append(ss.streams, st)
	ss.notify()
	return nil
}

func (ss *session) expectedStreams() int {
	if ss.req.Kind != wire.KindTCP {
		return 0
	}
	if ss.req.Bidir {
		return 2 * ss.req.Streams
	}
	return ss.req.Streams
}

// pacingBps is the per-stream pacing of streams the server sends.
func (ss *session) pacingBps() int64 {
	if ss.req.PacingBps > 0 {
		return ss.req.PacingBps
	}
	if ss.srv.cfg.MaxRateBps > 0 && ss.req.Streams > 0 {
		return ss.sendBps / int64(ss.req.Streams)
	}
	return 0
}

// applySendOpts sets what a sending socket needs: congestion control,
// pacing, DSCP, and a send buffer able to hold the requested window.
func applySendOpts(c *net.TCPConn, req wire.Request, pacingBps int64, force bool) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	v6 := addrIP(c.LocalAddr()).Is6()
	if req.CC != "" {
		if err := sockopt.SetCongestion(rc, req.CC); err != nil {
			return fmt.Errorf("responder: %w", err)
		}
	}
	if pacingBps > 0 {
		if err := sockopt.SetMaxPacingRate(rc, pacingBps); err != nil {
			return fmt.Errorf("responder: pacing: %w", err)
		}
	}
	if req.DSCP > 0 {
		if err := sockopt.SetDSCP(rc, req.DSCP, v6); err != nil {
			return fmt.Errorf("responder: %w", err)
		}
	}
	return flow.SizeSendBuffer(rc, req.Window, force)
}

// udpData counts one datagram of an upload's stream, and the socket's
// drop count it arrived with.
func (ss *session) udpData(h wire.UDPHeader, n int, rx rxInfo) {
	ss.mu.Lock()
	started, clk := ss.started, ss.clock
	if started {
		if !ss.dropsSeen {
			ss.dropsSeen, ss.drops0 = true, rx.dropCount()
		}
		ss.drops1 = rx.dropCount()
	}
	ss.mu.Unlock()
	if started && ss.udpRx != nil {
		ss.udpRx.Add(h, n, clk.Since())
	}
}

// localDrops is what the shared socket dropped between the upload's
// first datagram and its latest.
func (ss *session) localDrops() uint64 {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return uint64(ss.drops1 - ss.drops0)
}

// control runs one control connection: greeting, auth, request, the test
// and its result. It returns when the session has ended and released
// everything it held.
func (s *Server) control(ctx context.Context, c net.Conn) {
	defer c.Close()
	log := s.cfg.Log.With("peer", c.RemoteAddr().String())
	br := bufio.NewReader(c)
	fail := func(e *wire.Error) {
		log.Info("refused test", "code", e.Code, "reason", e.Message)
		_ = c.SetWriteDeadline(time.Now().Add(handshakeTimeout))
		_ = wire.Encode(c, wire.TypeError, e)
	}
	req, err := s.authenticate(c, br)
	if err != nil {
		var we *wire.Error
		if errors.As(err, &we) {
			fail(we)
		} else if errors.Is(err, errLeftBeforeRequest) {
			log.Info(err.Error())
		}
		return
	}
	if err := req.Validate(s.Limits()); err != nil {
		fail(err.(*wire.RequestError).AsWire())
		return
	}
	ss := s.newSession(req, addrIP(c.RemoteAddr()), log)
	ss.peer = c.RemoteAddr().String()
	if err := s.register(ss, sendRate(req, s.cfg.MaxRateBps)); err != nil {
		fail(err.(*wire.Error))
		return
	}
	defer close(ss.done)
	defer ss.logDrops()
	defer s.unregister(ss)
	defer ss.closeStreams()
	log = log.With("session", ss.cookie.String()[:8], "kind", req.Kind)
	ss.log = log
	if wire.Encode(c, wire.TypeAccept, wire.Accept{Cookie: ss.cookie, CC: flow.DefaultCC(), MaxTime: s.cfg.MaxDuration, Host: wire.Host{Server: s.cfg.Software, Kernel: s.cfg.Kernel}}) != nil {
		return
	}
	if err := readMsg(br, wire.TypeStart, nil); err != nil {
		log.Info("client left before start", "err", err)
		return
	}
	if err := ss.waitReady(ctx); err != nil {
		fail(err)
		return
	}
	_ = c.SetDeadline(time.Time{})
	s.mu.Lock()
	ss.endBy = time.Now().Add(s.hardDeadline(req))
	s.mu.Unlock()
	log.Info("test started", "streams", req.Streams, "reverse", req.Reverse, "bidir", req.Bidir, "duration", req.Duration)
	if err := ss.run(ctx, c, br); err != nil {
		log.Info("test ended early", "reason", err)
		return
	}
	log.Info("test finished")
}

// readMsg reads one frame of type typ into v, after authentication
// (start): a frame of normal size, its buffer grown as bytes arrive.
// authenticate reads the frames before it (request, auth) with the small
// cap, wire.MaxSmallFrame.
func readMsg(br *bufio.Reader, typ string, v any) error {
	m, err := wire.Decode(br)
	if err != nil {
		return err
	}
	return m.Into(typ, v)
}

// newSession is the session for an accepted request: its echo budget,
// its UDP receiver sized from the request, and its latest end.
func (s *Server) newSession(req wire.Request, peer netip.Addr, log *slog.Logger) *session {
	ss := &session{srv: s, cookie: wire.NewCookie(), req: req, peerIP: peer, log: log, attached: make(chan struct{}, 1), done: make(chan struct{})}
	ss.echoPackets, ss.echoBytes = echoBudget(req)
	ss.tos = sockopt.TOSCmsg(req.DSCP, !peer.Unmap().Is4())
	ss.endBy = time.Now().Add(handshakeTimeout + s.hardDeadline(req))
	if req.Kind == wire.KindUDP && !req.Reverse {
		ss.udpRx = flow.NewUDPReceiverFor(expectedPackets(req))
	}
	if req.Kind == wire.KindTrain {
		ss.train = &trainState{}
		if !req.Reverse {
			ss.train.rx = flow.NewTrainRecorder(req.TrainPackets, req.Size, req.OverheadBytes)
		}
	}
	return ss
}

// expectedPackets is how many datagrams a UDP upload sends (rate ×
// duration / size), with a margin, at most maxTrackedSeq: the size of
// its receiver's sequence tracking.
func expectedPackets(req wire.Request) uint64 {
	bits := float64(req.RateBps) * req.Duration.Seconds()
	n := bits / float64(8*max(req.Size, wire.MinUDPSize))
	return uint64(min(n*1.1+1024, maxTrackedSeq))
}

// hardDeadline is how long a session may run after its start: its
// duration plus wire.EndGrace, or --max-duration for a byte-count test.
func (s *Server) hardDeadline(req wire.Request) time.Duration {
	if req.Duration <= 0 {
		return s.cfg.MaxDuration
	}
	return req.Duration + wire.EndGrace
}

// sendRate is what a request reserves of the server's rate budget
// (saturating: a huge pacing cannot wrap around to a small sum).
func sendRate(req wire.Request, maxBps int64) int64 {
	switch {
	case req.Kind == wire.KindUDP && req.Reverse && req.EchoEvery > 0:
		return wire.SatAdd(req.RateBps, req.RateBps/int64(req.EchoEvery)) // and the probes' replies
	case req.Kind == wire.KindUDP && req.Reverse:
		return req.RateBps
	case req.Kind == wire.KindUDP && req.EchoEvery > 0:
		return req.RateBps / int64(req.EchoEvery) // the probes' replies
	case req.Kind == wire.KindTCP && (req.Reverse || req.Bidir):
		if req.PacingBps > 0 {
			return wire.SatMul(req.PacingBps, int64(req.Streams))
		}
		return maxBps / 4 // unpaced: a quarter of the budget, paced to it
	case req.Kind == wire.KindTrain && req.Reverse && req.RateBps > 0:
		return req.RateBps
	case req.Kind == wire.KindTrain && req.Reverse:
		return maxBps // back to back is the link's full rate: the whole budget, paced to it (trainSpec)
	}
	return 0
}

// waitReady waits until every data connection (and, for a reverse UDP
// test, the client's UDP address) has arrived.
func (ss *session) waitReady(ctx context.Context) *wire.Error {
	t := time.NewTimer(handshakeTimeout)
	defer t.Stop()
	for {
		ss.mu.Lock()
		udpOut := ss.req.Reverse && (ss.req.Kind == wire.KindUDP || ss.req.Kind == wire.KindTrain)
		ready := len(ss.streams) == ss.expectedStreams() && (!udpOut || ss.udpPeer.IsValid())
		aerr := ss.attachErr
		if ready && aerr == nil {
			ss.clock = flow.NewClock()
			ss.load = cpuload.Now()
			ss.started = true
		}
		ss.mu.Unlock()
		if aerr != nil {
			return &wire.Error{Code: wire.CodeBadRequest, Message: aerr.Error()}
		}
		if ready {
			return nil
		}
		select {
		case <-ss.attached:
		case <-ctx.Done():
			return &wire.Error{Code: wire.CodeInternal, Message: "responder is shutting down"}
		case <-t.C:
			return &wire.Error{Code: wire.CodeProtocol, Message: fmt.Sprintf("only %d of %d data connections arrived within %v (a firewall between the ends?)", len(ss.streams), ss.expectedStreams(), handshakeTimeout)}
		}
	}
}

func (ss *session) closeStreams() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, st := range ss.streams {
		st.conn.Close()
	}
}
