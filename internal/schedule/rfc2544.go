package schedule

import (
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/rfc2544"
)

// rfc2544Cost is an RFC 2544 run (method.RunRFC2544), bounded from above
// per direction and frame size: the throughput search's most trials
// (rfc2544.Search.MaxTrials, two bisections each done twice over), the
// latency trials each with the wait for their last probes, the ten
// frame-loss steps, and each burst search's most bursts, a burst taking
// at most BurstTime (its frames at the line rate; a generator slower than
// the line would take longer, and then queues nothing) and the drain.
// An idle RTT test comes first when latency is asked.
func rfc2544Cost(c result.RFC2544Config, rtt time.Duration) (cost, error) {
	trial := udpCost(result.UDPConfig{Duration: c.Trial, Drain: c.Drain})
	var sizes cost
	for _, f := range c.FrameSizes {
		line := rfc2544.LineFPS(float64(c.LineRateBps), f)
		var s cost
		if c.Has(result.BenchThroughput) {
			s = s.plus(trial.times(rfc2544.NewSearch(line, line*c.ResolutionPct/100, c.LossRatioPct/100).MaxTrials()))
		}
		if c.Has(result.BenchLatency) {
			s = s.plus(trial.plus(cost{run: loadedReplyWait}).times(c.LatencyTrials))
		}
		if c.Has(result.BenchLoss) {
			s = s.plus(trial.times(len(rfc2544.LossSteps())))
		}
		if c.Has(result.BenchBackToBack) {
			most := min(result.MaxRFC2544Burst, max(2, int(line*c.BurstTime.Seconds())))
			burst := cost{run: satAdd(satAdd(c.BurstTime, c.Drain), rtt), sessions: 1}
			s = s.plus(burst.times(rfc2544.NewBurstSearch(most).MaxTrials() * c.BurstTrials))
		}
		sizes = sizes.plus(s)
	}
	all := sizes.times(len(c.Directions))
	if c.Has(result.BenchLatency) {
		all = rttCost(result.RTTConfig{Count: 20}.WithDefaults()).plus(all)
	}
	return all, nil
}
