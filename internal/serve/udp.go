package serve

// The UDP side: one goroutine reads the socket and hands each datagram to
// handlePacket, a function of (bytes, source, receive time) with no socket
// in it, so the fuzz target and the attack tests drive it directly.

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/fullpipe/fullpipe/internal/flow"
	"github.com/fullpipe/fullpipe/internal/sockopt"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// udpBufLen is the read buffer: the largest datagram, which also leaves
// room for an MTU reply (≤ wire.MaxMTUReply) built in place.
const udpBufLen = 65536

// udpRecvBuffer is the UDP socket's receive buffer, 16 MiB: 13 ms of
// 10 Gbit/s, or half of the longest train (DefaultMaxTrainBytes) waiting
// for its reader.
const udpRecvBuffer = 16 << 20

// udpBatch is how many datagrams routineUDP reads per system call
// (recvmmsg): 32 × 64 KiB of buffers.
const udpBatch = 32

// routineUDP reads the UDP socket in batches and answers through
// handlePacket, the replies of a batch in one system call (sendmmsg). It
// ends when the socket is closed; a panic in one datagram's handling is
// logged and the loop goes on.
func (s *Server) routineUDP(ctx context.Context) {
	defer s.wg.Done()
	in := flow.NewUDPIn(s.udp, udpBatch, udpBufLen, sockopt.RxStampSpace)
	out := newReplies(s.udp)
	scratch := make([]byte, udpBufLen)
	for {
		n, err := in.Read()
		mono := time.Since(s.born).Nanoseconds()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		for i := range n {
			s.readDatagrams(in, i, mono, scratch, out)
		}
		out.flush()
	}
}

// readDatagrams handles message i of in's last read: one datagram,
// answered from its own buffer, or several the kernel coalesced (UDP
// GRO), each copied to scratch first so that a reply built in place
// overwrites none of the others, and each reply copied out.
func (s *Server) readDatagrams(in *flow.UDPIn, i int, mono int64, scratch []byte, out *replies) {
	b, oob := in.Buf(i)
	rx := rxInfo{mono: mono}
	st := sockopt.ParseRxStamp(oob)
	if st.Stamped {
		rx.kernel = st.At.UnixNano()
		rx.drops, rx.counted = st.Drops, st.Counted
	}
	from := in.From(i)
	if st.GSOSize <= 0 || st.GSOSize >= len(b) {
		if reply, tos := s.safePacket(b[:cap(b)], len(b), from, rx); reply != nil {
			out.add(reply, tos, from)
		}
		return
	}
	flow.Segments(b, st.GSOSize, func(seg []byte) {
		n := copy(scratch, seg)
		if reply, tos := s.safePacket(scratch, n, from, rx); reply != nil {
			out.add(append([]byte(nil), reply...), tos, from)
		}
	})
}

// replies collects a batch's replies for one sendmmsg.
type replies struct {
	bc flow.BatchConn
	ms []ipv4.Message
}

func newReplies(c *net.UDPConn) *replies { return &replies{bc: flow.NewBatchConn(c)} }

func (r *replies) add(b, oob []byte, to netip.AddrPort) {
	r.ms = append(r.ms, ipv4.Message{Buffers: [][]byte{b}, OOB: oob, Addr: net.UDPAddrFromAddrPort(to)})
}

// flush sends the replies collected, best effort (a reply the kernel
// refuses is dropped, as a lost datagram would be).
func (r *replies) flush() {
	for sent := 0; sent < len(r.ms); {
		n, err := r.bc.WriteBatch(r.ms[sent:], 0)
		sent += max(n, 0)
		if err != nil {
			sent++
		} else if n <= 0 {
			break
		}
	}
	clear(r.ms)
	r.ms = r.ms[:0]
}

// safePacket is handlePacket with a panic turned into a log line.
func (s *Server) safePacket(buf []byte, n int, from netip.AddrPort, rx rxInfo) (reply, tos []byte) {
	defer s.survive("udp packet", from.String())
	return s.handlePacket(buf, n, from, rx)
}

