package flow

// Batched UDP I/O: many datagrams per system call (sendmmsg, recvmmsg)
// through golang.org/x/net's ipv4 and ipv6 PacketConn. At 64-byte frames
// a datagram's own work is a fraction of a system call's, so one call per
// datagram caps a core at a few hundred thousand datagrams per second.

import (
	"errors"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

	"github.com/fullpipe/fullpipe/internal/sockopt"
)

// MaxBatch is the most datagrams one sendmmsg or recvmmsg carries.
const MaxBatch = 64

// BatchConn is what ipv4.PacketConn and ipv6.PacketConn have in common:
// batches of datagrams, each with its own address and control messages.
type BatchConn interface {
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
}

// NewBatchConn is c's batch I/O, in c's family.
func NewBatchConn(c *net.UDPConn) BatchConn {
	if la, ok := c.LocalAddr().(*net.UDPAddr); ok && la.IP.To4() == nil {
		return ipv6.NewPacketConn(c)
	}
	return ipv4.NewPacketConn(c)
}

// UDPOut sends batches of datagrams on one socket: to its connected peer,
// or to one address (To), each marked with a DSCP (for a shared socket,
// as a control message per datagram; a socket of its own takes
// sockopt.SetDSCP instead).
type UDPOut struct {
	c   *net.UDPConn
	bc  BatchConn
	to  net.Addr // nil: the connected peer
	oob []byte
	ms  []ipv4.Message
	// UDP GSO: equal-sized datagrams leave as one buffer in one sendmsg
	// (UDP_SEGMENT) while the kernel takes it; off after its first
	// refusal (a device without checksum offload, an old kernel).
	gso    bool
	gsoBuf []byte
	gsoOOB []byte
	gsoLen int // the segment size gsoOOB names
}

// NewUDPOut is a sender on c, to to when valid (else c's connected
// peer), marking each datagram with dscp when it is not 0.
func NewUDPOut(c *net.UDPConn, to netip.AddrPort, dscp int) *UDPOut {
	o := &UDPOut{c: c, bc: NewBatchConn(c), ms: make([]ipv4.Message, MaxBatch), gso: true}
	if to.IsValid() {
		o.to = net.UDPAddrFromAddrPort(to)
		o.oob = sockopt.TOSCmsg(dscp, !to.Addr().Unmap().Is4())
	}
	for i := range o.ms {
		o.ms[i].Buffers, o.ms[i].Addr, o.ms[i].OOB = make([][]byte, 1), o.to, o.oob
	}
	return o
}

// Write sends bufs (at most MaxBatch) in one system call as far as the
// kernel takes them, and returns how many it sent; an error is the first
// unsent datagram's (bufs[n]). Datagrams of one size go as one UDP GSO
// buffer (a 64-datagram batch costs the stack about what one datagram
// does), else through sendmmsg.
func (o *UDPOut) Write(bufs [][]byte) (int, error) {
	if o.gso && len(bufs) > 1 && len(bufs[0]) <= maxGSOBytes/2 {
		// as many GSO buffers as the datagrams' size needs (44 of
		// 1472-byte datagrams fit in one)
		per := maxGSOBytes / len(bufs[0])
		sent := 0
		for sent < len(bufs) {
			n, ok, err := o.writeGSO(bufs[sent:min(sent+per, len(bufs))])
			if !ok {
				break // not for GSO: sendmmsg below
			}
			sent += n
			if err != nil {
				return sent, err
			}
		}
		if sent > 0 {
			return sent, nil // all, or the rest on the next call
		}
	}
	ms := o.ms[:len(bufs)]
	for i, b := range bufs {
		ms[i].Buffers[0] = b
	}
	sent := 0
	for sent < len(ms) {
		n, err := o.bc.WriteBatch(ms[sent:], 0)
		sent += max(n, 0)
		if err != nil {
			return sent, err
		}
		if n <= 0 {
			break
		}
	}
	return sent, nil
}

