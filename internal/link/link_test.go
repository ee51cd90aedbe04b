package link

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func pkt(n int) *Packet { return &Packet{Data: make([]byte, n), Class: 1} }

type drops map[Cause]int

func (d drops) fn() DropFunc { return func(_ *Packet, c Cause) { d[c]++ } }

// run pushes each packet at its time and returns the delivery times.
func run(c *Chain, at []time.Duration, sizes []int, until time.Duration) []time.Duration {
	var out []time.Duration
	deliver := func(p *Packet) { out = append(out, p.Time) }
	for i, t := range at {
		c.Advance(t, deliver)
		c.Push(t, pkt(sizes[i]))
	}
	c.Advance(until, deliver)
	return out
}

func TestRateAndDelayExact(t *testing.T) {
	// 1500-byte packets at 100 Mbit/s take 1500×8/1e8 = 120 µs each; all
	// sent at t=0 they leave the bottleneck at k×120 µs and arrive 20 ms
	// later.
	d := drops{}
	c := NewChain(d.fn(), &Bottleneck{RateBps: 100e6}, &Delay{Delay: 20 * time.Millisecond})
	n := 50
	got := run(c, make([]time.Duration, n), repeat(1500, n), time.Second)
	if len(got) != n {
		t.Fatalf("delivered %d of %d", len(got), n)
	}
	for k, at := range got {
		want := 20*time.Millisecond + time.Duration(k+1)*120*time.Microsecond
		if at != want {
			t.Fatalf("packet %d delivered at %v, want %v", k, at, want)
		}
	}
}

func TestLateAdvanceKeepsExactTimes(t *testing.T) {
	// Advancing once, long after everything happened, gives the same
	// virtual times as advancing at every event.
	c := NewChain(nil, &Bottleneck{RateBps: 10e6, Framing: FramingEthernet}, &Delay{Delay: 5 * time.Millisecond})
	for range 10 {
		c.Push(0, pkt(1000))
	}
	var got []time.Duration
	c.Advance(time.Hour, func(p *Packet) { got = append(got, p.Time) })
	per := time.Duration(math.Ceil(1038 * 8 * 1e9 / 10e6)) // Ethernet adds 38 bytes
	for k, at := range got {
		if want := 5*time.Millisecond + time.Duration(k+1)*per; at != want {
			t.Fatalf("packet %d at %v, want %v", k, at, want)
		}
	}
}

func TestQueueDropTail(t *testing.T) {
	// One packet in service, a 15,000-byte queue holds ten 1500-byte
	// packets; of 20 sent at once, 9 are dropped as queue drops.
	d := drops{}
	b := &Bottleneck{RateBps: 1e6, QueueBytes: 15000}
	c := NewChain(d.fn(), b)
	got := run(c, make([]time.Duration, 20), repeat(1500, 20), time.Minute)
	if len(got) != 11 || d[DropQueue] != 9 {
		t.Fatalf("delivered %d, queue drops %d; want 11 and 9", len(got), d[DropQueue])
	}
	if b.MaxQueuedBytes() != 15000 {
		t.Fatalf("max queued %d, want 15000", b.MaxQueuedBytes())
	}
	pc := &Bottleneck{RateBps: 1e6, QueuePackets: 3}
	d2 := drops{}
	if got := run(NewChain(d2.fn(), pc), make([]time.Duration, 10), repeat(100, 10), time.Minute); len(got) != 4 || d2[DropQueue] != 6 {
		t.Fatalf("packet limit: delivered %d, dropped %d", len(got), d2[DropQueue])
	}
}

func TestPolicerPassesRateAndBurst(t *testing.T) {
	// Offer 12 Mbit/s (1500 B every 1 ms) to an 8 Mbit/s policer with a
	// 3000-byte burst for 10 s: it passes the burst plus 8 Mbit/s × 10 s =
	// 10,000,000 bytes, to within one packet, and adds no delay.
	d := drops{}
	c := NewChain(d.fn(), Policer(8e6, 3000))
	var at []time.Duration
	for i := range 10000 {
		at = append(at, time.Duration(i)*time.Millisecond)
	}
	got := run(c, at, repeat(1500, len(at)), 20*time.Second)
	passed := len(got) * 1500
	want := 3000 + 8e6/8*float64(at[len(at)-1])/1e9
	if math.Abs(float64(passed)-want) > 1500 {
		t.Fatalf("passed %d bytes, want %.0f ± 1500", passed, want)
	}
	if d[DropPolicer] != 10000-len(got) {
		t.Fatalf("policer drops %d, want %d", d[DropPolicer], 10000-len(got))
	}
	for i, tm := range got {
		_ = i
		if tm%time.Millisecond != 0 {
			t.Fatalf("policer delayed a packet to %v", tm)
		}
	}
}

