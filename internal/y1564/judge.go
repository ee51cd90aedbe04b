package y1564

import (
	"fmt"
	"time"

	"github.com/fullpipe/fullpipe/internal/stats"
	"github.com/fullpipe/fullpipe/internal/units"
)

// Interval is one 1-second interval of a stream as its receiver counted
// it: frames sent in it (received + lost) and lost.
type Interval struct {
	Sent uint64 `json:"sent"`
	Lost uint64 `json:"lost"`
}

// Delay is the round trip of the latency probes a stream carried: the
// distribution of the Replies' (µs, the one shape of a delay
// distribution; the engine's UDP latency, whose probes these are, in the
// same keys).
type Delay struct {
	Probes  uint64 `json:"probes"`
	Replies uint64 `json:"replies"`
	stats.Delays
}

// Measure is what one step's stream measured, in frames and layer-2
// bits (the runner converts the engine's UDP figures).
type Measure struct {
	Seconds    float64 // the step's time
	OfferedBps float64 // what the generator sent, layer 2
	IRBps      float64 // what arrived, layer 2
	SentFrames uint64
	LostFrames uint64
	Delay      *Delay // nil: not measured (no probes in the stream)
	Intervals  []Interval
	// GeneratorLimited: this host could not send the step's rate; the
	// figures are its generator's, not the path's.
	GeneratorLimited bool
	// SenderMaxSlip is the most the sender fell behind its schedule; it
	// caught up in a burst of about OfferedBps × SenderMaxSlip.
	SenderMaxSlip time.Duration
	// ReceiverDrops is how many of LostFrames the receiving host's own
	// socket dropped for want of buffer: the host's loss, not the path's.
	ReceiverDrops uint64
	// SenderLate counts frames sent more than 1 ms behind schedule.
	SenderLate uint64
}

// Figures are a step's figures as the report shows them: IR, FLR, FTD,
// FDV and availability.
type Figures struct {
	Seconds          float64       `json:"seconds"`
	OfferedBps       float64       `json:"offered_bps"`
	IRBps            float64       `json:"ir_bps"`
	SentFrames       uint64        `json:"sent_frames"`
	LostFrames       uint64        `json:"lost_frames"`
	FLRPct           float64       `json:"flr_pct"`
	Delay            *Delay        `json:"delay,omitempty"`
	FTD              time.Duration `json:"ftd_ns"` // mean round trip of the probes; 0 with Delay nil
	FDV              time.Duration `json:"fdv_ns"` // p99 − min round trip
	AvailPct         float64       `json:"avail_pct"`
	IntervalsS       int           `json:"intervals"`             // 1-second intervals counted
	UnavailableS     int           `json:"unavailable_intervals"` // of which unavailable
	GeneratorLimited bool          `json:"generator_limited"`
	// SenderMaxSlip: the most the sender fell behind its schedule
	// (SlipBurstBytes).
	SenderMaxSlip time.Duration `json:"sender_max_slip_ns,omitempty"`
	// ReceiverDrops: of LostFrames, those the receiving socket dropped.
	ReceiverDrops uint64 `json:"receiver_drops,omitempty"`
	// SenderLate: frames the sender sent more than 1 ms behind schedule.
	SenderLate uint64 `json:"sender_late_frames,omitempty"`
}

// Delayed says whether the step measured FTD and FDV: some probe
// came back.
func (f Figures) Delayed() bool { return f.Delay != nil && f.Delay.Replies > 0 }

// Read turns a step's measure into its figures. FTD is the mean round
// trip of the latency probes (this host → responder → this host, under
// the step's load, in both directions of the path); FDV is the 99th
// percentile of those round trips less their minimum (Y.1563's two-point
// delay variation at a 99 % quantile: a step carries hundreds of probes,
// too few for 99.9 %). unavailFLRPct is Availability's threshold.
func Read(m Measure, unavailFLRPct float64) Figures {
	f := Figures{Seconds: m.Seconds, OfferedBps: m.OfferedBps, IRBps: m.IRBps, SentFrames: m.SentFrames,
		LostFrames: m.LostFrames, Delay: m.Delay, GeneratorLimited: m.GeneratorLimited, SenderMaxSlip: m.SenderMaxSlip,
		ReceiverDrops: min(m.ReceiverDrops, m.LostFrames), SenderLate: m.SenderLate}
	if m.SentFrames > 0 {
		f.FLRPct = float64(min(m.LostFrames, m.SentFrames)) / float64(m.SentFrames) * 100
	}
	if d := m.Delay; d != nil && d.Replies > 0 {
		f.FTD, f.FDV = ns(d.MeanUs), max(0, ns(d.P99Us)-ns(d.MinUs))
	}
	f.AvailPct, f.UnavailableS, f.IntervalsS = Availability(m.Intervals, unavailFLRPct)
	return f
}

