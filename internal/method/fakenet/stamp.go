package fakenet

import (
	"context"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/fullpipe/fullpipe/internal/frame"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/stamp"
)

// Residence is the fake reflector's time between a test packet's receipt
// and its reply (T3 − T2).
const Residence = 20 * time.Microsecond

// STAMP answers a STAMP session from the path's physics: each test packet
// takes half the base RTT plus its serialisation at the bottleneck each
// way (no queue: the session is sparse), the line's random loss strikes
// each direction on its own (a seeded stream, so a run is replayable),
// and the reflector's clock is synchronized with ours (virtual time is
// one clock). A stateful reflector counts what it received.
func (p *Path) STAMP(ctx context.Context, cfg result.STAMPConfig) (*result.STAMP, error) {
	cfg, err := checked(cfg)
	if err != nil {
		return nil, err
	}
	if err := p.call(ctx, cfg, "stamp %d×%d B", cfg.Count, cfg.Size); err != nil {
		return nil, err
	}
	oneWay := p.BaseRTT / 2
	if p.RateBps > 0 {
		oneWay += time.Duration(float64((cfg.Size+frame.IPv4UDP+framing)*8) / p.RateBps * 1e9)
	}
	rng := rand.New(rand.NewPCG(8762, uint64(cfg.Count)))
	lost := func() bool { return p.LossPct > 0 && rng.Float64()*100 < p.LossPct }
	start := time.Unix(1_800_000_000, 0).UTC()
	recs := make([]stamp.Record, cfg.Count)
	reflected, arrivals := 0, 0
	for k := range recs {
		r := &recs[k]
		r.Seq, r.T1 = uint32(k), start.Add(time.Duration(k)*cfg.Interval)
		if lost() {
			continue
		}
		seq := uint32(k)
		if cfg.Stateful {
			seq = uint32(reflected)
		}
		reflected++
		if lost() {
			continue
		}
		arrivals++
		r.T2 = r.T1.Add(oneWay)
		r.T3 = r.T2.Add(Residence)
		r.T4 = r.T3.Add(oneWay)
		r.ReflectorSeq, r.Replies, r.Arrival, r.Synced = seq, 1, arrivals, true
	}
	res := stamp.Summarize(recs, cfg.Stateful)
	res.KernelStamps = true
	m := meta("stamp")
	m.Target, m.Server = "fake:"+strconv.Itoa(cfg.Port), result.Host{}
	return &result.STAMP{Meta: m, Config: cfg, Summary: result.NewSTAMPSummary(res, cfg)}, nil
}
