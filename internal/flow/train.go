package flow

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fullpipe/fullpipe/internal/dispersion"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// maxTrainStall bounds how long a train's sender retries one datagram the
// local stack has no room for before it gives up on the train.
const maxTrainStall = time.Second

// TrainSpec is one packet train: Packets datagrams of Size bytes of UDP
// payload, back to back, or RateBps apart (of UDP payload) when it is
// not 0: a train paced at a few times the bottleneck's rate fills its
// queue or empties its bucket all the same, without first queueing in
// the sending host (its device queue, the lab's TUN ring), which would
// add to the delays the train reads.
type TrainSpec struct {
	Cookie  wire.Cookie
	Packets int
	Size    int
	RateBps float64
}

// SendTrain sends spec's train with write (after one header-only warm-up
// datagram that is not part of it), each datagram stamped with its
// sequence number (0..n-1) and its send time on clk, and returns how many
// it sent. Paced datagrams leave on a schedule from the first (the n-th
// due at n × gap), up to maxLead early, the thread sleeping in nanosleep
// between (as SendUDP). A datagram the local
// stack refuses for want of room (ENOBUFS, EAGAIN: a full device queue,
// reported when the socket has IP_RECVERR) is sent again, so the train
// has no gap the network did not make; after maxTrainStall on one
// datagram, or when ctx ends, it stops with an error.
func SendTrain(ctx context.Context, write func([]byte) error, clk Clock, spec TrainSpec) (TrainSent, error) {
	buf := make([]byte, max(spec.Size, wire.MinUDPSize))
	// A header-only datagram outside the train first: the first write of a
	// socket walks cold paths (route, neighbour) and would stretch the
	// gap after the train's first packet. The receiver ignores it.
	warm := make([]byte, wire.UDPHeaderLen)
	wire.PutUDP(warm, wire.UDPHeader{Type: wire.UDPData, Cookie: spec.Cookie, Seq: ^uint64(0)})
	_ = write(warm)
	var gap time.Duration
	if spec.RateBps > 0 {
		gap = time.Duration(float64(len(buf)) * 8 / spec.RateBps * 1e9)
		defer lockPaced()()
	}
	begin := clk.Since()
	var out TrainSent
	for seq := range spec.Packets {
		if gap > 0 {
			// Sleep until the datagram is due within maxLead; those due
			// by then go back to back (at 4 × 300 Mbit/s, bursts of up
			// to 5): a spinning sender would take a core from the hosts
			// and, in the lab, from the forwarder that is the path.
			due := begin + time.Duration(seq)*gap
			for lead := due - clk.Since(); lead > maxLead; lead = due - clk.Since() {
				if ctx.Err() != nil {
					return out, ctx.Err()
				}
				nap(min(lead, maxNap))
			}
		}
		retries, held, err := sendOne(ctx, write, clk, buf, spec.Cookie, uint64(seq))
		out.Retries += retries
		if err != nil {
			return out, err
		}
		if held >= dispersion.MinHold && len(out.Held) < dispersion.MaxHolds {
			out.Held = append(out.Held, dispersion.Hold{Seq: seq, Ns: int64(held)})
		}
		out.Packets++
	}
	return out, nil
}

// TrainSent is what SendTrain sent: the datagrams, and the writes the
// local stack refused and that were made again. Linux counts each refusal
// in the UDP SndbufErrors counter although nothing was lost, so a caller
// that reads that counter for its own drops subtracts Retries. Held is
// the datagrams whose write returned dispersion.MinHold or more after
// their stamp (the first dispersion.MaxHolds), for the receiver's
// reading (TrainRecorder.SetHeld).
type TrainSent struct {
	Packets, Retries int
	Held             []dispersion.Hold
}

// nap sleeps d in nanosleep, on this OS thread.
func nap(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	_ = unix.Nanosleep(&ts, nil)
}