// maxGSOBytes bounds one GSO buffer: a UDP datagram's largest payload.
const maxGSOBytes = 65507

// writeGSO sends bufs, all of one size, as one UDP GSO buffer; ok is
// false (and GSO off for good) when the kernel refuses it, or when bufs
// do not suit it, and nothing was sent.
func (o *UDPOut) writeGSO(bufs [][]byte) (n int, ok bool, err error) {
	size := len(bufs[0])
	total := size * len(bufs)
	if total > maxGSOBytes {
		return 0, false, nil
	}
	for _, b := range bufs {
		if len(b) != size {
			return 0, false, nil
		}
	}
	if o.gsoLen != size {
		o.gsoOOB = append(sockopt.SegmentCmsg(size), o.oob...)
		o.gsoLen = size
	}
	if cap(o.gsoBuf) < total {
		o.gsoBuf = make([]byte, maxGSOBytes)
	}
	buf := o.gsoBuf[:0]
	for _, b := range bufs {
		buf = append(buf, b...)
	}
	if o.to != nil {
		_, _, err = o.c.WriteMsgUDP(buf, o.gsoOOB, o.to.(*net.UDPAddr))
	} else {
		_, _, err = o.c.WriteMsgUDP(buf, o.gsoOOB, nil)
	}
	switch {
	case err == nil:
		return len(bufs), true, nil
	case errors.Is(err, syscall.EIO), errors.Is(err, syscall.EINVAL), errors.Is(err, syscall.EMSGSIZE),
		errors.Is(err, syscall.ENOPROTOOPT), errors.Is(err, syscall.EOPNOTSUPP):
		o.gso = false // no GSO here: sendmmsg from now on
		return 0, false, nil
	}
	return 0, true, err // a transient error (an ICMP's ECONNREFUSED, ENOBUFS): the buffer is not sent
}

// UDPIn reads batches of datagrams from one socket, each with its
// control messages (receive stamps, drops, TOS).
type UDPIn struct {
	bc BatchConn
	Ms []ipv4.Message // after Read: Ms[i].Buffers[0][:Ms[i].N], Ms[i].OOB[:Ms[i].NN], Ms[i].Addr
}

// NewUDPIn reads up to n datagrams per call into buffers of bufLen
// bytes, with oobLen bytes of control messages each.
func NewUDPIn(c *net.UDPConn, n, bufLen, oobLen int) *UDPIn {
	in := &UDPIn{bc: NewBatchConn(c), Ms: make([]ipv4.Message, n)}
	for i := range in.Ms {
		in.Ms[i].Buffers = [][]byte{make([]byte, bufLen)}
		in.Ms[i].OOB = make([]byte, oobLen)
	}
	return in
}

// Read waits for at least one datagram and returns how many it read.
func (in *UDPIn) Read() (int, error) {
	for i := range in.Ms {
		in.Ms[i].OOB = in.Ms[i].OOB[:cap(in.Ms[i].OOB)]
	}
	return in.bc.ReadBatch(in.Ms, 0)
}

// Buf is datagram i of the last Read, and its control messages.
func (in *UDPIn) Buf(i int) (b, oob []byte) {
	m := &in.Ms[i]
	return m.Buffers[0][:m.N], m.OOB[:m.NN]
}

// From is the source of datagram i of the last Read.
func (in *UDPIn) From(i int) netip.AddrPort {
	if a, ok := in.Ms[i].Addr.(*net.UDPAddr); ok {
		return a.AddrPort()
	}
	return netip.AddrPort{}
}

// Segments calls f with each datagram of b, a buffer of one datagram or,
// when gso > 0, of datagrams of gso bytes each (the last may be shorter)
// that the kernel coalesced (sockopt.SetUDPGRO).
func Segments(b []byte, gso int, f func(seg []byte)) {
	if gso <= 0 || gso >= len(b) {
		f(b)
		return
	}
	for off := 0; off < len(b); off += gso {
		f(b[off:min(off+gso, len(b))])
	}
}
