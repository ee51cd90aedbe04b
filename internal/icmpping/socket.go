package icmpping

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"

	"github.com/fullpipe/fullpipe/internal/sockopt"
)

// recvBuffer is the sockets' receive buffer: 4 MiB holds about 100 ms of
// replies at the highest rate (20,000/s, up to 2 KiB of kernel memory
// each), so a receiver the scheduler delays loses none. Linux grants
// less without privilege (net.core.rmem_max).
const recvBuffer = 4 << 20

// errTimeout is a read whose deadline passed.
var errTimeout = errors.New("icmpping: read deadline")

// readErr maps a deadline to errTimeout.
func readErr(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return errTimeout
	}
	return err
}

// echoConn is an ICMP socket: a ping socket (the kernel sets the echo
// identifier to the socket's port and hands it only its own replies) or
// a raw one (every ICMP message of the host: replies are told by the
// identifier and the token).
type echoConn struct {
	pc       net.PacketConn
	rc       syscall.RawConn
	raw, v6  bool
	id       int
	dst      net.Addr
	buf, oob []byte
}

func openEcho(dst netip.Addr) (*echoConn, error) {
	family, proto := unix.AF_INET, unix.IPPROTO_ICMP
	if dst.Is6() {
		family, proto = unix.AF_INET6, unix.IPPROTO_ICMPV6
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, proto)
	raw := false
	if err != nil {
		var rawErr error
		fd, rawErr = unix.Socket(family, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, proto)
		if rawErr != nil {
			return nil, fmt.Errorf("icmpping: no ICMP socket: a ping socket is refused (%w: add this group to net.ipv4.ping_group_range) and a raw one too (%w: run as root or with CAP_NET_RAW)", err, rawErr)
		}
		raw = true
	}
	f := os.NewFile(uintptr(fd), "icmp")
	pc, err := net.FilePacketConn(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("icmpping: %w", err)
	}
	c := &echoConn{pc: pc, raw: raw, v6: dst.Is6(), buf: make([]byte, 65536), oob: make([]byte, sockopt.RxStampSpace)}
	var idb [2]byte
	_, _ = randRead(idb[:])
	c.id = int(binary.BigEndian.Uint16(idb[:]))
	if raw {
		c.dst = &net.IPAddr{IP: dst.AsSlice()}
	} else {
		c.dst = &net.UDPAddr{IP: dst.AsSlice()}
	}
	sc, ok := pc.(syscall.Conn)
	if !ok {
		pc.Close()
		return nil, fmt.Errorf("icmpping: %T has no raw socket", pc)
	}
	if c.rc, err = sc.SyscallConn(); err == nil {
		err = sockopt.EnableRxStamps(c.rc)
	}
	if err == nil {
		_, err = sockopt.SetRecvBuffer(c.rc, recvBuffer)
	}
	if err != nil {
		pc.Close()
		return nil, fmt.Errorf("icmpping: %w", err)
	}
	return c, nil
}

func (c *echoConn) kind() string {
	if c.raw {
		return "raw"
	}
	return "ping"
}

func (c *echoConn) close() error { return c.pc.Close() }

// The echo's types and protocol number in each family. On IPv6 the
// kernel computes the checksum (its pseudo-header needs the addresses).
func (c *echoConn) types() (request, reply icmp.Type, proto int) {
	if c.v6 {
		return ipv6.ICMPTypeEchoRequest, ipv6.ICMPTypeEchoReply, 58
	}
	return ipv4.ICMPTypeEcho, ipv4.ICMPTypeEchoReply, 1
}

func (c *echoConn) send(payload []byte, seq uint32) error {
	request, _, _ := c.types()
	m := icmp.Message{Type: request, Body: &icmp.Echo{ID: c.id, Seq: int(seq & 0xffff), Data: payload}}
	b, err := m.Marshal(nil)
	if err == nil {
		_, err = c.pc.WriteTo(b, c.dst)
	}
	return err
}

func (c *echoConn) read(token []byte, deadline time.Time, _ *Run) (reply, error) {
	if err := c.pc.SetReadDeadline(deadline); err != nil {
		return reply{}, err
	}
	for {
		n, oobn, err := c.readMsg()
		if err != nil {
			return reply{}, readErr(err)
		}
		mono := time.Now()
		b := c.buf[:n]
		if c.raw && !c.v6 && n >= 20 && b[0]>>4 == 4 { // a raw IPv4 socket's datagram starts with the IP header
			b = b[int(b[0]&0x0f)*4:]
		}
		_, want, proto := c.types()
		m, err := icmp.ParseMessage(proto, b)
		if err != nil || m.Type != want {
			continue
		}
		e, ok := m.Body.(*icmp.Echo)
		if !ok || (c.raw && e.ID != c.id) || len(e.Data) < headerLen || !bytes.Equal(e.Data[:8], token) {
			continue
		}
		seq := binary.BigEndian.Uint32(e.Data[8:12])
		if int(seq&0xffff) != e.Seq {
			continue
		}
		st := sockopt.ParseRxStamp(c.oob[:oobn])
		at := mono
		if st.Stamped {
			at = st.At
		}
		return reply{seq: seq, at: at, mono: mono, stamped: st.Stamped, drops: st.Drops}, nil
	}
}

