package link

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/fullpipe/fullpipe/internal/frame"
)

// fifo is a slice-backed packet queue.
type fifo struct {
	q    []*Packet
	head int
}

func (f *fifo) push(p *Packet) { f.q = append(f.q, p) }
func (f *fifo) len() int       { return len(f.q) - f.head }
func (f *fifo) peek() *Packet  { return f.q[f.head] }
func (f *fifo) pop() *Packet {
	p := f.q[f.head]
	f.q[f.head] = nil
	f.head++
	if f.head > 1024 && f.head*2 > len(f.q) {
		f.q = append(f.q[:0], f.q[f.head:]...)
		f.head = 0
	}
	return p
}

// filter passes or drops each packet the moment it arrives.
type filter struct {
	admit func(p *Packet) (bool, Cause)
	out   fifo
}

func (s *filter) Push(p *Packet, drop DropFunc) {
	if ok, c := s.admit(p); !ok {
		drop(p, c)
		return
	}
	s.out.push(p)
}

func (s *filter) Next() (time.Duration, bool) {
	if s.out.len() == 0 {
		return 0, false
	}
	return s.out.peek().Time, true
}

func (s *filter) Pull() *Packet { return s.out.pop() }

// Policer is a token-bucket policer: a packet passes if the bucket holds
// its size in bytes, else it is dropped. The bucket fills at RateBps and
// holds at most BurstBytes; it starts full.
func Policer(rateBps int64, burstBytes int) Stage {
	tokens := float64(burstBytes)
	var last time.Duration
	return &filter{admit: func(p *Packet) (bool, Cause) {
		tokens = math.Min(float64(burstBytes), tokens+float64(p.Time-last)*float64(rateBps)/8/1e9)
		last = p.Time
		if float64(p.Len()) > tokens {
			return false, DropPolicer
		}
		tokens -= float64(p.Len())
		return true, 0
	}}
}

// Loss drops each packet independently with probability prob.
func Loss(prob float64, rng *rand.Rand) Stage {
	return &filter{admit: func(*Packet) (bool, Cause) {
		return !(rng.Float64() < prob), DropLoss
	}}
}

// GilbertElliott drops in bursts: a two-state chain, good (no loss) and
// bad (every packet lost), moving good→bad with probability p and
// bad→good with probability r per packet. The mean loss is p/(p+r) and
// the mean burst length 1/r packets.
func GilbertElliott(p, r float64, rng *rand.Rand) Stage {
	bad := false
	return &filter{admit: func(*Packet) (bool, Cause) {
		if bad {
			bad = !(rng.Float64() < r)
		} else {
			bad = rng.Float64() < p
		}
		return !bad, DropLoss
	}}
}

// BERLossProb is the probability that a packet of size bytes has at least
// one bit error at bit error ratio ber: 1 − (1 − ber)^(8 × size).
func BERLossProb(ber float64, size int) float64 {
	return -math.Expm1(float64(8*size) * math.Log1p(-ber))
}

// BER drops each packet with BERLossProb(ber, size).
func BER(ber float64, rng *rand.Rand) Stage {
	return &filter{admit: func(p *Packet) (bool, Cause) {
		return !(rng.Float64() < BERLossProb(ber, p.Len())), DropBER
	}}
}

// CellLoss drops a packet when any of its cells is lost, each cell with
// probability prob: one lost cell destroys the whole AAL5 frame.
func CellLoss(prob float64, rng *rand.Rand) Stage {
	return &filter{admit: func(p *Packet) (bool, Cause) {
		pl := -math.Expm1(float64(frame.ATMCells(p.Len())) * math.Log1p(-prob))
		return !(rng.Float64() < pl), DropCell
	}}
}

// MTU drops packets larger than mtu bytes. tooBig, if not nil, is called
// for each (the lab answers with ICMP fragmentation-needed from there).
func MTU(mtu int, tooBig func(p *Packet)) Stage {
	return &filter{admit: func(p *Packet) (bool, Cause) {
		if p.Len() <= mtu {
			return true, 0
		}
		if tooBig != nil {
			tooBig(p)
		}
		return false, DropMTU
	}}
}

// Framing says how many bytes a packet occupies on the wire at the
// bottleneck.
type Framing func(ipBytes int) int

// Framings. Ethernet adds 38 bytes per frame: 14 header, 4 FCS, 8
// preamble and start delimiter, 12 inter-frame gap. ATM counts 53-byte
// cells, the packet and AAL5's 8-byte trailer padded to whole cells'
// 48-byte payloads (frame.ATMCells).
var (
	FramingNone     Framing = func(n int) int { return n }
	FramingEthernet Framing = func(n int) int { return n + frame.EthernetWire }
	FramingATM      Framing = func(n int) int { return frame.ATMCell * frame.ATMCells(n) }
)

