package controller

import (
	"fmt"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/result"
)

// Verdicts, as kinds.Figures and the metrics' label name them (fleet's).
const (
	VerdictPass    = fleet.VerdictPass
	VerdictFail    = fleet.VerdictFail
	VerdictPartial = fleet.VerdictPartial
)

// MaxRTT is the longest round trip a path between two agents can have:
// a geostationary satellite hop is about 0.55 s, two in a row 1.1 s, and
// 2 s leaves room for a slow tail. A minimum RTT above it is no path's
// figure, and the scheduler never sizes a slot by it.
const MaxRTT = 2 * time.Second

// implausible says why a document's figures cannot be a path's, or "":
// a minimum RTT outside 0 to MaxRTT, a negative rate, delay or loss, a
// loss above 100 %, or a STAMP reflector that held packets for a
// negative time.
func implausible(f fleet.Figures, d result.Doc) string {
	if f.RTTMs < 0 || f.RTTMs > float64(MaxRTT.Milliseconds()) {
		return fmt.Sprintf("minimum RTT %g ms: no path's is outside 0 to %v", f.RTTMs, MaxRTT)
	}
	for _, v := range []struct {
		name string
		v    float64
	}{{"throughput", f.ThroughputBps}, {"ideal rate", f.IdealBps}, {"loaded RTT", f.RTTLoadedMs}, {"buffer delay", f.BufferDelayPct},
		{"down throughput", f.DownThroughputBps}, {"down ideal rate", f.DownIdealBps}, {"down loaded RTT", f.DownRTTLoadedMs},
		{"down buffer delay", f.DownBufferDelayPct}} {
		if v.v < 0 {
			return fmt.Sprintf("%s %g is negative", v.name, v.v)
		}
	}
	for _, l := range []float64{f.LossPct, f.DownLossPct} {
		if l < 0 || l > 100 {
			return fmt.Sprintf("loss %g %% is outside 0 to 100 %%", l)
		}
	}
	if s, ok := d.(*result.STAMP); ok && (s.Summary.Residence.MinUs < 0 || s.Summary.RTT.MinUs < 0) {
		return fmt.Sprintf("STAMP residence %g µs or RTT %g µs is negative", s.Summary.Residence.MinUs, s.Summary.RTT.MinUs)
	}
	return ""
}
