package serve

// Packet trains (wire.KindTrain): the client sends a train and the
// responder reads it from its kernel's receive stamps, or the responder
// sends one (Reverse) back to back to the client's registered UDP port.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fullpipe/fullpipe/internal/dispersion"
	"github.com/fullpipe/fullpipe/internal/flow"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// DefaultMaxTrainBytes bounds one train's bytes (--max-train-bytes): a
// train is a burst at the sender's full rate, so a responder on a public
// address wants it smaller (--public).
const DefaultMaxTrainBytes = 32 << 20

// rxInfo is what is known of a datagram's arrival: the responder's
// monotonic receive time (ns since it started: echo stamps), and the
// kernel's stamp and its socket's drop count when the socket gives them.
type rxInfo struct {
	mono    int64
	kernel  int64 // Unix ns; 0 = none
	drops   uint32
	counted bool
}

// dropCount is the socket's drop count the datagram arrived with: 0 when
// the kernel attached none, which it does only once the socket has
// dropped a datagram (a first datagram without one is a baseline of 0,
// not no baseline).
func (rx rxInfo) dropCount() uint32 {
	if rx.counted {
		return rx.drops
	}
	return 0
}

// trainState is a train session's receive side (mu guards it).
type trainState struct {
	rx *flow.TrainRecorder

	mu           sync.Mutex
	seen         bool
	drops0       uint32            // the socket's drop count at the first datagram
	drops1       uint32            // and at the latest
	userStamps   bool              // some receive times were the reader's, not the kernel's
	sndbufErrors uint64            // the namespace's UDP send-buffer errors before sending
	held         []dispersion.Hold // the reverse train's late writes (flow.TrainSent.Held)
}

// trainHeld gives the train this session receives the holds its sender
// (the client) reported in its stop.
func (ss *session) trainHeld(holds []dispersion.Hold) {
	ss.mu.Lock()
	tr := ss.train
	ss.mu.Unlock()
	if tr != nil && tr.rx != nil && len(holds) > 0 {
		tr.rx.SetHeld(holds)
	}
}

// trainData records one datagram of the train the client sends.
func (ss *session) trainData(h wire.UDPHeader, rx rxInfo) {
	ss.mu.Lock()
	started, tr := ss.started, ss.train
	ss.mu.Unlock()
	if !started || tr == nil || tr.rx == nil {
		return
	}
	ns := rx.kernel
	tr.mu.Lock()
	if ns == 0 {
		// No kernel stamp: the wall clock, the kernel stamps' own
		// (CLOCK_REALTIME), so one train never mixes two clocks.
		ns, tr.userStamps = time.Now().UnixNano(), true
	}
	d := rx.dropCount()
	if !tr.seen {
		tr.seen, tr.drops0 = true, d
	}
	tr.drops1 = d
	tr.mu.Unlock()
	tr.rx.Add(h, ns)
}

// sendTrain is the worker of a reverse train: the train, back to back,
// to the client's registered port. Datagrams the local stack dropped for
// want of room are counted in the result (the namespace's UDP
// SndbufErrors: the shared socket reports no ENOBUFS without IP_RECVERR).
func (ss *session) sendTrain(ctx context.Context) {
	ss.mu.Lock()
	peer, clk := ss.udpPeer, ss.clock
	ss.mu.Unlock()
	_, before := flow.UDPErrors()
	n, err := flow.SendTrain(ctx, flow.AddrWriter(ss.srv.udp, peer), clk, ss.trainSpec())
	_, after := flow.UDPErrors()
	ss.train.mu.Lock()
	ss.train.sndbufErrors = after - before - min(uint64(n.Retries), after-before) // a retried write counts there too
	ss.train.held = n.Held
	ss.train.mu.Unlock()
	ss.trainSent.Store(int64(n.Packets))
	if err != nil {
		ss.streamFailed(fmt.Errorf("train: %w", err))
	}
}

// trainSpec is the train this session sends: at the request's rate, or
// back to back (rate 0) when the responder has no rate budget; with one
// (--max-rate), a back-to-back train reserved the whole budget
// (sendRate) and is paced to it, so no train goes faster than what it
// reserved.
func (ss *session) trainSpec() flow.TrainSpec {
	rate := ss.req.RateBps
	if rate == 0 {
		ss.srv.mu.Lock()
		rate = ss.sendBps
		ss.srv.mu.Unlock()
	}
	return flow.TrainSpec{Cookie: ss.cookie, Packets: ss.req.TrainPackets, Size: ss.req.Size, RateBps: float64(rate)}
}

// trainResult is the responder's side of a train for the result frame.
func (ss *session) trainResult() *wire.TrainResult {
	tr := ss.train
	if tr == nil {
		return nil
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := &wire.TrainResult{Sent: int(ss.trainSent.Load()), Stamps: "kernel"}
	if tr.rx != nil {
		r := tr.rx.Reading()
		out.Reading = &r
		out.LocalDrops = tr.drops1 - tr.drops0
		if tr.userStamps {
			out.Stamps = "user"
		}
	} else {
		out.LocalDrops = uint32(min(tr.sndbufErrors, 1<<32-1))
		out.Held = tr.held
	}
	return out
}
