package tester

import (
	"context"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/fullpipe/fullpipe/internal/flow"
	"github.com/fullpipe/fullpipe/internal/schedule"
	"github.com/fullpipe/fullpipe/internal/sockopt"
	"github.com/fullpipe/fullpipe/internal/sweep"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// owdProber sends timestamped echo probes (wire.EchoStamped), class by
// class in turn, each class from its own UDP socket with its DSCP, and
// keeps each reply's three times for one-way delay increments.
type owdProber struct {
	conns  []*net.UDPConn // one per class
	cookie wire.Cookie
	clk    flow.Clock
	rng    *rand.Rand // send times and class order; used by series only
	order  []int      // classes of the current round, in a random order

	mu   sync.Mutex // guards sent, got and next
	sent map[uint64]sentProbe
	got  map[uint64]sweep.Probe
	next uint64
	wg   sync.WaitGroup // the readers; each ends when its socket closes
}

// sentProbe is a probe's class and send time (ns on the prober's clock).
type sentProbe struct {
	class int
	ns    int64
}

// newOWDProber opens one UDP socket per DSCP class to the session's
// responder and starts a reader on each; close ends them.
func newOWDProber(s *session, dscps []int, seed uint64) (*owdProber, error) {
	p := &owdProber{cookie: s.accept.Cookie, clk: flow.NewClock(), rng: rand.New(rand.NewPCG(seed, seed)), sent: map[uint64]sentProbe{}, got: map[uint64]sweep.Probe{}}
	for _, d := range dscps {
		c, err := dialUDP(s)
		if err != nil {
			p.close()
			return nil, err
		}
		p.conns = append(p.conns, c)
		if d > 0 {
			rc, err := c.SyscallConn()
			if err == nil {
				err = sockopt.SetDSCP(rc, d, s.remote.IP.To4() == nil)
			}
			if err != nil {
				p.close()
				return nil, err
			}
		}
	}
	for _, c := range p.conns {
		p.wg.Add(1)
		go p.routineRead(c)
	}
	return p, nil
}

func (p *owdProber) close() {
	for _, c := range p.conns {
		c.Close()
	}
	p.wg.Wait()
}

func (p *owdProber) routineRead(c *net.UDPConn) {
	defer p.wg.Done()
	buf := make([]byte, 2048)
	for {
		n, err := c.Read(buf)
		if err != nil {
			if isClosed(err) {
				return
			}
			continue // ICMP errors surface as read errors on connected UDP
		}
		now := int64(p.clk.Since())
		h, err := wire.ParseUDP(buf[:n])
		if err != nil || h.Type != wire.UDPEchoReply || h.Cookie != p.cookie {
			continue
		}
		resp, ok := wire.EchoStamp(buf[:n])
		if !ok {
			continue
		}
		p.mu.Lock()
		if sp, ok := p.sent[h.Seq]; ok {
			if _, dup := p.got[h.Seq]; !dup {
				p.got[h.Seq] = sweep.Probe{Class: sp.class, SentNs: h.SentNs, RespNs: resp, RecvNs: now}
			}
		}
		p.mu.Unlock()
	}
}

// send sends the next probe. Classes take turns in rounds, each round in
// a random order, so that every class samples every phase of the load
// (with a fixed order and a load cycle near the round's length, one
// class would always see one half of the cycle).
func (p *owdProber) send() {
	if len(p.order) == 0 {
		p.order = p.rng.Perm(len(p.conns))
	}
	class := p.order[0]
	p.order = p.order[1:]
	p.mu.Lock()
	seq := p.next
	p.next++
	now := int64(p.clk.Since())
	p.sent[seq] = sentProbe{class, now}
	p.mu.Unlock()
	var buf [wire.EchoStampLen]byte
	wire.PutUDP(buf[:], wire.UDPHeader{Type: wire.UDPEcho, Cookie: p.cookie, Seq: seq, SentNs: now, EchoMode: wire.EchoStamped})
	_, _ = p.conns[class].Write(buf[:])
}

// owdSeriesTime is how long series takes to send n probes gap apart: the
// last goes within the n-th slot, so at most n gaps after the start.
func owdSeriesTime(n int, gap time.Duration) time.Duration {
	return schedule.SatMul(max(n, 0), gap)
}

// series sends one probe in each slot of length gap from its start, at a
// uniformly random time within the slot, until n are sent (n ≤ 0: no
// limit) or ctx ends, and returns the sequence range sent. Random times
// (stratified sampling) keep a probe period from locking onto the
// period of the load (a segment's service time, the RTT): periodic
// probes would sample a queue's sawtooth at one phase and bias the
// increment by up to a segment's time.
func (p *owdProber) series(ctx context.Context, n int, gap time.Duration) (from, to uint64) {
	p.mu.Lock()
	from = p.next
	p.mu.Unlock()
	start := time.Now()
	at := func(k int) time.Time {
		return start.Add(time.Duration(k)*gap + time.Duration(p.rng.Int64N(int64(gap))))
	}
	t := time.NewTimer(time.Until(at(0)))
	defer t.Stop()
	for sent := 0; n <= 0 || sent < n; {
		select {
		case <-ctx.Done():
			return from, from + uint64(sent)
		case <-t.C:
		}
		p.send()
		sent++
		t.Reset(time.Until(at(sent)))
	}
	return from, from + uint64(n)
}

// collect waits until probes [from, to) are all answered or wait passes,
// and returns the answered ones sent within [fromNs, toNs] (prober clock),
// in sequence order, with how many were sent in that span per class.
func (p *owdProber) collect(ctx context.Context, from, to uint64, wait time.Duration, fromNs, toNs int64) ([]sweep.Probe, []int) {
	deadline := time.Now().Add(wait)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		p.mu.Lock()
		got := 0
		for s := from; s < to; s++ {
			if _, ok := p.got[s]; ok {
				got++
			}
		}
		p.mu.Unlock()
		if uint64(got) == to-from {
			break
		}
		time.Sleep(5 * time.Millisecond) // polling a local map, not the network
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []sweep.Probe
	sent := make([]int, len(p.conns))
	for s := from; s < to; s++ {
		sp := p.sent[s]
		if sp.ns < fromNs || sp.ns > toNs {
			continue
		}
		sent[sp.class]++
		if pr, ok := p.got[s]; ok {
			out = append(out, pr)
		}
	}
	return out, sent
}
