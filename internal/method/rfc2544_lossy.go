package method

import (
	"fmt"
	"strings"

	"github.com/fullpipe/fullpipe/internal/ber"
	"github.com/fullpipe/fullpipe/internal/frame"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/rfc2544"
	"github.com/fullpipe/fullpipe/internal/stats"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// backToBack is §26.4: BurstTrials searches for the longest burst, at
// the generator's fastest, that arrives whole; the mean of their results,
// and the buffer it implies behind the line. Each search's buffer is read
// from its longest whole burst at that burst's own send rate: what the
// line drained while a burst arrived is its span on the sender's clock,
// holds of a busy sender included, so a burst's length and its rate
// belong together (the median of every burst's rate, held short bursts
// among them, read a 50-frame queue as 48.3 beside a busy core). A
// whole burst gives only a lower bound, though: one the host sent slowly
// may not have filled the queue. The longest whole burst is sent again,
// at most rfc2544.MaxResends times, while its fastest whole send reads the
// buffer more than half a frame below what the search's usual rate (the
// median, or the shortest lost burst's when faster) would at that
// length (resent), and the fastest whole send of
// it is read: CI run 36 read a 50-frame queue as 47.95 from a 51-frame
// burst sent at 57,000 frames/s when a 52-frame one, lost, went at the
// generator's usual rate.
func (r *rfc2544Runner) backToBack(dir vocab.Direction, s *result.RFC2544Size) (*result.RFC2544BackToBack, error) {
	most := longestBurst(r.cfg, s.LineFPS)
	b2b := &result.RFC2544BackToBack{MaxTried: most}
	var gen, buffers []float64
	for range r.cfg.BurstTrials {
		srch := rfc2544.NewBurstSearch(most)
		whole := map[int]float64{} // a whole burst's fastest send rate (frames/s) by its length
		lost := map[int]float64{}  // a burst that lost frames: its fastest send rate by its length
		resends := 0
		for i, limit := 0, srch.MaxTrials(); i < limit; i++ {
			n, ok := srch.Next()
			if !ok && srch.High <= most && resends < rfc2544.MaxResends && resent(srch.Low, s.LineFPS, whole[srch.Low], max(stats.Median(gen), lost[srch.High])) {
				n, ok = srch.Low, true
				resends++
			}
			if !ok {
				break
			}
			got, fps, err := r.burst(dir, s, n)
			if err != nil {
				return b2b, err
			}
			b2b.Trials = append(b2b.Trials, result.RFC2544Burst{Frames: n, Received: got, SendFPS: fps})
			if got >= n && fps > 0 {
				gen = append(gen, fps)
				whole[n] = max(whole[n], fps)
			}
			if got < n {
				lost[n] = max(lost[n], fps)
			}
			srch.Record(n, n-min(got, n))
		}
		b2b.Longest = append(b2b.Longest, srch.Low)
		b2b.NoLimit = b2b.NoLimit || srch.Low >= most
		buffers = append(buffers, rfc2544.Buffer(srch.Low, s.LineFPS, whole[srch.Low]))
	}
	for i, n := range b2b.Longest {
		b2b.MeanLong += float64(n) / float64(len(b2b.Longest))
		b2b.BufferFrames += buffers[i] / float64(len(buffers))
	}
	b2b.GeneratorFPS = stats.Median(gen) // 0 when no burst arrived whole
	b2b.BufferBytes = b2b.BufferFrames * float64(s.FrameBytes)
	if b2b.GeneratorFPS > 0 && b2b.GeneratorFPS <= s.LineFPS {
		r.warn(fmt.Sprintf("%s %d B: the bursts left this host at %.0f frames/s, no faster than the line's %.0f: nothing queued, so back-to-back measured the generator, not a buffer", dir, s.FrameBytes, b2b.GeneratorFPS, s.LineFPS))
	}
	r.line(dir, "%s %d B: back-to-back %.0f frames (buffer ≈ %.1f frames, %.0f B)", dir, s.FrameBytes, b2b.MeanLong, b2b.BufferFrames, b2b.BufferBytes)
	return b2b, nil
}

// resent is whether a search's longest whole burst, low frames whose
// fastest whole send left at fps, should be sent again: it reads the
// buffer more than half a frame below what the usual rate would at its
// length (the median of the whole bursts' rates so far, or the shortest
// lost burst's rate when that was faster: CI run 40, beside a busy
// core, read 48.51 frames for 50 from a 51-frame burst sent at the
// search's median 27,225 frames/s), so it may have passed a queue it
// did not fill.
func resent(low int, lineFPS, fps, usual float64) bool {
	if low < 2 || fps <= 0 || usual <= 0 {
		return false
	}
	return rfc2544.Buffer(low, lineFPS, usual)-rfc2544.Buffer(low, lineFPS, fps) > 0.5
}

// longestBurst is the longest burst a search tries at a line of lineFPS
// frames/s: BurstTime's frames at the line rate, at least 2 and at most
// result.MaxRFC2544Burst.
func longestBurst(c result.RFC2544Config, lineFPS float64) int {
	return min(result.MaxRFC2544Burst, max(2, int(lineFPS*c.BurstTime.Seconds())))
}

// burstTrain is a burst of n frames of frameBytes in direction dir, back
// to back (no pace: the generator's fastest), its overhead the frame's
// headers and the gap around the payload, then the drain.
func burstTrain(c result.RFC2544Config, dir vocab.Direction, frameBytes, n int) result.TrainConfig {
	payload := frame.UDPPayload(frameBytes, c.IPv6)
	return result.TrainConfig{Packets: n, Size: payload, Overhead: frame.Wire(frameBytes) - payload,
		Reverse: dir == vocab.Down, Drain: c.Drain}
}

// burst sends one back-to-back burst of n frames of size s and returns
// how many arrived and the rate it left at (frames/s, on the sender's
// clock over the burst).
func (r *rfc2544Runner) burst(dir vocab.Direction, s *result.RFC2544Size, n int) (got int, fps float64, err error) {
	res, err := r.net.Train(r.ctx, burstTrain(r.cfg, dir, s.FrameBytes, n))
	if err != nil {
		return 0, 0, fmt.Errorf("%s %d B: burst of %d frames: %w", dir, s.FrameBytes, n, err)
	}
	rd := res.Reading
	fps = rd.SendBps / (8 * float64(frame.Wire(s.FrameBytes)))
	r.line(dir, "%s %d B: burst of %d frames sent at %.0f frames/s: %d arrived", dir, s.FrameBytes, n, fps, rd.Got)
	if res.LocalDrops > 0 {
		r.warn(fmt.Sprintf("%s %d B: a burst of %d frames lost %d in a host's own socket buffers, not on the path: the back-to-back figure is a host limit (raise net.core.rmem_max / wmem_max)", dir, s.FrameBytes, n, res.LocalDrops))
	}
	return rd.Got, fps, nil
}

// judgeLossy reads a lossy line: when loss did not depend on the rate at
// some size, zero-loss throughput is not meaningful there, and BER and a
// size-independent loss are fitted to loss against frame size over every
// size's trials at or below the line rate (ber.Fit, the IP packet's bits).
func (r *rfc2544Runner) judgeLossy(dir vocab.Direction, d *result.RFC2544Direction) *result.RFC2544Lossy {
	var lossy []string
	var all []rfc2544.Trial
	for _, s := range d.Sizes {
		all = append(all, trials(s)...)
		if s.Rate != nil && s.Rate.Verdict == ber.RateIndependent.String() {
			lossy = append(lossy, fmt.Sprintf("%d B: %.3g %% at every rate (p = %.2f)", s.FrameBytes, s.Rate.LossPct, s.Rate.P))
		}
	}
	if len(lossy) == 0 {
		return nil
	}
	line := float64(r.cfg.LineRateBps)
	e, err := rfc2544.FitBER(all, func(f int) float64 { return rfc2544.LineFPS(line, f) }, ber.EthernetIPBits)
	out := &result.RFC2544Lossy{Bits: "ip", Why: lossyWhy(lossy)}
	if err != nil {
		r.warn(fmt.Sprintf("%s: the line loses frames whatever the rate, but no BER could be fitted: %v", dir, err))
		return out
	}
	out.Verdict, out.BER, out.BERLow, out.BERHigh = e.Verdict.String(), e.BER, e.BERLow, e.BERHigh
	out.Q, out.QLow, out.QHigh, out.Sent, out.Lost, out.FitP = e.Q, e.QLow, e.QHigh, e.Sent, e.Lost, e.FitP
	r.line(dir, "%s: a lossy line: BER %.3g [%.3g, %.3g], size-independent loss %.3g (%s)", dir, e.BER, e.BERLow, e.BERHigh, e.Q, e.Verdict)
	r.warn(fmt.Sprintf("%s: a lossy line (loss does not depend on the rate): zero-loss throughput is not meaningful there; read the loss against rate and the BER (%.3g)", dir, e.BER))
	return out
}

// lossyWhy explains, in words, why zero-loss throughput is not reported
// as the path's capacity on a lossy line.
func lossyWhy(sizes []string) string {
	return "loss did not depend on the offered rate (" + strings.Join(sizes, "; ") + "): the line loses frames at any load, " +
		"so no rate is loss-free, and RFC 2544's zero-loss throughput only tells how long a trial happened to run without a loss, " +
		"not what the path carries; read the loss at each rate and the BER fitted to loss against frame size instead"
}

func (r *rfc2544Runner) warn(s string) {
	r.res.Warnings = append(r.res.Warnings, s)
	r.p.emit(Event{Kind: Warning, Step: StepRFC2544, Text: s})
}

func (r *rfc2544Runner) line(dir vocab.Direction, format string, a ...any) {
	r.p.emit(Event{Kind: Line, Step: StepRFC2544, Direction: dir, Text: fmt.Sprintf(format, a...)})
}
