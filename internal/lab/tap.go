package lab

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// A TUN read says when the forwarder read a packet, not when the packet
// got there: beside a busy core the reader may wait for a core, or fall
// behind a fast sender, while the packets queue in the device (measured:
// 1.3 ms median, 10 ms at the 90th percentile, for the trains of
// scenario 2 beside one busy loop on 2 cores). The emulated path then
// receives them late and bunched, its queue drains meanwhile, and the
// receiver reads a slower link than the lab emulates, in a run whose
// writes were all punctual. The tap says how long each packet waited:
// a packet socket on the device takes the kernel's copy of each packet
// the kernel sends into it (PACKET_OUTGOING), stamped as it enters the
// device, into a ring the reader reads without a system call.

// Tap ring geometry: tapFrame bytes per copy (the frame header, the
// socket address and 96 bytes of the packet: its IP header and the
// first bytes of its transport header), tapFrames of them, twice the
// device's queue (a copy waits for its packet to be read).
const (
	tapFrame  = 256
	tapFrames = 2 * tunQueue
	tapSnap   = 96
	tapBlock  = 1 << 16
)

// tap is one device's ring. Whoever claims it first (its reader, or the
// lab's Close when no reader ever started) is its only user and closes it.
type tap struct {
	fd      int
	ring    []byte
	next    int // the oldest copy not yet matched
	claimed atomic.Bool
}

// claim makes the caller the tap's only user; false when another is.
func (t *tap) claim() bool { return t != nil && t.claimed.CompareAndSwap(false, true) }

// release closes the tap unless a reader claimed it (which closes it
// when it ends): for the lab's Close.
func (t *tap) release() {
	if t.claim() {
		t.close()
	}
}

// openTap opens a tap on the TUN device in ns. The caller falls back to
// the read times alone when it fails (a kernel without packet sockets).
func openTap(ns netns.NsHandle) (*tap, error) {
	var t *tap
	err := inNS(ns, func() error {
		ifi, err := net.InterfaceByName(TUNName)
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0) // no packets until bound
		if err != nil {
			return fmt.Errorf("packet socket: %w", err)
		}
		t = &tap{fd: fd}
		if err := t.setup(ifi.Index); err != nil {
			t.close()
			t = nil
			return err
		}
		return nil
	})
	return t, err
}

// setup attaches the filter (the kernel's outgoing copies only, cut to
// tapSnap), maps the ring and binds the socket to the device.
func (t *tap) setup(ifindex int) error {
	const skfAdPkttype = 0xfffff000 + 4 // SKF_AD_OFF + SKF_AD_PKTTYPE
	prog := []unix.SockFilter{
		{Code: 0x20, K: skfAdPkttype},                       // ld pkttype
		{Code: 0x15, Jt: 0, Jf: 1, K: unix.PACKET_OUTGOING}, // jeq outgoing
		{Code: 0x06, K: tapSnap},                            // ret snap
		{Code: 0x06, K: 0},                                  // ret 0: drop
	}
	if err := unix.SetsockoptSockFprog(t.fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}); err != nil {
		return fmt.Errorf("tap filter: %w", err)
	}
	if err := unix.SetsockoptInt(t.fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
		return fmt.Errorf("tap version: %w", err)
	}
	req := unix.TpacketReq{Block_size: tapBlock, Block_nr: tapFrames * tapFrame / tapBlock, Frame_size: tapFrame, Frame_nr: tapFrames}
	if err := unix.SetsockoptTpacketReq(t.fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return fmt.Errorf("tap ring: %w", err)
	}
	ring, err := unix.Mmap(t.fd, 0, tapFrames*tapFrame, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("tap ring: %w", err)
	}
	t.ring = ring
	all := uint16(unix.ETH_P_ALL)<<8 | uint16(unix.ETH_P_ALL)>>8
	if err := unix.Bind(t.fd, &unix.SockaddrLinklayer{Protocol: all, Ifindex: ifindex}); err != nil {
		return fmt.Errorf("tap bind: %w", err)
	}
	return nil
}