// ns is a delay in µs as a Duration, truncated to the nanosecond: FTD
// and FDV are durations, compared with the SAC's (a config's, in ns as
// every config's durations are).
func ns(us float64) time.Duration { return time.Duration(us * 1e3) }

// Availability is the percent of 1-second intervals that were available,
// with the count of unavailable ones and of those counted. An interval is
// unavailable when its frame loss ratio is above unavailFLRPct (MEF 10.3's
// availability with Δt = 1 s and n = 1: each second judged alone, no
// sliding window of consecutive seconds). Intervals in which nothing was
// sent are not counted; with none counted availability is 0.
func Availability(ivs []Interval, unavailFLRPct float64) (pct float64, unavailable, counted int) {
	for _, iv := range ivs {
		if iv.Sent == 0 {
			continue
		}
		counted++
		if float64(min(iv.Lost, iv.Sent))/float64(iv.Sent)*100 > unavailFLRPct {
			unavailable++
		}
	}
	if counted == 0 {
		return 0, 0, 0
	}
	return float64(counted-unavailable) / float64(counted) * 100, unavailable, counted
}

// Verdict is a step's, a service's or a run's.
type Verdict string

// Verdicts.
const (
	Pass Verdict = "PASS"
	Fail Verdict = "FAIL"
	// HostLimited: this host's generator could not send the step's rate;
	// the step says nothing of the path.
	HostLimited Verdict = "HOST-LIMITED"
)

// Policing is what the policing step showed of the network's policer.
type Policing string

// Policing flags.
const (
	PolicingNone Policing = ""            // not the policing step, or it could not tell
	Policed      Policing = "policed"     // the excess above CIR + EIR was discarded
	NotPoliced   Policing = "not-policed" // traffic above CIR + EIR (and its tolerance) was carried
)

// Judgement is a step's verdict with its reasons in words.
type Judgement struct {
	Verdict      Verdict  `json:"verdict"`
	Reasons      []string `json:"reasons"`
	Policing     Policing `json:"policing,omitempty"`
	PolicedAtBps float64  `json:"policed_at_bps,omitempty"` // the IR a policer let through
	ToleranceBps float64  `json:"tolerance_bps,omitempty"`  // the IR bounds' tolerance (Tolerance)
}

func (j *Judgement) fail(f string, a ...any) {
	j.Verdict = Fail
	j.Reasons = append(j.Reasons, fmt.Sprintf(f, a...))
}

func (j *Judgement) note(f string, a ...any) {
	j.Reasons = append(j.Reasons, fmt.Sprintf(f, a...))
}

// Tolerance is how far a step's IR may lie above a policer's rate over
// seconds and still be that policer: its bucket (CBS + EBS) passes at
// once on top of the rate, bucket × 8 / seconds; two frames of counting
// at the step's edges (the receiver's interval starts at its first frame
// and ends at its last); and 0.5 % of the rate, the generator's own
// holding of its rate (below 99.5 % it is GeneratorLimited).
func Tolerance(s Service, limitBps, seconds float64) float64 {
	if seconds <= 0 {
		return limitBps
	}
	return float64(s.burst()*8)/seconds + float64(2*s.FrameBytes*8)/seconds + 0.005*limitBps
}

// JudgeStep judges a configuration or performance step of s by f.
//
//   - A CIR step, and the performance step: FLR, FTD and FDV against the
//     SAC (the performance step also availability).
//   - CIR + EIR: the IR must reach the CIR (less the SAC's FLR and the
//     counting's tolerance); frames above the CIR may be lost without
//     failing, and their delay is not judged.
//   - Policing: the IR must reach the CIR as at CIR + EIR and must not
//     exceed CIR + EIR + Tolerance. When frames were lost and the IR stayed
//     within, the network discarded the excess: "policing observed at X".
//     Above it the excess was carried: "not policed", FAIL.
//
// A step whose generator could not hold its rate is HostLimited, and so
// is one that failed on loss after its sender fell behind by more than
// the service's burst (slipped).
func JudgeStep(s Service, st Step, f Figures) Judgement {
	j := Judgement{Verdict: Pass}
	if f.GeneratorLimited && !heldAbove(st, f) {
		generatorLimited(st, f, &j)
		return j
	}
	switch st.Kind {
	case StepCIR, StepPerf:
		judgeSAC(s, f, &j)
		if st.Kind == StepPerf {
			judgeAvail(s, f, &j)
		}
	case StepEIR:
		judgeCommitted(s, f, &j)
	case StepPolicing:
		judgeCommitted(s, f, &j)
		judgePolicing(s, f, &j)
	}
	if j.Verdict == Pass && len(j.Reasons) == 0 {
		j.note("within the acceptance criteria")
	}
	if f.GeneratorLimited {
		lateAbove(s, st, f, &j)
	}
	slipped(s, st, f, &j)
	hostDropped(s, f, &j)
	return j
}