func TestBERProbability(t *testing.T) {
	// Seed scenario 6: BER 1e-6 on 1500-byte packets: 1 − (1 − 1e-6)^12000.
	want := 1 - math.Pow(1-1e-6, 12000)
	if got := BERLossProb(1e-6, 1500); math.Abs(got-want) > 1e-12 || math.Abs(got-0.011928) > 1e-6 {
		t.Fatalf("BERLossProb = %v, want %v", got, want)
	}
}

func TestRandomLossRates(t *testing.T) {
	// n Bernoulli trials: the count is within 5 standard deviations of
	// n×p (a false failure has probability below 1e-6).
	const n = 200000
	check := func(name string, s Stage, p float64) {
		t.Helper()
		d := drops{}
		c := NewChain(d.fn(), s)
		got := run(c, make([]time.Duration, n), repeat(1000, n), 0)
		lost := float64(n - len(got))
		sd := math.Sqrt(n * p * (1 - p))
		if math.Abs(lost-n*p) > 5*sd {
			t.Errorf("%s: lost %v of %d, want %v ± %v", name, lost, n, n*p, 5*sd)
		}
	}
	rng := func() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }
	check("loss 1%", Loss(0.01, rng()), 0.01)
	check("ber 1e-6 at 1000 B", BER(1e-6, rng()), BERLossProb(1e-6, 1000))
	check("cell loss 1e-3 at 1000 B (21 cells)", CellLoss(1e-3, rng()), 1-math.Pow(1-1e-3, 21))
}

func TestGilbertElliott(t *testing.T) {
	// p = 0.001, r = 0.25: mean loss p/(p+r) ≈ 0.398 %, mean burst 4.
	d := drops{}
	const n = 1_000_000
	c := NewChain(d.fn(), GilbertElliott(0.001, 0.25, rand.New(rand.NewPCG(7, 7))))
	var bursts, inBurst int
	c.stages[0].(*filter).admit = wrapBursts(c.stages[0].(*filter).admit, &bursts, &inBurst)
	got := run(c, make([]time.Duration, n), repeat(100, n), 0)
	loss := float64(n-len(got)) / n
	if math.Abs(loss-0.001/0.251) > 0.0006 {
		t.Errorf("mean loss %.5f, want %.5f", loss, 0.001/0.251)
	}
	if mean := float64(n-len(got)) / float64(bursts); math.Abs(mean-4) > 0.4 {
		t.Errorf("mean burst %.2f packets, want 4", mean)
	}
}

func wrapBursts(f func(*Packet) (bool, Cause), bursts, in *int) func(*Packet) (bool, Cause) {
	return func(p *Packet) (bool, Cause) {
		ok, c := f(p)
		if !ok && *in == 0 {
			*bursts++
		}
		if ok {
			*in = 0
		} else {
			*in = 1
		}
		return ok, c
	}
}

func TestMTU(t *testing.T) {
	var told []int
	d := drops{}
	c := NewChain(d.fn(), MTU(1400, func(p *Packet) { told = append(told, p.Len()) }))
	got := run(c, []time.Duration{0, 0, 0}, []int{1400, 1401, 1500}, 0)
	if len(got) != 1 || d[DropMTU] != 2 || len(told) != 2 || told[0] != 1401 {
		t.Fatalf("delivered %d, mtu drops %d, told %v", len(got), d[DropMTU], told)
	}
}

