package lab

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/tun"

	"github.com/fullpipe/fullpipe/internal/link"
)

// headroom in front of each packet for the virtio-net header the tun
// package reads and writes (10 bytes).
const headroom = 16

const bufSize = headroom + 65535

// maxSleep bounds one sleep of a writer, so a new packet whose delivery
// is earlier than the one waited for (jitter with reordering) is late by
// at most this much.
const maxSleep = 500 * time.Microsecond

// spinWindow is how close to a delivery the writer stops sleeping and
// spins. With the writer's timer slack at 1 ns, nanosleep on this kernel
// wakes 35 µs late at the median, 41 µs at p90 and 67 µs at p99 (the
// default 50 µs slack adds about 50 µs to that). Spinning the last 60 µs
// makes nearly every delivery exact while the writer spins only about
// 25 µs per wake: the CPU is shared with the TCP endpoints under test,
// and a writer that spins for long starves them and adds delay there.
const spinWindow = 60 * time.Microsecond

// DirStats counts one direction. Drops are by cause (link.Cause order).
type DirStats struct {
	RxPackets, RxBytes atomic.Uint64
	TxPackets, TxBytes atomic.Uint64
	Drops              [8]atomic.Uint64
	ICMPSent           atomic.Uint64
	NoRoute            atomic.Uint64 // read, but addressed to no device the fabric knows (sites)
}

// fabric is the emulated network a pipe forwards through, in virtual
// time: a packet enters from one of the pipe's input devices and leaves
// towards one of its output devices. A fabric is not safe for concurrent
// use: the pipe's mu guards every call.
type fabric interface {
	// push enters pk, read from input in at now; the pipe has advanced
	// the fabric to now first. It returns false, keeping nothing, when
	// no output is addressed.
	push(now time.Duration, in int, pk *link.Packet) bool
	// advance processes every event up to now in time order and hands
	// each packet that leaves to deliver with its output, p.Time its
	// exact virtual departure.
	advance(now time.Duration, deliver func(out int, pk *link.Packet))
	// next is the earliest virtual time of any pending event.
	next() (time.Duration, bool)
	// queuedAhead is what waits in the bottleneck queues that a packet
	// from input in meets first (IP bytes and packets), for the trace.
	queuedAhead(in int) (bytes, packets int)
}

// single is the two-ended lab's fabric: one direction's chain from one
// input to one output.
type single struct{ path *Path }

func (s single) push(now time.Duration, _ int, pk *link.Packet) bool {
	s.path.Chain.Push(now, pk)
	return true
}

func (s single) advance(now time.Duration, deliver func(int, *link.Packet)) {
	s.path.Chain.Advance(now, func(pk *link.Packet) { deliver(0, pk) })
}

func (s single) next() (time.Duration, bool) { return s.path.Chain.Next() }

func (s single) queuedAhead(int) (bytes, packets int) { return queuedIn(s.path) }

// queuedIn sums what waits in path's bottleneck queues.
func queuedIn(path *Path) (bytes, packets int) {
	for _, b := range path.Bottlenecks {
		bytes += b.QueuedBytes()
		packets += b.QueuedPackets()
	}
	return bytes, packets
}

// icmpReply is a frag-needed answer waiting to be written into the input
// device ins[to]; st counts it.
type icmpReply struct {
	to int
	b  []byte
	st *DirStats
}

// pipe forwards from its input devices through a fabric to its output
// devices: one routineRead per input, one routineWrite for all outputs.
// The two-ended lab runs one pipe per direction (one input, one output);
// a sites lab one pipe whose inputs and outputs are the same devices.
type pipe struct {
	name  string
	ins   []tun.Device // read, one routineRead each
	outs  []tun.Device // written by routineWrite
	rx    []*DirStats  // per input: what was read
	tx    []*DirStats  // per output: what was written
	start time.Time
	pool  *sync.Pool

	mu    sync.Mutex // guards net and ready
	net   fabric
	ready [][]*link.Packet // per output: left the fabric, to be written

	trace tracer   // ICMP echo packets' timestamps, for tests
	late  lateness // every packet: write time − virtual departure

	wake chan struct{}  // cap 1; the readers signal new work, nobody closes it
	icmp chan icmpReply // frag-needed replies; any goroutine sends (never blocking), readers and the writer flush
}

// newPipe makes a pipe; net is set by the caller before it runs.
func newPipe(name string, ins, outs []tun.Device, rx, tx []*DirStats, start time.Time, pool *sync.Pool) *pipe {
	return &pipe{name: name, ins: ins, outs: outs, rx: rx, tx: tx, start: start, pool: pool,
		ready: make([][]*link.Packet, len(outs)), wake: make(chan struct{}, 1), icmp: make(chan icmpReply, 64)}
}

func (p *pipe) now() time.Duration { return time.Since(p.start) }

func (p *pipe) getBuf() []byte { return *(p.pool.Get().(*[]byte)) }
func (p *pipe) putBuf(b []byte) {
	b = b[:cap(b)]
	p.pool.Put(&b)
}

// routineRead reads batches from ins[in] and enters each packet into the
// fabric at its arrival time. It ends when that device is closed.
func (p *pipe) routineRead(in int) error {
	src, st := p.ins[in], p.rx[in]
	n := src.BatchSize()
	bufs := make([][]byte, n)
	sizes := make([]int, n)
	for i := range bufs {
		bufs[i] = p.getBuf()
	}
	for {
		cnt, err := src.Read(bufs, sizes, headroom)
		if err != nil && cnt == 0 {
			if errors.Is(err, os.ErrClosed) || errors.Is(err, unix.EBADFD) {
				return nil
			}
			if errors.Is(err, tun.ErrTooManySegments) {
				continue
			}
			return err
		}
		now := p.now()
		p.mu.Lock()
		p.net.advance(now, p.collect)
		for i := range cnt {
			data := bufs[i][headroom : headroom+sizes[i]]
			pk := &link.Packet{Data: data, Buf: bufs[i], Class: classOf(data)}
			st.RxPackets.Add(1)
			st.RxBytes.Add(uint64(len(data)))
			p.arrive(now, in, pk)
			if !p.net.push(now, in, pk) {
				st.NoRoute.Add(1)
				continue // the buffer stays for the next read
			}
			bufs[i] = p.getBuf() // the packet keeps its buffer
		}
		p.mu.Unlock()
		select {
		case p.wake <- struct{}{}:
		default:
		}
		p.flushICMP()
	}
}