func (t *tap) close() {
	if t.ring != nil {
		_ = unix.Munmap(t.ring)
		t.ring = nil
	}
	_ = unix.Close(t.fd)
}

// tapLook is how many copies the tap looks past for a packet's: the
// copies of packets the device dropped (its queue full) come before it.
const tapLook = 64

// entered is when the packet ip (the first, or only, packet of a TUN
// read) entered the device, on the wall clock (the kernel's stamp,
// CLOCK_REALTIME): its copy's stamp. The copies before it (of packets
// the device dropped, or that the reader never saw) go back to the
// kernel with it. ok is false when no copy among the next tapLook
// matches: the ring overflowed and the kernel kept no copy of it (its
// reader fell far behind); nothing is consumed then.
func (t *tap) entered(ip []byte) (ns int64, ok bool) {
	for k := range tapLook {
		i := (t.next + k) % tapFrames
		f := t.ring[i*tapFrame : (i+1)*tapFrame]
		hdr := (*unix.Tpacket2Hdr)(unsafe.Pointer(&f[0]))
		if atomic.LoadUint32(&hdr.Status)&unix.TP_STATUS_USER == 0 {
			return 0, false // no more copies: not (yet) there
		}
		end := min(int(hdr.Net)+int(hdr.Snaplen), tapFrame)
		if !samePacket(f[min(int(hdr.Net), end):end], ip) {
			continue
		}
		ns = int64(hdr.Sec)*1e9 + int64(hdr.Nsec)
		for j := 0; j <= k; j++ {
			h := (*unix.Tpacket2Hdr)(unsafe.Pointer(&t.ring[(t.next+j)%tapFrames*tapFrame]))
			atomic.StoreUint32(&h.Status, unix.TP_STATUS_KERNEL)
		}
		t.next = (i + 1) % tapFrames
		return ns, true
	}
	return 0, false
}

// samePacket says whether copy c (the start of a packet the kernel sent
// into the device) is read packet p, or the first segment of it when the
// device took a super-packet (TSO) and the reader split it: the fields
// segmentation keeps (IPv4: version, TOS, ID, fragment, TTL, protocol,
// addresses; IPv6: the fixed header less the payload length), the ports
// and TCP's sequence number. Not the checksums, which the copy may carry
// unfinished (the device computes them, or the reader does), nor UDP's
// length (UDP segmentation).
func samePacket(c, p []byte) bool {
	if len(c) < 20 || len(p) < 20 || c[0] != p[0] {
		return false
	}
	switch c[0] >> 4 {
	case 4:
		ihl := int(c[0]&0x0f) * 4
		if len(c) < ihl+8 || len(p) < ihl+8 || c[1] != p[1] ||
			binary.BigEndian.Uint64(c[4:12])&^0xffff != binary.BigEndian.Uint64(p[4:12])&^0xffff { // ID, fragment, TTL, protocol; not the checksum
			return false
		}
		n := 4 // ports
		if c[9] == unix.IPPROTO_TCP {
			n = 8 // and the sequence number
		}
		return string(c[12:20]) == string(p[12:20]) && string(c[ihl:ihl+n]) == string(p[ihl:ihl+n])
	case 6:
		if len(c) < 44 || len(p) < 44 {
			return false
		}
		return string(c[:4]) == string(p[:4]) && string(c[6:44]) == string(p[6:44])
	}
	return false
}

// waited is how long the packet ip, read at read (wall clock), waited
// in the device; ok is false without a tap or a copy of it.
func (t *tap) waited(ip []byte, read time.Time) (time.Duration, bool) {
	if t == nil {
		return 0, false
	}
	ns, ok := t.entered(ip)
	if !ok {
		return 0, false
	}
	return max(0, time.Duration(read.UnixNano()-ns)), true
}