func (c *echoConn) readMsg() (n, oobn int, err error) {
	switch pc := c.pc.(type) {
	case *net.UDPConn:
		n, oobn, _, _, err = pc.ReadMsgUDP(c.buf, c.oob)
	case *net.IPConn:
		n, oobn, _, _, err = pc.ReadMsgIP(c.buf, c.oob)
	default:
		err = fmt.Errorf("icmpping: %T", pc)
	}
	return n, oobn, err
}

// unreachConn is a connected UDP socket whose ICMP errors come back on
// its error queue (IP_RECVERR), each with the quoted datagram's payload.
type unreachConn struct {
	c        *net.UDPConn
	v6       bool
	rc       syscall.RawConn
	buf, oob []byte
}

func openUnreach(dst netip.Addr, port int) (*unreachConn, error) {
	network := "udp4"
	if dst.Is6() {
		network = "udp6"
	}
	c, err := net.DialUDP(network, nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(dst, uint16(port))))
	if err != nil {
		return nil, fmt.Errorf("icmpping: %w", err)
	}
	u := &unreachConn{c: c, v6: dst.Is6(), buf: make([]byte, 65536), oob: make([]byte, 512)}
	if u.rc, err = c.SyscallConn(); err == nil {
		err = sockopt.SetRecvErr(u.rc, u.v6)
	}
	if err == nil {
		err = sockopt.EnableRxStamps(u.rc)
	}
	if err == nil {
		_, err = sockopt.SetRecvBuffer(u.rc, recvBuffer) // the error queue counts against it too
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("icmpping: %w", err)
	}
	return u, nil
}

func (u *unreachConn) kind() string { return "udp" }
func (u *unreachConn) close() error { return u.c.Close() }

// send writes one datagram. A connected UDP socket's send fails with
// ECONNREFUSED once for each ICMP error that came back meanwhile (the
// error is reported and cleared): the datagram was not sent, so it is
// sent again, at most twice more.
func (u *unreachConn) send(payload []byte, _ uint32) error {
	var err error
	for range 3 {
		if _, err = u.c.Write(payload); !errors.Is(err, syscall.ECONNREFUSED) {
			break
		}
	}
	return err
}

// The ICMP error a socket's error queue holds (linux/errqueue.h), and
// port unreachable in each family (ICMP 3/3, ICMPv6 1/4).
const (
	eeOriginICMP     = 2
	eeOriginICMP6    = 3
	icmpDstUnreach   = 3
	icmpPortUnreach  = 3
	icmp6DstUnreach  = 1
	icmp6PortUnreach = 4
	sockExtendedErrN = 16
)

func (u *unreachConn) read(token []byte, deadline time.Time, r *Run) (reply, error) {
	if err := u.c.SetReadDeadline(deadline); err != nil {
		return reply{}, err
	}
	for {
		var n, oobn int
		var rerr error
		err := u.rc.Read(func(fd uintptr) bool {
			n, oobn, _, _, rerr = unix.Recvmsg(int(fd), u.buf, u.oob, unix.MSG_ERRQUEUE)
			return rerr != unix.EAGAIN
		})
		if err == nil {
			err = rerr
		}
		if err != nil {
			return reply{}, readErr(err)
		}
		mono := time.Now()
		origin, typ, code := queuedError(u.oob[:oobn])
		wantOrigin, wantType, wantCode := uint8(eeOriginICMP), uint8(icmpDstUnreach), uint8(icmpPortUnreach)
		if u.v6 {
			wantOrigin, wantType, wantCode = eeOriginICMP6, icmp6DstUnreach, icmp6PortUnreach
		}
		if origin != wantOrigin {
			continue // a local error (no route, message too long)
		}
		if typ != wantType || code != wantCode {
			r.OtherICMP++
			continue
		}
		if n < headerLen || !bytes.Equal(u.buf[:8], token) {
			r.Unmatched++
			continue
		}
		st := sockopt.ParseRxStamp(u.oob[:oobn])
		at := mono
		if st.Stamped {
			at = st.At
		}
		return reply{seq: binary.BigEndian.Uint32(u.buf[8:12]), at: at, mono: mono, stamped: st.Stamped}, nil
	}
}

// queuedError is the origin, ICMP type and code of an error-queue
// message's struct sock_extended_err.
func queuedError(oob []byte) (origin, typ, code uint8) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, 0, 0
	}
	for _, m := range msgs {
		v4 := m.Header.Level == unix.SOL_IP && m.Header.Type == unix.IP_RECVERR
		v6 := m.Header.Level == unix.SOL_IPV6 && m.Header.Type == unix.IPV6_RECVERR
		if (v4 || v6) && len(m.Data) >= sockExtendedErrN {
			return m.Data[4], m.Data[5], m.Data[6]
		}
	}
	return 0, 0, 0
}
