package lab

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fullpipe/fullpipe/internal/link"
)

// The forwarder knows, for every packet, when it arrived (the reader's
// clock when the batch was read), when the emulated path lets it leave
// (its virtual departure) and when it was written to the far TUN device.
// Tests judge the emulator from these timestamps, and the hosts' tools
// (ping) against them, instead of from the tools' numbers alone.

// TraceRecord is one ICMP echo request or reply on one direction.
type TraceRecord struct {
	ICMPType uint8 // 8 echo request, 0 echo reply
	ID, Seq  uint16
	Len      int // IP bytes
	// QueuedAhead is what waited in the direction's bottleneck queues when
	// the packet arrived (IP bytes and packets, not the one in service).
	QueuedAheadBytes, QueuedAheadPackets int
	Arrived                              time.Duration // forwarder's clock: read from the source TUN
	Departed                             time.Duration // virtual: when the emulated path released it (0 = not yet)
	Written                              time.Duration // forwarder's clock: written to the far TUN (its write began; 0 = not yet)
	// Returned is when that write returned: the receiving kernel had
	// done its work on the packet on the writer's thread (an echo
	// request's reply made and sent on).
	Returned time.Duration
}

// Virtual is the time the emulated path held the packet.
func (r TraceRecord) Virtual() time.Duration { return r.Departed - r.Arrived }

// Late is how long after its virtual departure the packet was written.
func (r TraceRecord) Late() time.Duration { return r.Written - r.Departed }

// Work is how long the receiving kernel worked on the packet within its
// write.
func (r TraceRecord) Work() time.Duration { return r.Returned - r.Written }

// maxTrace bounds one direction's trace: a test pings a few hundred times.
const maxTrace = 4096

// tracer records ICMP echo packets of one direction. mu guards recs.
type tracer struct {
	mu   sync.Mutex
	recs []TraceRecord
}

// LateBucket is the width of one bucket of the lateness histogram, and
// lateBuckets how many there are (the last collects everything later).
const (
	LateBucket  = 10 * time.Microsecond
	lateBuckets = 1000
)

// lateness counts every forwarded packet by how late after its virtual
// departure it was written, in LateBucket steps (the writer adds, tests
// read).
type lateness [lateBuckets]atomic.Uint64

func (h *lateness) add(d time.Duration) { h.addN(d, 1) }

// addN counts n packets d late.
func (h *lateness) addN(d time.Duration, n uint64) {
	i := int(max(0, d) / LateBucket)
	h[min(i, lateBuckets-1)].Add(n)
}

// icmpEcho returns type, id and seq of an IPv4 ICMP echo request or
// reply; ok is false for anything else.
func icmpEcho(ip []byte) (typ uint8, id, seq uint16, ok bool) {
	if len(ip) < 20 || ip[0]>>4 != 4 || ip[9] != 1 {
		return 0, 0, 0, false
	}
	ihl := int(ip[0]&0x0f) * 4
	if len(ip) < ihl+8 || (ip[ihl] != 8 && ip[ihl] != 0) {
		return 0, 0, 0, false
	}
	return ip[ihl], binary.BigEndian.Uint16(ip[ihl+4:]), binary.BigEndian.Uint16(ip[ihl+6:]), true
}

// arrive starts a record for pk, read from input in, if it is an ICMP
// echo and there is room; the caller holds the pipe's mu (the fabric's
// queues are read).
func (p *pipe) arrive(now time.Duration, in int, pk *link.Packet) {
	typ, id, seq, ok := icmpEcho(pk.Data)
	if !ok {
		return
	}
	r := TraceRecord{ICMPType: typ, ID: id, Seq: seq, Len: len(pk.Data), Arrived: now}
	r.QueuedAheadBytes, r.QueuedAheadPackets = p.net.queuedAhead(in)
	p.trace.mu.Lock()
	defer p.trace.mu.Unlock()
	if len(p.trace.recs) < maxTrace {
		p.trace.recs = append(p.trace.recs, r)
		pk.Tag = len(p.trace.recs)
	}
}

// depart stamps the virtual departure of a traced packet.
func (p *pipe) depart(pk *link.Packet) {
	if pk.Tag == 0 {
		return
	}
	p.trace.mu.Lock()
	p.trace.recs[pk.Tag-1].Departed = pk.Time
	p.trace.mu.Unlock()
}

// written stamps the write time of a traced packet, and counts every
// packet in the lateness histogram and, beyond LateLimit, in st.Late.
func (p *pipe) written(st *DirStats, pk *link.Packet, now, returned time.Duration) {
	p.late.add(now - pk.Time)
	if now-pk.Time > LateLimit {
		st.Late.Add(1)
	}
	if pk.Tag == 0 {
		return
	}
	p.trace.mu.Lock()
	p.trace.recs[pk.Tag-1].Written = now
	p.trace.recs[pk.Tag-1].Returned = returned
	p.trace.mu.Unlock()
}

// Trace returns a copy of each direction's ICMP echo records so far (up,
// down), in arrival order, every packet written before the call stamped.
func (l *Lab) Trace() (up, down []TraceRecord) {
	return l.pipes[0].records(), l.pipes[1].records()
}

// records copies the pipe's records once the writer's batch in hand,
// if any, has its writes stamped (a write returns, and wakes its reader,
// before the writer stamps it: CI run 27's TestQueueDelay read a reply
// ping had printed with no write stamp).
func (p *pipe) records() []TraceRecord {
	p.writing.Lock()
	defer p.writing.Unlock()
	p.trace.mu.Lock()
	defer p.trace.mu.Unlock()
	return append([]TraceRecord(nil), p.trace.recs...)
}

// histogram reads the pipe's lateness histogram: counts per LateBucket,
// the last bucket holding everything later.
func (p *pipe) histogram() []uint64 { return p.late.read() }

func (h *lateness) read() []uint64 {
	out := make([]uint64, lateBuckets)
	for i := range out {
		out[i] = h[i].Load()
	}
	return out
}
