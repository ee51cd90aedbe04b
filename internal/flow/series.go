package flow

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fullpipe/fullpipe/internal/tcpinfo"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// SeriesBin is the width of one bin of a receiver's byte series: every
// read adds its bytes to the bin of its read time on the test's clock.
const SeriesBin = 10 * time.Millisecond

// maxSeriesBins bounds one series' memory (8 bytes a bin): 65,536 bins of
// 10 ms are 655 s, more than the responder's longest default test (10 min).
// Reads after that are not binned; the series says so by ending.
const maxSeriesBins = 1 << 16

// Series counts the bytes one side receives in one direction, all streams
// together, per SeriesBin. Streams add concurrently; readers copy.
type Series struct {
	bins []atomic.Int64
	hi   atomic.Int64 // one past the highest bin written
}

// NewSeries makes a series for a test of about d (0: unknown, the maximum).
func NewSeries(d time.Duration) *Series {
	n := maxSeriesBins
	if d > 0 {
		n = min(n, int((d+15*time.Second)/SeriesBin))
	}
	return &Series{bins: make([]atomic.Int64, n)}
}

// Add counts n bytes read at clock time at.
func (s *Series) Add(at time.Duration, n int) {
	i := int(at / SeriesBin)
	if i < 0 || i >= len(s.bins) {
		return
	}
	s.bins[i].Add(int64(n))
	for {
		hi := s.hi.Load()
		if int64(i) < hi || s.hi.CompareAndSwap(hi, int64(i)+1) {
			return
		}
	}
}

// Len is one past the last bin with bytes in it.
func (s *Series) Len() int { return int(s.hi.Load()) }

// Bins copies bins [from, to).
func (s *Series) Bins(from, to int) []int64 {
	to = min(to, len(s.bins))
	if from >= to {
		return nil
	}
	out := make([]int64, to-from)
	for i := range out {
		out[i] = s.bins[from+i].Load()
	}
	return out
}

// RTTEvery is the period of a sender's RTT series.
const RTTEvery = 100 * time.Millisecond

// RTTSeries samples the smoothed RTT (TCP_INFO tcpi_rtt) of one side's
// sending streams every RTTEvery, the mean over the streams that answer.
type RTTSeries struct {
	mu  sync.Mutex
	pts []wire.RTTPoint
}

// Run samples conns on clk until ctx's done channel closes. Bounded by
// the test: the caller closes done when the test ends.
func (r *RTTSeries) Run(done <-chan struct{}, clk Clock, conns []*net.TCPConn) {
	if len(conns) == 0 {
		return
	}
	t := time.NewTicker(RTTEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		var sum, n int64
		for _, c := range conns {
			if i, err := tcpinfo.Of(c); err == nil && i.RTT > 0 {
				sum += i.RTT.Microseconds()
				n++
			}
		}
		if n == 0 {
			continue
		}
		r.mu.Lock()
		r.pts = append(r.pts, wire.RTTPoint{Ns: int64(clk.Since()), Us: sum / n})
		r.mu.Unlock()
	}
}

// Since copies the points from index i on, and returns the next index.
func (r *RTTSeries) Since(i int) ([]wire.RTTPoint, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i >= len(r.pts) {
		return nil, len(r.pts)
	}
	return append([]wire.RTTPoint(nil), r.pts[i:]...), len(r.pts)
}
