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
}

// pipe forwards one direction: src TUN → chain → dst TUN.
type pipe struct {
	name  string
	src   tun.Device
	dst   tun.Device
	start time.Time
	stats *DirStats
	pool  *sync.Pool

	mu    sync.Mutex // guards path and ready
	path  *Path
	ready []*link.Packet

	trace tracer   // ICMP echo packets' timestamps, for tests
	late  lateness // every packet: write time − virtual departure

	wake chan struct{} // cap 1; the reader signals new work, nobody closes it
	icmp chan []byte   // frag-needed replies to write back into src; reader-owned
}

func (p *pipe) now() time.Duration { return time.Since(p.start) }

func (p *pipe) getBuf() []byte { return *(p.pool.Get().(*[]byte)) }
func (p *pipe) putBuf(b []byte) {
	b = b[:cap(b)]
	p.pool.Put(&b)
}

// routineRead reads batches from src and enters each packet into the
// chain at its arrival time. It ends when src is closed.
func (p *pipe) routineRead() error {
	n := p.src.BatchSize()
	bufs := make([][]byte, n)
	sizes := make([]int, n)
	for i := range bufs {
		bufs[i] = p.getBuf()
	}
	for {
		cnt, err := p.src.Read(bufs, sizes, headroom)
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
		p.path.Chain.Advance(now, p.collect)
		for i := range cnt {
			data := bufs[i][headroom : headroom+sizes[i]]
			pk := &link.Packet{Data: data, Buf: bufs[i], Class: classOf(data)}
			p.stats.RxPackets.Add(1)
			p.stats.RxBytes.Add(uint64(len(data)))
			bufs[i] = p.getBuf() // the packet keeps its buffer
			p.arrive(now, pk)
			p.path.Chain.Push(now, pk)
		}
		p.mu.Unlock()
		select {
		case p.wake <- struct{}{}:
		default:
		}
		p.flushICMP()
	}
}

func (p *pipe) collect(pk *link.Packet) {
	p.depart(pk)
	p.ready = append(p.ready, pk)
}

// drop is the chain's drop counter; the packet's buffer goes back.
func (p *pipe) drop(pk *link.Packet, c link.Cause) {
	p.stats.Drops[c].Add(1)
	p.putBuf(pk.Buf)
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
	var batch []*link.Packet
	for ctx.Err() == nil {
		p.mu.Lock()
		p.path.Chain.Advance(p.now(), p.collect)
		batch, p.ready = p.ready, batch[:0]
		next, pending := p.path.Chain.Next()
		p.mu.Unlock()
		if len(batch) > 0 {
			out = out[:0]
			for _, pk := range batch {
				out = append(out, pk.Buf[:headroom+len(pk.Data)])
				p.stats.TxPackets.Add(1)
				p.stats.TxBytes.Add(uint64(len(pk.Data)))
			}
			_, err := p.dst.Write(out, headroom)
			now := p.now()
			for i, b := range out {
				p.written(batch[i], now)
				p.putBuf(b)
			}
			if err != nil && (errors.Is(err, os.ErrClosed) || ctx.Err() != nil) {
				return nil
			}
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

func (p *pipe) flushICMP() {
	for {
		select {
		case b := <-p.icmp:
			buf := p.getBuf()
			n := copy(buf[headroom:], b)
			if _, err := p.src.Write([][]byte{buf[:headroom+n]}, headroom); err == nil {
				p.stats.ICMPSent.Add(1)
			}
			p.putBuf(buf)
		default:
			return
		}
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