func TestJitterNoReorder(t *testing.T) {
	dl := &Delay{Delay: 10 * time.Millisecond, Jitter: 5 * time.Millisecond, Rng: rand.New(rand.NewPCG(3, 4))}
	c := NewChain(nil, dl)
	var at []time.Duration
	for i := range 1000 {
		at = append(at, time.Duration(i)*100*time.Microsecond)
	}
	var seen []*Packet
	c2 := c
	for _, tm := range at {
		c2.Advance(tm, func(p *Packet) { seen = append(seen, p) })
		c2.Push(tm, pkt(100))
	}
	c2.Advance(time.Minute, func(p *Packet) { seen = append(seen, p) })
	for i := 1; i < len(seen); i++ {
		if seen[i].Born < seen[i-1].Born {
			t.Fatal("reordered without --reorder")
		}
		if d := seen[i].Time - seen[i].Born; d < 10*time.Millisecond || d >= 15*time.Millisecond+5*time.Millisecond {
			t.Fatalf("delay %v outside [10 ms, 20 ms)", d)
		}
	}
	// With Reorder, packets 100 µs apart and 5 ms of jitter do reorder.
	dr := &Delay{Delay: 10 * time.Millisecond, Jitter: 5 * time.Millisecond, Reorder: true, Rng: rand.New(rand.NewPCG(3, 4))}
	cr := NewChain(nil, dr)
	seen = nil
	for _, tm := range at {
		cr.Advance(tm, func(p *Packet) { seen = append(seen, p) })
		cr.Push(tm, pkt(100))
	}
	cr.Advance(time.Minute, func(p *Packet) { seen = append(seen, p) })
	re := 0
	for i := 1; i < len(seen); i++ {
		if seen[i].Born < seen[i-1].Born {
			re++
		}
		if seen[i].Time < seen[i-1].Time {
			t.Fatal("delivered out of time order")
		}
	}
	if re == 0 {
		t.Fatal("no reordering with Reorder")
	}
}

func TestPriority(t *testing.T) {
	// A normal packet is in service; then three normal and one high
	// arrive: the high one leaves second.
	b := &Bottleneck{RateBps: 1e6, Priority: true}
	c := NewChain(nil, b)
	for i, cl := range []int{1, 1, 1, 1, 0} {
		p := pkt(100 + i)
		p.Class = cl
		c.Push(0, p)
	}
	var order []int
	c.Advance(time.Minute, func(p *Packet) { order = append(order, p.Len()) })
	if order[1] != 104 {
		t.Fatalf("order %v: high-priority packet (104 B) should leave second", order)
	}
}

// TestWindowLaw runs a fixed-window sender through a chain in virtual time:
// throughput = min(W × 8 / RTT, rate ceiling), the law the lab must obey.
func TestWindowLaw(t *testing.T) {
	cases := []struct {
		name    string
		rateBps int64
		rtt     time.Duration
		window  int // bytes
		wantBps float64
	}{
		// 100 Mbit/s, 20 ms: 64 KiB → 65,536×8/0.02 = 26.2 Mbit/s (+ the
		// serialisation of one window, small here).
		{"64KiB/20ms/100M", 100e6, 20 * time.Millisecond, 65536, 0},
		{"32KiB/20ms/100M", 100e6, 20 * time.Millisecond, 32768, 0},
		{"1MiB/20ms/100M (rate-bound)", 100e6, 20 * time.Millisecond, 1 << 20, 100e6},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const seg = 1000
			fwd := NewChain(nil, &Bottleneck{RateBps: tc.rateBps}, &Delay{Delay: tc.rtt / 2})
			back := NewChain(nil, &Delay{Delay: tc.rtt / 2})
			inflight, delivered := 0, 0
			now := time.Duration(0)
			end := 10 * time.Second
			for now < end {
				fwd.Advance(now, func(p *Packet) { delivered += p.Len(); back.Push(p.Time, pkt(40)) })
				back.Advance(now, func(*Packet) { inflight -= seg })
				for inflight+seg <= tc.window {
					fwd.Push(now, pkt(seg))
					inflight += seg
				}
				n1, ok1 := fwd.Next()
				n2, ok2 := back.Next()
				switch {
				case ok1 && ok2:
					now = min(n1, n2)
				case ok1:
					now = n1
				case ok2:
					now = n2
				default:
					t.Fatal("stalled")
				}
			}
			got := float64(delivered) * 8 / end.Seconds()
			want := tc.wantBps
			if want == 0 {
				// Below the BDP the sender is ack-clocked: each segment
				// of the window (whole segments only) comes back after one
				// RTT plus its own serialisation. Nothing arrives in the
				// first one-way delay.
				weff := float64(tc.window / seg * seg)
				cycle := tc.rtt + time.Duration(seg*8*1e9/tc.rateBps)
				want = weff * 8 / cycle.Seconds() * (end - tc.rtt/2).Seconds() / end.Seconds()
			}
			// Within one window per 10 s of the law (the window in flight
			// at the end is not counted).
			if math.Abs(got-want) > float64(tc.window)*8/end.Seconds()+1 {
				t.Fatalf("goodput %.0f bit/s, want %.0f", got, want)
			}
		})
	}
}

func repeat(v, n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = v
	}
	return s
}
