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

// routineUDP reads the UDP socket and answers through handlePacket. It
// ends when the socket is closed; a panic in one datagram's handling is
// logged and the loop goes on.
func (s *Server) routineUDP(ctx context.Context) {
	defer s.wg.Done()
	buf, oob := make([]byte, udpBufLen), make([]byte, sockopt.RxStampSpace)
	for {
		n, oobn, _, from, err := s.udp.ReadMsgUDPAddrPort(buf, oob)
		rx := rxInfo{mono: time.Since(s.born).Nanoseconds()}
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if st := sockopt.ParseRxStamp(oob[:oobn]); st.Stamped {
			rx.kernel = st.At.UnixNano()
			rx.drops, rx.counted = st.Drops, st.Counted
		}
		if reply := s.safePacket(buf, n, from, rx); reply != nil {
			_, _ = s.udp.WriteToUDPAddrPort(reply, from)
		}
	}
}

// safePacket is handlePacket with a panic turned into a log line.
func (s *Server) safePacket(buf []byte, n int, from netip.AddrPort, rx rxInfo) (reply []byte) {
	defer s.survive("udp packet", from.String())
	return s.handlePacket(buf, n, from, rx)
}

// handlePacket handles the datagram buf[:n] received from from at recvNs
// (ns since the responder started) and returns the reply to send to from,
// or nil. The reply is built in buf (cap(buf) ≥ wire.MaxMTUReply). Only a
// session's own client gets answers: its control connection's address and
// one of the source ports it registered (the first UDPPorts seen); a reply
// is never larger than the datagram, except an MTU session's sized echo
// (≤ wire.MaxMTUReply), and each is charged to the session's echo budget.
func (s *Server) handlePacket(buf []byte, n int, from netip.AddrPort, rx rxInfo) []byte {
	h, err := wire.ParseUDP(buf[:n])
	if err != nil {
		return nil
	}
	s.mu.Lock()
	ss := s.sessions[h.Cookie]
	if h.Compact {
		ss = s.tags[h.Tag]
	}
	s.mu.Unlock()
	from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	if ss == nil || from.Addr() != ss.peerIP || !ss.registerPort(from, h.Type == wire.UDPHello) {
		return nil
	}
	switch h.Type {
	case wire.UDPEcho:
		reply := echoLen(h, n, ss.req.MTU)
		if reply == 0 || reply > cap(buf) || !ss.chargeEcho(reply) {
			return nil
		}
		out := buf[:reply]
		clear(out[min(n, reply):]) // padding, not a previous datagram's bytes
		wire.SetUDPType(out, h, wire.UDPEchoReply)
		if h.EchoMode == wire.EchoStamped {
			wire.PutEchoStamp(out, rx.mono)
		}
		return out
	case wire.UDPData:
		if ss.train != nil {
			ss.trainData(h, rx)
		} else {
			ss.udpData(h, n)
		}
	}
	return nil
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
	case wire.EchoStamped:
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