func (p *pipe) collect(out int, pk *link.Packet) {
	p.depart(pk)
	p.ready[out] = append(p.ready[out], pk)
}

// dropper is a chain's drop counter into st; the packet's buffer goes
// back.
func (p *pipe) dropper(st *DirStats) link.DropFunc {
	return func(pk *link.Packet, c link.Cause) {
		st.Drops[c].Add(1)
		p.putBuf(pk.Buf)
	}
}

// tooBig answers packets above mtu with ICMP frag-needed, written into
// ins[to(packet)] and counted in st; nil when d does not ask for ICMP.
func (p *pipe) tooBig(d Direction, to func(ip []byte) int, st *DirStats) func(*link.Packet) {
	if !d.ICMP {
		return nil
	}
	return func(pk *link.Packet) {
		b := fragNeeded(pk.Data, d.MTU)
		if b == nil {
			return
		}
		k := to(pk.Data)
		if k < 0 {
			return
		}
		select {
		case p.icmp <- icmpReply{to: k, b: b, st: st}:
		default: // rate-limited by the channel, as routers do
		}
	}
}

// routineWrite delivers packets whose time has come. It runs on a locked
// OS thread so that nanosleep wakes it within about 0.1 ms (Go timers
// overshoot by about 1 ms on this kernel). It ends when ctx ends.
func (p *pipe) routineWrite(ctx context.Context) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// The slack is per thread; the thread stays locked to this goroutine
	// and goes back to the pool only after it ends. Without it the
	// writer wakes ~50 µs later and spins that much longer.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	var out [][]byte
	batch := make([][]*link.Packet, len(p.outs))
	for ctx.Err() == nil {
		p.mu.Lock()
		p.net.advance(p.now(), p.collect)
		batch, p.ready = p.ready, batch
		next, pending := p.net.next()
		p.mu.Unlock()
		if wrote, err := p.writeOut(batch, &out); wrote {
			if err != nil && (errors.Is(err, os.ErrClosed) || ctx.Err() != nil) {
				return nil
			}
			p.flushICMP()
			continue
		}
		if !pending {
			select {
			case <-p.wake:
			case <-ctx.Done():
			}
			continue
		}
		if d := next - p.now(); d > spinWindow {
			ts := unix.NsecToTimespec(int64(min(d-spinWindow, maxSleep)))
			_ = unix.Nanosleep(&ts, nil)
		} else {
			for p.now() < next { // the last stretch: nanosleep would overshoot it
			}
		}
	}
	return nil
}

// writeOut writes each output's packets as one batch, returns their
// buffers and empties batch. wrote is false when there was nothing; err
// is the last write's error.
func (p *pipe) writeOut(batch [][]*link.Packet, scratch *[][]byte) (wrote bool, err error) {
	for o, pks := range batch {
		if len(pks) == 0 {
			continue
		}
		wrote = true
		out := (*scratch)[:0]
		for _, pk := range pks {
			out = append(out, pk.Buf[:headroom+len(pk.Data)])
			p.tx[o].TxPackets.Add(1)
			p.tx[o].TxBytes.Add(uint64(len(pk.Data)))
		}
		if _, werr := p.outs[o].Write(out, headroom); werr != nil {
			err = werr
		}
		now := p.now()
		for i, b := range out {
			p.written(pks[i], now)
			p.putBuf(b)
		}
		clear(pks)
		batch[o], *scratch = pks[:0], out
	}
	return wrote, err
}

func (p *pipe) flushICMP() {
	for {
		select {
		case r := <-p.icmp:
			buf := p.getBuf()
			n := copy(buf[headroom:], r.b)
			if _, err := p.ins[r.to].Write([][]byte{buf[:headroom+n]}, headroom); err == nil {
				r.st.ICMPSent.Add(1)
			}
			p.putBuf(buf)
		default:
			return
		}
	}
}

// spareProcs raises GOMAXPROCS to the CPU count plus writers. Each
// writer is locked to its thread and holds a P while it spins or sleeps
// in nanosleep; the runtime takes a P back from a sleeping thread only
// when sysmon notices, after 20 µs to 10 ms. With GOMAXPROCS at the CPU
// count (2 here) the writers can leave the readers, and an in-process
// responder, waiting for a P, which adds that wait to the path's delay.
// One spare P per writer avoids it; the OS still shares the CPUs.
func spareProcs(writers int) {
	if want := runtime.NumCPU() + writers; runtime.GOMAXPROCS(0) < want {
		runtime.GOMAXPROCS(want)
	}
}

// classOf puts expedited-forwarding-like DSCPs (EF 46 and CS5..CS7) in
// the high class 0, everything else in class 1.
func classOf(ip []byte) int {
	if len(ip) < 2 {
		return 1
	}
	var dscp byte
	switch ip[0] >> 4 {
	case 4:
		dscp = ip[1] >> 2
	case 6:
		dscp = byte(binary.BigEndian.Uint16(ip[0:2])>>6) & 0x3f
	default:
		return 1
	}
	if dscp == 46 || dscp >= 40 {
		return 0
	}
	return 1
}