// heldAbove says whether a generator-limited step above the CIR is
// judged all the same: its sender held the step's average rate (it was
// limited only by being late, catching up in bursts). A token bucket
// passes at most its rate × T + its bucket whatever the input's bursts,
// so "not policed" still stands; what the bursts may do is waste tokens
// during a stall and lower the IR (lateAbove).
func heldAbove(st Step, f Figures) bool {
	return (st.Kind == StepEIR || st.Kind == StepPolicing) && f.SentFrames > 0 && f.OfferedBps >= 0.995*st.RateBps
}

// generatorLimited says why a step is not judged: its sender fell short
// of the rate, or kept it only in catch-up bursts.
func generatorLimited(st Step, f Figures, j *Judgement) {
	j.Verdict = HostLimited
	if f.OfferedBps < 0.995*st.RateBps || f.SentFrames == 0 {
		j.note("this host sent %s of the %s asked: its generator's limit, not the path's; the step is not judged", units.FormatRate(f.OfferedBps), units.FormatRate(st.RateBps))
		return
	}
	j.note("this host sent %.3g %% of its frames more than 1 ms behind schedule (up to %v): it held %s only in catch-up bursts, its generator's limit, not the path's; the step is not judged",
		float64(f.SenderLate)/float64(f.SentFrames)*100, f.SenderMaxSlip.Round(time.Microsecond), units.FormatRate(st.RateBps))
}

// lateAbove qualifies the judgement of a step above the CIR whose sender
// was late in bursts (heldAbove): an IR below the CIR may be the stalls'
// doing, so that failure is HostLimited; the rest stands, with a note.
func lateAbove(s Service, st Step, f Figures, j *Judgement) {
	late := float64(f.SenderLate) / float64(max(f.SentFrames, 1)) * 100
	if j.Verdict == Fail && j.Policing != NotPoliced {
		j.Verdict = HostLimited
		j.note("this host sent %.3g %% of its frames late (up to %v): a policer wastes its tokens while a sender stalls, so an IR below the CIR may be the host's doing; the step is not judged", late, f.SenderMaxSlip.Round(time.Microsecond))
		return
	}
	j.note("this host sent %.3g %% of its frames late (up to %v) but held the step's average rate; judged all the same, as a policer passes no more than its rate and bucket whatever the bursts", late, f.SenderMaxSlip.Round(time.Microsecond))
	if lasts := time.Duration(float64(s.burst()*8) / (s.CIRBps + s.EIRBps) * 1e9); j.Policing == Policed && f.SenderMaxSlip > lasts {
		j.note("the policed rate may read low: the sender stalled %v, longer than the bucket lasts at CIR+EIR (%v), and a policer's tokens go unused while it is full", f.SenderMaxSlip.Round(time.Millisecond), lasts.Round(time.Millisecond))
	}
}

// hostDropped turns a step that failed on loss into HostLimited when,
// without the frames the receiving host's own socket dropped, its FLR
// would have been within the SAC: the path delivered them.
func hostDropped(s Service, f Figures, j *Judgement) {
	if j.Verdict != Fail || f.ReceiverDrops == 0 || f.SentFrames == 0 {
		return
	}
	pathFLR := float64(f.LostFrames-f.ReceiverDrops) / float64(f.SentFrames) * 100
	if pathFLR > s.SAC.MaxFLRPct {
		return
	}
	j.Verdict = HostLimited
	j.note("%d of the %d frames lost were dropped by the receiving host's own socket (its buffer was full): without them the FLR is %.3g %%, within the SAC; the step is not judged (rerun on a quieter host)",
		f.ReceiverDrops, f.LostFrames, pathFLR)
}

// SlipBurstBytes is the burst a sender that fell slip behind its
// schedule at rateBps sent to catch up: the frames it owed, rate × slip.
func SlipBurstBytes(rateBps float64, slip time.Duration) float64 {
	return rateBps * slip.Seconds() / 8
}

// slipped turns a step that failed on loss into HostLimited when its
// sender fell so far behind that its catch-up burst alone overflowed the
// service's burst (CBS + EBS): a policer drops that burst's excess even
// when the service keeps its profile on average, so the loss may be this
// host's doing, not the path's. Steps above the CIR are not touched: a
// policer's long-run output is its rate whatever the bursts, and frames
// above the CIR may be lost anyway.
func slipped(s Service, st Step, f Figures, j *Judgement) {
	burst := SlipBurstBytes(st.RateBps, f.SenderMaxSlip)
	if j.Verdict != Fail || f.LostFrames == 0 || burst <= float64(s.burst()) {
		return
	}
	j.Verdict = HostLimited
	j.note("this host's sender fell %v behind its schedule and caught up in a burst of about %.0f B, above the service's burst of %d B: the loss may be the host's doing, not the path's; the step is not judged (rerun on a quieter host)",
		f.SenderMaxSlip.Round(time.Microsecond), burst, s.burst())
}