// Bottleneck is a drop-tail queue in front of a link of RateBps. A packet
// takes WireBytes × 8 / RateBps to serialise. The queue holds at most
// QueueBytes (IP bytes, not counting the packet in service) and at most
// QueuePackets packets; zero means no limit of that kind. With Priority,
// class-0 packets have their own queue of the same limits, served first
// (strict priority, no pre-emption of the packet in service).
type Bottleneck struct {
	RateBps      int64
	QueueBytes   int
	QueuePackets int
	Framing      Framing
	Priority     bool

	queues    [2]fifo
	qbytes    [2]int
	inService *Packet
	doneAt    time.Duration
	maxQueued int
}

func (b *Bottleneck) txTime(p *Packet) time.Duration {
	w := p.Len()
	if b.Framing != nil {
		w = b.Framing(w)
	}
	return time.Duration(math.Ceil(float64(w) * 8 * 1e9 / float64(b.RateBps)))
}

func (b *Bottleneck) class(p *Packet) int {
	if b.Priority && p.Class == 0 {
		return 0
	}
	return 1
}

// Push queues p or drops it when its queue is full.
func (b *Bottleneck) Push(p *Packet, drop DropFunc) {
	if b.inService == nil {
		b.inService, b.doneAt = p, p.Time+b.txTime(p)
		return
	}
	c := b.class(p)
	if (b.QueueBytes > 0 && b.qbytes[c]+p.Len() > b.QueueBytes) ||
		(b.QueuePackets > 0 && b.queues[c].len()+1 > b.QueuePackets) {
		drop(p, DropQueue)
		return
	}
	b.queues[c].push(p)
	b.qbytes[c] += p.Len()
	b.maxQueued = max(b.maxQueued, b.qbytes[0]+b.qbytes[1])
}

// Next is when the packet in service finishes.
func (b *Bottleneck) Next() (time.Duration, bool) { return b.doneAt, b.inService != nil }

// Pull hands over the packet in service and starts the next.
func (b *Bottleneck) Pull() *Packet {
	p := b.inService
	p.Time = b.doneAt
	b.inService = nil
	for c := range b.queues {
		if b.queues[c].len() > 0 {
			n := b.queues[c].pop()
			b.qbytes[c] -= n.Len()
			b.inService, b.doneAt = n, p.Time+b.txTime(n)
			break
		}
	}
	return p
}

// QueuedBytes is the bytes waiting, not counting the one in service.
func (b *Bottleneck) QueuedBytes() int { return b.qbytes[0] + b.qbytes[1] }

// QueuedPackets is the packets waiting, not counting the one in service.
func (b *Bottleneck) QueuedPackets() int { return b.queues[0].len() + b.queues[1].len() }

// MaxQueuedBytes is the most bytes that ever waited.
func (b *Bottleneck) MaxQueuedBytes() int { return b.maxQueued }

// Delay holds each packet for Delay plus a jitter drawn uniformly from
// [0, Jitter). Without Reorder a packet never leaves before one that
// entered earlier (it waits behind it), as on a real serial path.
type Delay struct {
	Delay   time.Duration
	Jitter  time.Duration
	Reorder bool
	Rng     *rand.Rand

	line        []*Packet // ordered by release time (insertion keeps order)
	lastRelease time.Duration
}

// Push schedules p's release.
func (d *Delay) Push(p *Packet, _ DropFunc) {
	rel := p.Time + d.Delay
	if d.Jitter > 0 {
		rel += time.Duration(d.Rng.Int64N(int64(d.Jitter)))
	}
	if !d.Reorder {
		rel = max(rel, d.lastRelease)
	}
	d.lastRelease = max(d.lastRelease, rel)
	p.Time = rel
	// Insert by release time; without reordering this is always the end.
	i := len(d.line)
	for i > 0 && d.line[i-1].Time > rel {
		i--
	}
	d.line = append(d.line, nil)
	copy(d.line[i+1:], d.line[i:])
	d.line[i] = p
}

// Next is the earliest release.
func (d *Delay) Next() (time.Duration, bool) {
	if len(d.line) == 0 {
		return 0, false
	}
	return d.line[0].Time, true
}

// Pull releases the head.
func (d *Delay) Pull() *Packet {
	p := d.line[0]
	d.line[0] = nil
	d.line = d.line[1:]
	return p
}