// sendOne writes one train datagram, again while the local stack has no
// room for it (up to maxTrainStall), napping maxLead between tries so as
// not to spin a core; it returns how many writes were refused and how
// long after the stamp it carries the write that went returned.
func sendOne(ctx context.Context, write func([]byte) error, clk Clock, buf []byte, cookie wire.Cookie, seq uint64) (int, time.Duration, error) {
	var stalled time.Time
	for retries := 0; ; retries++ {
		stamp := clk.Since()
		wire.PutUDP(buf, wire.UDPHeader{Type: wire.UDPData, Cookie: cookie, Seq: seq, SentNs: int64(stamp)})
		err := write(buf)
		if err == nil {
			return retries, clk.Since() - stamp, nil
		}
		if !errors.Is(err, syscall.ENOBUFS) && !errors.Is(err, syscall.EAGAIN) {
			return retries, 0, err
		}
		if stalled.IsZero() {
			stalled = time.Now()
		}
		if time.Since(stalled) > maxTrainStall || ctx.Err() != nil {
			return retries + 1, 0, errors.Join(err, ctx.Err())
		}
		nap(maxLead)
	}
}

// TrainRecorder keeps what a train's receiver saw of each datagram: the
// sender's stamp and the receive time, by sequence number. Add may be
// called from one goroutine while Reading is called from another; mu
// guards the slices.
type TrainRecorder struct {
	bytes int // per datagram as rates count it: payload + overhead

	mu     sync.Mutex
	sentNs []int64
	recvNs []int64
	got    []bool
	heldNs []int64 // the sender's holds (SetHeld), nil without
	dups   int
}

// NewTrainRecorder expects a train of packets datagrams of size payload
// bytes; overhead is what the rates count beyond the payload (IP and UDP
// headers, link framing). Memory is 17 bytes per datagram.
func NewTrainRecorder(packets, size, overhead int) *TrainRecorder {
	return &TrainRecorder{bytes: size + overhead, sentNs: make([]int64, packets), recvNs: make([]int64, packets), got: make([]bool, packets)}
}

// Add records one datagram received at recvNs (any clock, the same for
// the whole train: a kernel stamp where there is one). Sequence numbers
// outside the train and second copies are not recorded.
func (r *TrainRecorder) Add(h wire.UDPHeader, recvNs int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h.Seq >= uint64(len(r.got)) {
		return
	}
	if r.got[h.Seq] {
		r.dups++
		return
	}
	r.got[h.Seq], r.sentNs[h.Seq], r.recvNs[h.Seq] = true, h.SentNs, recvNs
}

// SetHeld records the holds the train's sender reported (TrainSent.Held):
// the packets that may have left later than their stamps. Holds of
// sequence numbers outside the train, or shorter than
// dispersion.MinHold, are ignored (the list comes from the peer).
func (r *TrainRecorder) SetHeld(holds []dispersion.Hold) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range holds {
		if h.Seq < 0 || h.Seq >= len(r.got) || h.Ns < int64(dispersion.MinHold) {
			continue
		}
		if r.heldNs == nil {
			r.heldNs = make([]int64, len(r.got))
		}
		r.heldNs[h.Seq] = h.Ns
	}
}

// Reading reads the train as received so far (dispersion.Read). A lost
// datagram's send time is unknown and not needed: only received ones'
// times are read.
func (r *TrainRecorder) Reading() dispersion.Reading {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := make(dispersion.Train, len(r.got))
	for i := range t {
		t[i] = dispersion.Packet{Bytes: r.bytes, Got: r.got[i], SentAt: time.Duration(r.sentNs[i]), RecvAt: time.Duration(r.recvNs[i])}
		if r.heldNs != nil {
			t[i].Held = time.Duration(r.heldNs[i])
		}
	}
	return dispersion.Read(t)
}

// UDPErrors reads this network namespace's UDP receive- and send-buffer
// error counters (/proc/net/snmp: RcvbufErrors, SndbufErrors): datagrams a
// socket of this host dropped for want of room. Zeros when unreadable.
func UDPErrors() (rcvbuf, sndbuf uint64) {
	b, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		return 0, 0
	}
	var names []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Udp:" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i := 1; i < len(f) && i < len(names); i++ {
			v, _ := strconv.ParseUint(f[i], 10, 64)
			switch names[i] {
			case "RcvbufErrors":
				rcvbuf = v
			case "SndbufErrors":
				sndbuf = v
			}
		}
	}
	return rcvbuf, sndbuf
}
