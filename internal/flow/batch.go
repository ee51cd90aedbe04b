package flow

// Batched UDP I/O: many datagrams per system call (sendmmsg, recvmmsg)
// through golang.org/x/net's ipv4 and ipv6 PacketConn. At 64-byte frames
// a datagram's own work is a fraction of a system call's, so one call per
// datagram caps a core at a few hundred thousand datagrams per second.

import (
	"net"
	"net/netip"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

	"github.com/fullpipe/fullpipe/internal/sockopt"
)

// MaxBatch is the most datagrams one sendmmsg or recvmmsg carries.
const MaxBatch = 64

// batchConn is what ipv4.PacketConn and ipv6.PacketConn have in common.
type batchConn interface {
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
}

func newBatchConn(c *net.UDPConn) batchConn {
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
	bc  batchConn
	to  net.Addr // nil: the connected peer
	oob []byte
	ms  []ipv4.Message
}

// NewUDPOut is a sender on c, to to when valid (else c's connected
// peer), marking each datagram with dscp when it is not 0.
func NewUDPOut(c *net.UDPConn, to netip.AddrPort, dscp int) *UDPOut {
	o := &UDPOut{bc: newBatchConn(c), ms: make([]ipv4.Message, MaxBatch)}
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
// unsent datagram's (bufs[n]).
func (o *UDPOut) Write(bufs [][]byte) (int, error) {
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

// UDPIn reads batches of datagrams from one socket, each with its
// control messages (receive stamps, drops, TOS).
type UDPIn struct {
	bc batchConn
	Ms []ipv4.Message // after Read: Ms[i].Buffers[0][:Ms[i].N], Ms[i].OOB[:Ms[i].NN], Ms[i].Addr
}

// NewUDPIn reads up to n datagrams per call into buffers of bufLen
// bytes, with oobLen bytes of control messages each.
func NewUDPIn(c *net.UDPConn, n, bufLen, oobLen int) *UDPIn {
	in := &UDPIn{bc: newBatchConn(c), Ms: make([]ipv4.Message, n)}
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
