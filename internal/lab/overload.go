package lab

import (
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/fullpipe/fullpipe/internal/link"
)

// The forwarder is a program on a shared machine: when it cannot keep up
// it must say so, apart from what the emulated path does. It is
// lab-limited when it lost packets of its own or wrote them late:
//   - the kernel dropped packets the forwarder did not read in time (the
//     input TUN device's queue, 500 packets, overflowed: its tx_dropped);
//   - a TUN write failed (WriteDrops);
//   - a packet was written more than LateLimit after its virtual
//     departure (Late; the lateness histogram has the detail).
//   - the reader was away from its device for more than LateLimit (it
//     waited for a core) and found packets waiting when it came back: they
//     may have waited up to that long before their arrival was stamped
//     (ReadStalls; a read that returns within readNoWait found its packet
//     already queued).

// LateLimit is how late after its virtual departure a packet may be
// written before it counts as late: ten times the TUN devices' own
// round-trip latency, well above a busy machine's median lateness
// (0.1-0.2 ms) and above any batching of a stream (one nanosleep
// overshoot).
const LateLimit = time.Millisecond

// readNoWait: a TUN read that returns sooner found a packet queued (a
// read syscall that does not block takes a few µs).
const readNoWait = 20 * time.Microsecond

// freeList holds packets with their buffers for reuse: the reader takes
// them, the writer and the drop counters give them back. No packet is
// allocated in the steady state.
type freeList struct {
	mu  sync.Mutex
	pks []*link.Packet
}

func (f *freeList) get() *link.Packet {
	f.mu.Lock()
	if n := len(f.pks); n > 0 {
		pk := f.pks[n-1]
		f.pks[n-1] = nil
		f.pks = f.pks[:n-1]
		f.mu.Unlock()
		*pk = link.Packet{Buf: pk.Buf}
		return pk
	}
	f.mu.Unlock()
	return &link.Packet{Buf: make([]byte, pktBufSize)}
}

func (f *freeList) put(pks ...*link.Packet) {
	f.mu.Lock()
	f.pks = append(f.pks, pks...)
	f.mu.Unlock()
}

// tunDrops is what the kernel dropped on its way to the forwarder: the
// tx_dropped counter of the TUN device in ns (0 when it cannot be read).
func tunDrops(ns netns.NsHandle) uint64 {
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return 0
	}
	defer h.Close()
	l, err := h.LinkByName(TUNName)
	if err != nil || l.Attrs().Statistics == nil {
		return 0
	}
	return l.Attrs().Statistics.TxDropped
}