// judgeSAC judges FLR, FTD and FDV.
func judgeSAC(s Service, f Figures, j *Judgement) {
	if f.SentFrames == 0 {
		j.fail("no frames were sent")
		return
	}
	if f.FLRPct > s.SAC.MaxFLRPct {
		j.fail("FLR %.3g %% above the SAC's %.3g %% (%d of %d frames lost)", f.FLRPct, s.SAC.MaxFLRPct, f.LostFrames, f.SentFrames)
	}
	if s.SAC.MaxFTD <= 0 && s.SAC.MaxFDV <= 0 {
		return
	}
	switch d := f.Delay; {
	case d == nil:
		j.note("FTD and FDV not measured (the engine reported no latency probes: an older responder or engine); not judged")
		return
	case d.Replies == 0:
		j.fail("none of %d latency probes came back: FTD and FDV unknown", d.Probes)
		return
	}
	if s.SAC.MaxFTD > 0 && f.FTD > s.SAC.MaxFTD {
		j.fail("FTD %v (round trip) above the SAC's %v", f.FTD.Round(time.Microsecond), s.SAC.MaxFTD)
	}
	if s.SAC.MaxFDV > 0 && f.FDV > s.SAC.MaxFDV {
		j.fail("FDV %v above the SAC's %v", f.FDV.Round(time.Microsecond), s.SAC.MaxFDV)
	}
}

// judgeAvail judges availability.
func judgeAvail(s Service, f Figures, j *Judgement) {
	switch {
	case f.IntervalsS == 0:
		j.fail("no 1-second intervals were counted: availability unknown")
	case f.AvailPct < s.SAC.MinAvailPct:
		j.fail("availability %.3g %% below the SAC's %.3g %% (%d of %d seconds unavailable)", f.AvailPct, s.SAC.MinAvailPct, f.UnavailableS, f.IntervalsS)
	}
}

// judgeCommitted checks that the IR reached the CIR at a step above it.
func judgeCommitted(s Service, f Figures, j *Judgement) {
	low := s.CIRBps*(1-s.SAC.MaxFLRPct/100) - float64(2*s.FrameBytes*8)/max(f.Seconds, 1e-9) - 0.005*s.CIRBps
	if f.IRBps < low {
		j.fail("IR %s below the CIR %s: committed frames were lost", units.FormatRate(f.IRBps), units.FormatRate(s.CIRBps))
		return
	}
	if f.LostFrames > 0 {
		j.note("IR %s reaches the CIR %s; %d frames above the CIR lost (allowed)", units.FormatRate(f.IRBps), units.FormatRate(s.CIRBps), f.LostFrames)
	}
}

// judgePolicing flags what the policing step showed.
func judgePolicing(s Service, f Figures, j *Judgement) {
	limit := s.CIRBps + s.EIRBps
	tol := Tolerance(s, limit, f.Seconds)
	j.ToleranceBps = tol
	switch {
	case f.IRBps > limit+tol:
		j.Policing = NotPoliced
		j.fail("not policed: IR %s above CIR+EIR %s + tolerance %s; the network carried traffic beyond the profile", units.FormatRate(f.IRBps), units.FormatRate(limit), units.FormatRate(tol))
	case f.LostFrames > 0 && f.OfferedBps > f.IRBps:
		j.Policing, j.PolicedAtBps = Policed, f.IRBps
		j.note("policing observed at %s: the network discarded the excess above CIR+EIR %s (offered %s, %.3g %% of frames lost)", units.FormatRate(f.IRBps), units.FormatRate(limit), units.FormatRate(f.OfferedBps), f.FLRPct)
	default:
		j.note("nothing lost at %s, within CIR+EIR %s + tolerance %s: the step cannot tell a policer from none (a longer step narrows the tolerance)", units.FormatRate(f.IRBps), units.FormatRate(limit), units.FormatRate(tol))
	}
}

// Combine is a service's (or a run's) verdict from its steps': FAIL when
// any failed, else HOST-LIMITED when any was, else PASS. None: FAIL.
func Combine(vs ...Verdict) Verdict {
	if len(vs) == 0 {
		return Fail
	}
	out := Pass
	for _, v := range vs {
		switch v {
		case Fail:
			return Fail
		case HostLimited:
			out = HostLimited
		}
	}
	return out
}