// handlePacket handles the datagram buf[:n] received from from at recvNs
// (ns since the responder started) and returns the reply to send to from,
// or nil, with the control message that marks it with the session's DSCP
// (nil for none). The reply is built in buf (cap(buf) ≥ wire.MaxMTUReply). Only a
// session's own client gets answers: its control connection's address and
// one of the source ports it registered (the first UDPPorts seen); a reply
// is never larger than the datagram, except an MTU session's sized echo
// (≤ wire.MaxMTUReply), and each is charged to the session's echo budget.
func (s *Server) handlePacket(buf []byte, n int, from netip.AddrPort, rx rxInfo) (reply, tos []byte) {
	h, err := wire.ParseUDP(buf[:n])
	if err != nil {
		return nil, nil
	}
	s.mu.Lock()
	ss := s.sessions[h.Cookie]
	if h.Compact {
		ss = s.tags[h.Tag]
	}
	s.mu.Unlock()
	from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	if ss == nil || from.Addr() != ss.peerIP || !ss.registerPort(from, h.Type == wire.UDPHello) {
		return nil, nil
	}
	switch h.Type {
	case wire.UDPEcho:
		if ss.udpRx != nil {
			ss.udpData(h, n, rx) // a latency probe inside an upload's stream is data too
		}
		reply := echoLen(h, n, ss.req.MTU)
		if reply == 0 || reply > cap(buf) || !ss.chargeEcho(reply) {
			return nil, nil
		}
		out := buf[:reply]
		clear(out[min(n, reply):]) // padding, not a previous datagram's bytes
		wire.SetUDPType(out, h, wire.UDPEchoReply)
		switch h.EchoMode {
		case wire.EchoStamped:
			wire.PutEchoStamp(out, rx.mono)
		case wire.EchoHeld:
			wire.PutEchoHold(out, s.held(rx))
		}
		return out, ss.tos
	case wire.UDPData:
		if ss.train != nil {
			ss.trainData(h, rx)
		} else {
			ss.udpData(h, n, rx)
		}
	}
	return nil, nil
}

// held is how long the responder has held a datagram received as rx:
// from the kernel's receive stamp (both on the wall clock), or without
// one from its read (on the responder's monotonic clock), to now.
func (s *Server) held(rx rxInfo) int64 {
	if rx.kernel > 0 {
		return max(0, time.Now().UnixNano()-rx.kernel)
	}
	return max(0, time.Since(s.born).Nanoseconds()-rx.mono)
}

// echoLen is the size of the reply to an echo of n bytes, 0 for none.
func echoLen(h wire.UDPHeader, n int, mtu bool) int {
	if h.Compact {
		return n // always mirrored
	}
	switch h.EchoMode {
	case wire.EchoSmall:
		return wire.UDPHeaderLen
	case wire.EchoSized:
		want := max(wire.UDPHeaderLen, int(h.EchoSize))
		if mtu {
			return min(want, wire.MaxMTUReply)
		}
		return min(want, n)
	case wire.EchoStamped, wire.EchoHeld:
		if n < wire.EchoStampLen {
			return 0 // the stamp would make the reply larger than the probe
		}
		return n
	}
	return n
}

// registerPort reports whether from may talk to the session: a port
// already registered, or a new one while the session has room for it
// (the first hello's port also becomes the reverse UDP stream's peer).
func (ss *session) registerPort(from netip.AddrPort, hello bool) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, p := range ss.udpPorts {
		if p == from {
			if hello && !ss.udpPeer.IsValid() {
				ss.udpPeer = from
				ss.notify()
			}
			return true
		}
	}
	if len(ss.udpPorts) >= max(1, ss.req.UDPPorts) {
		ss.foreignPackets++
		return false
	}
	ss.udpPorts = append(ss.udpPorts, from)
	if hello && !ss.udpPeer.IsValid() {
		ss.udpPeer = from
		ss.notify()
	}
	return true
}

// logDrops logs, at the session's end, the datagrams it ignored: echoes
// past its budget and datagrams from ports it had not registered.
func (ss *session) logDrops() {
	ss.mu.Lock()
	refused, foreign := ss.echoRefused, ss.foreignPackets
	ss.mu.Unlock()
	if refused > 0 || foreign > 0 {
		ss.log.Info("ignored datagrams", "echoes_past_budget", refused, "from_other_ports", foreign)
	}
}

// chargeEcho takes one reply of n bytes from the session's echo budget;
// false (and the reply is not sent) when the budget is spent.
func (ss *session) chargeEcho(n int) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.echoPackets <= 0 || ss.echoBytes < int64(n) {
		ss.echoRefused++
		return false
	}
	ss.echoPackets--
	ss.echoBytes -= int64(n)
	return true
}
