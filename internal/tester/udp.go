package tester

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fullpipe/fullpipe/internal/cpuload"
	"github.com/fullpipe/fullpipe/internal/flow"
	"github.com/fullpipe/fullpipe/internal/frame"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/schedule"
	"github.com/fullpipe/fullpipe/internal/sockopt"
	"github.com/fullpipe/fullpipe/internal/vocab"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// UDPCost is a udp test's own time (RunUDP): the stream, then the
// receiver's drain, when the client asks for the count (up) or stops
// counting (down); its latency probes' replies are read within the
// drain. One session.
func UDPCost(cfg result.UDPConfig) schedule.Cost {
	cfg = cfg.WithDefaults()
	return schedule.Cost{Run: schedule.SatAdd(cfg.Duration, cfg.Drain), Sessions: 1}
}

// RunUDP sends a paced UDP stream one way and compares what the sender
// sent with what the receiver counted.
func RunUDP(ctx context.Context, t Target, cfg result.UDPConfig, progress func(result.UDPInterval)) (*result.UDP, error) {
	cfg, err := checked("udp", cfg)
	if err != nil {
		return nil, err
	}
	s, err := open(ctx, t, cfg.Request())
	if err != nil {
		return nil, err
	}
	defer s.ctrl.Close()
	raddr := &net.UDPAddr{IP: s.remote.IP, Port: s.remote.Port}
	var laddr *net.UDPAddr
	if t.Bind != "" {
		laddr = &net.UDPAddr{IP: net.ParseIP(t.Bind)}
	}
	uc, err := net.DialUDP(t.network("udp"), laddr, raddr)
	if err != nil {
		return nil, dialError(raddr.String(), err)
	}
	defer uc.Close()
	if err := prepareUDP(uc, cfg.DSCP, raddr.IP.To4() == nil); err != nil {
		return nil, err
	}
	u := &udpRun{cfg: cfg, s: s, uc: uc, rx: flow.NewUDPReceiver(), progress: progress}
	u.lat = flow.NewLatency(u.maxProbes())
	if cfg.Reverse {
		stopHello := u.helloUntilStarted(ctx)
		err = s.startTest(ctx)
		stopHello()
	} else {
		err = s.startTest(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	u.clk = flow.NewClock()
	res, err := u.measure(ctx)
	res.Meta, res.Config = meta(s, "udp"), cfg
	res.Meta.Started = u.clk.Start()
	return res, err
}

// prepareUDP sets the client's UDP socket up: a receive buffer that
// absorbs bursts (best effort), receive stamps and drop counts (best
// effort), and the DSCP its datagrams carry.
func prepareUDP(uc *net.UDPConn, dscp int, v6 bool) error {
	rc, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	_, _ = setRecvBuffer(rc, 8<<20)
	_ = sockopt.EnableRxStamps(rc)
	_ = sockopt.SetUDPGRO(rc, true) // a fast stream comes up 64 datagrams a read
	if dscp > 0 {
		if err := sockopt.SetDSCP(rc, dscp, v6); err != nil {
			return fmt.Errorf("dscp %d: %w", dscp, err)
		}
	}
	return nil
}

type udpRun struct {
	cfg      result.UDPConfig
	s        *session
	uc       *net.UDPConn
	clk      flow.Clock
	rx       *flow.UDPReceiver // reverse: what this end receives
	tx       flow.UDPSender    // forward: what this end sends
	progress func(result.UDPInterval)
	lat      *flow.Latency  // the latency probes' round trips (EchoEvery)
	ptx      flow.UDPSender // reverse: the latency probes sent
	drops    atomic.Uint64  // reverse: datagrams this end's socket dropped (SO_RXQ_OVFL)

	intervals []result.UDPInterval
	prev      wire.UDPStats
}

// helloUntilStarted tells the responder our UDP address (NAT-safe: it
// answers the address it sees) every 50 ms until the returned stop is
// called.
func (u *udpRun) helloUntilStarted(ctx context.Context) (stop func()) {
	return sendHellos(ctx, u.uc, u.s.accept.Cookie)
}

// sendHellos sends a UDP hello on uc (a connected UDP socket; a test's
// fake) every 50 ms until stop is called.
func sendHellos(ctx context.Context, uc io.Writer, cookie wire.Cookie) (stop func()) {
	hctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, wire.UDPHeaderLen)
		wire.PutUDP(buf, wire.UDPHeader{Type: wire.UDPHello, Cookie: cookie})
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			_, _ = uc.Write(buf)
			select {
			case <-hctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// receive reads the socket in batches until ctx ends: the responder's
// stream (reverse) and the latency probes' replies, timed by their
// kernel receive stamps where the socket has them.
func (u *udpRun) receive(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() { _ = u.uc.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	in := flow.NewUDPIn(u.uc, flow.MaxBatch, 65536, sockopt.RxStampSpace)
	for {
		n, err := in.Read()
		if err != nil {
			if ctx.Err() != nil || isClosed(err) {
				return
			}
			continue
		}
		for i := range n {
			b, oob := in.Buf(i)
			read := time.Now()
			st := sockopt.ParseRxStamp(oob)
			if st.Counted {
				// the socket is this test's own, and the kernel sends its
				// count only once it has dropped one: all are this test's
				u.drops.Store(uint64(st.Drops))
			}
			flow.Segments(b, st.GSOSize, func(seg []byte) { u.datagram(seg, read, st) })
		}
	}
}

// datagram accounts for one datagram read at read (st: what the kernel
// said of its arrival): the stream's data, or a probe's reply.
func (u *udpRun) datagram(b []byte, read time.Time, st sockopt.RxStamp) {
	now := read.Sub(u.clk.Start())
	h, err := wire.ParseUDP(b)
	if err != nil || !h.Matches(u.s.accept.Cookie) {
		return
	}
	switch h.Type {
	case wire.UDPData:
		u.rx.Add(h, len(b), now)
	case wire.UDPEchoReply:
		rtt := now - time.Duration(h.SentNs)
		// The kernel's stamp is on the wall clock, the send's on the
		// monotonic one: the read's lag behind the stamp is measured on
		// the wall clock at the read's own instant and taken out of the
		// monotonic round trip when believable (not negative, not the
		// whole round trip), as the prober does (arrival).
		if lag := read.Round(0).Sub(st.At); st.Stamped && lag >= 0 && lag < rtt {
			rtt -= lag
		}
		u.lat.Add(u.probeIndex(h.Seq), rtt)
	}
}

// probeIndex numbers a probe: its place among the stream's probes (up),
// or its own sequence number (down, where the client sends probes
// beside the responder's stream).
func (u *udpRun) probeIndex(seq uint64) uint64 {
	if u.cfg.Reverse {
		return seq
	}
	return seq / uint64(u.cfg.EchoEvery)
}

// sendProbes sends a reverse test's latency probes: mirrored echoes of
// the stream's size, one per EchoEvery datagrams of its schedule, until
// the duration ends or ctx ends. Their replies travel back beside the
// responder's stream.
func (u *udpRun) sendProbes(ctx context.Context) {
	flow.SendUDP(ctx, flow.NewUDPOut(u.uc, netip.AddrPort{}, 0), u.clk, u.probeSpec(), &u.ptx)
}

// probeSpec is a download's latency probes as a stream of their own.
func (u *udpRun) probeSpec() flow.UDPSpec {
	return flow.UDPSpec{Cookie: u.s.accept.Cookie, Size: u.cfg.Size, Duration: u.cfg.Duration,
		RateBps: u.cfg.RateBps / int64(u.cfg.EchoEvery), EchoEvery: 1}
}

// maxProbes is how many latency probes the test schedules: a reply
// numbered beyond them answers no probe of this test.
func (u *udpRun) maxProbes() uint64 {
	switch {
	case u.cfg.EchoEvery <= 0:
		return 0
	case u.cfg.Reverse:
		return u.probeSpec().Scheduled()
	}
	return u.spec().Scheduled() / uint64(u.cfg.EchoEvery) // sequence numbers EchoEvery−1, 2·EchoEvery−1, … below it
}

func (u *udpRun) measure(ctx context.Context) (*result.UDP, error) {
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	workDone := make(chan struct{})
	// The client's CPU over its own work: while it sends (up), or until
	// the test ends (down, where the responder's figure is the sender's).
	load := cpuload.Now()
	var loadEnd cpuload.Mark
	var probesDone sync.WaitGroup
	switch {
	case u.cfg.Reverse:
		if u.cfg.EchoEvery > 0 {
			probesDone.Go(func() { u.sendProbes(wctx) })
		}
		go func() { defer close(workDone); u.receive(wctx); loadEnd = cpuload.Now() }()
	default:
		if u.cfg.EchoEvery > 0 {
			probesDone.Go(func() { u.receive(wctx) })
		}
		go func() {
			defer close(workDone)
			flow.SendUDP(wctx, flow.NewUDPOut(u.uc, netip.AddrPort{}, 0), u.clk, u.spec(), &u.tx)
			loadEnd = cpuload.Now()
		}()
	}
	defer probesDone.Wait()
	msgs := make(chan serverMsg, 16)
	go u.s.readLoop(msgs)
	tick := time.NewTimer(u.cfg.Interval)
	defer tick.Stop()
	next := u.cfg.Interval
	endAt := time.NewTimer(u.cfg.Duration + u.cfg.Drain)
	defer endAt.Stop()
	hard := time.NewTimer(u.cfg.Duration + u.cfg.Drain + resultGrace)
	defer hard.Stop()

	var final *wire.Result
	partial := ""
	for final == nil && partial == "" {
		select {
		case <-tick.C:
			if u.cfg.Reverse {
				st := u.rx.Stats(0)
				u.addInterval(st)
			}
			next += u.cfg.Interval
			tick.Reset(max(0, next-u.clk.Since()))
		case m, ok := <-msgs:
			switch {
			case !ok:
				partial = "control connection closed"
			case m.err != nil:
				partial = m.err.Error()
			case m.interval != nil && !u.cfg.Reverse && m.interval.UDP != nil:
				u.addInterval(*m.interval.UDP)
			case m.result != nil && u.cfg.Reverse:
				// the responder finished sending; keep counting for Drain
				final = m.result
				select {
				case <-time.After(u.cfg.Drain):
				case <-ctx.Done():
					partial = "interrupted"
				}
			case m.result != nil:
				final = m.result
			}
		case <-endAt.C:
			if !u.cfg.Reverse { // sent and drained: ask for the receiver's count
				_ = wire.Encode(u.s.ctrl, wire.TypeStop, wire.Stop{Reason: "done"})
			}
		case <-ctx.Done():
			partial = "interrupted"
		case <-hard.C:
			partial = "no result from the responder in time"
		}
	}
	if partial != "" && final == nil {
		final = u.s.stopAndWait(partial, msgs)
	}
	wcancel()
	<-workDone
	probesDone.Wait()
	res := &result.UDP{Intervals: append([]result.UDPInterval{}, u.intervals...), Summary: u.summary(final)}
	res.Summary.ClientCPU = cpuload.Between(load, loadEnd) // written before workDone closed
	if final != nil {
		res.Summary.ServerCPU = final.Load
	}
	if partial != "" {
		res.Summary.Partial, res.Summary.PartialReason = true, partial
		return res, fmt.Errorf("%w: %s", result.ErrPartial, partial)
	}
	return res, nil
}

// addInterval appends the difference between cumulative receiver figures
// and the previous interval's.
func (u *udpRun) addInterval(cur wire.UDPStats) {
	secs := u.cfg.Interval.Seconds()
	k := len(u.intervals)
	iv := result.UDPInterval{StartS: float64(k) * secs, EndS: float64(k+1) * secs,
		Packets: cur.Packets - u.prev.Packets, Bytes: cur.Bytes - u.prev.Bytes,
		Lost: cur.Lost - min(u.prev.Lost, cur.Lost), JitterUs: float64(cur.JitterNanos) / 1e3}
	iv.ThroughputBps = float64(iv.Bytes) * 8 / secs
	u.prev = cur
	u.intervals = append(u.intervals, iv)
	if u.progress != nil {
		u.progress(iv)
	}
}

// spec is the client's stream (an upload).
func (u *udpRun) spec() flow.UDPSpec {
	return flow.UDPSpec{Cookie: u.s.accept.Cookie, RateBps: u.cfg.RateBps, Size: u.cfg.Size, Duration: u.cfg.Duration, EchoEvery: u.cfg.EchoEvery}
}

func (u *udpRun) summary(final *wire.Result) result.UDPSummary {
	sum := result.UDPSummary{SizeBytes: u.cfg.Size, TargetRateBps: u.cfg.RateBps, Direction: vocab.Up}
	var rx wire.UDPStats
	if u.cfg.Reverse {
		sum.Direction = vocab.Down
		if final != nil && final.UDP != nil {
			sum.SentPackets, sum.SentBytes = final.UDP.SentPackets, final.UDP.SentBytes
			sum.SenderLate, sum.SenderMaxSlipUs = final.UDP.SentLate, float64(final.UDP.SentSlipNs)/1e3
		}
		rx = u.rx.Stats(sum.SentPackets)
		rx.LocalDrops = u.drops.Load()
	} else {
		sum.SentPackets, sum.SentBytes = u.tx.Packets.Load(), u.tx.Bytes.Load()
		sum.SenderLate, sum.SenderMaxSlipUs = u.tx.Late.Load(), float64(u.tx.MaxSlip.Load())/1e3
		if final != nil && final.UDP != nil {
			rx = *final.UDP
		}
		// trailing losses: what was sent but never reached the receiver
		if rx.Unique <= sum.SentPackets {
			rx.Lost = sum.SentPackets - rx.Unique
		}
	}
	sum.SenderRateBps = float64(sum.SentBytes) * 8 / u.cfg.Duration.Seconds()
	sum.GeneratorLimited = flow.GeneratorLimited(sum.SentPackets, u.spec().Scheduled(), sum.SenderLate)
	if u.cfg.EchoEvery > 0 {
		probes := u.tx.Probes.Load()
		if u.cfg.Reverse {
			probes = u.ptx.Probes.Load()
		}
		if l := u.lat.Summary(probes); l != nil {
			sum.Latency = &result.UDPLatency{Probes: l.Probes, Replies: l.Replies, Delays: l.Delays, IPDVUs: l.IPDVUs}
		}
	}
	sum.RecvPackets, sum.RecvBytes = rx.Packets, rx.Bytes
	sum.Lost, sum.Duplicates, sum.Reordered = rx.Lost, rx.Duplicates, rx.Reordered
	sum.ReceiverDrops = min(rx.LocalDrops, sum.Lost)
	sum.JitterUs = float64(rx.JitterNanos) / 1e3
	if sum.SentPackets > 0 {
		sum.LossPct = float64(sum.Lost) / float64(sum.SentPackets) * 100
	}
	sum.IntervalS = float64(rx.LastRxNs-rx.FirstRxNs) / 1e9
	if sum.IntervalS > 0 && rx.Unique > 1 {
		// n packets arriving over a span carry n−1 packets' worth of
		// spacing: rate = (n−1) × size × 8 / span.
		per := float64(rx.Bytes) / float64(rx.Packets)
		sum.ReceiverRateBps = (float64(rx.Packets) - 1) * per * 8 / sum.IntervalS
		sum.ReceiverIPBps = (float64(rx.Packets) - 1) * (per + float64(frame.IPUDP(u.s.remote.IP.To4() == nil))) * 8 / sum.IntervalS
	}
	return sum
}
