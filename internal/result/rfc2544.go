package result

import (
	"slices"
	"time"

	"github.com/fullpipe/fullpipe/internal/rfc2544"
	"github.com/fullpipe/fullpipe/internal/vocab"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// The RFC 2544 benchmarks' document (fullpipe rfc2544): throughput,
// latency, frame loss rate and back-to-back frames per frame size and
// direction, through the responder (docs/rfc2544.md).

// The benchmarks an RFC 2544 run may take (RFC2544Config.Tests), in the RFC's order (§26).
const (
	BenchThroughput = "throughput"
	BenchLatency    = "latency"
	BenchLoss       = "loss"
	BenchBackToBack = "back-to-back"
)

// Defaults of an RFC 2544 run's zero fields.
const (
	// DefaultRFC2544Trial is a trial's length: RFC 2544 §24 asks for 60 s;
	// 2 s keeps a run of 7 sizes, both ways, within minutes (see
	// docs/rfc2544.md for what shorter trials miss).
	DefaultRFC2544Trial         = 2 * time.Second
	DefaultRFC2544Resolution    = 0.5 // % of the line rate
	DefaultRFC2544LossRatio     = 0.5 // %, the second throughput goal (MLRsearch's PDR)
	DefaultRFC2544LatencyTrials = 3   // RFC 2544 §26.2: 20
	DefaultRFC2544BurstTrials   = 2   // RFC 2544 §26.4: 50
	DefaultRFC2544BurstTime     = 2 * time.Second
	DefaultRFC2544EchoEvery     = 100
	DefaultRFC2544Drain         = 300 * time.Millisecond
	DefaultRFC2544MTU           = 1500
	// MaxRFC2544Burst bounds a back-to-back burst, frames: a train's most.
	MaxRFC2544Burst = wire.MaxTrainPackets
)

// RFC2544Config is an RFC 2544 run.
type RFC2544Config struct {
	// LineRateBps is the line's rate, layer 1 (preamble and gap counted,
	// as Ethernet rates are stated): 100 % of every table. Required: the
	// tool cannot know it.
	LineRateBps int64             `json:"line_rate_bps"`
	FrameSizes  []int             `json:"frame_sizes"` // Ethernet frame bytes, FCS included (default: RFC 2544's, those the MTU allows)
	MTU         int               `json:"mtu_bytes"`   // the path's IP MTU (default 1500; 9000 adds the jumbo frame)
	IPv6        bool              `json:"ipv6"`        // the target is IPv6: payload = frame − 66
	Directions  []vocab.Direction `json:"directions"`
	Tests       []string          `json:"tests"` // throughput, latency, loss, back-to-back (default: all)
	// Trial is each stream trial's length (RFC: 60 s).
	Trial time.Duration `json:"trial_ns"`
	// Drain is how long a trial's receiver keeps counting after its sender
	// stopped (frames queued or in flight).
	Drain time.Duration `json:"drain_ns"`
	// ResolutionPct ends the throughput search when the bracket is this
	// narrow, % of the line rate; LossRatioPct is its second goal, the
	// highest rate losing at most this share.
	ResolutionPct float64 `json:"resolution_pct"`
	LossRatioPct  float64 `json:"loss_ratio_pct"`
	// LatencyTrials at the throughput rate, each with a latency probe
	// every EchoEvery frames (more often in a trial of fewer than 20 × EchoEvery frames: at least 20 probes).
	LatencyTrials int `json:"latency_trials"`
	EchoEvery     int `json:"echo_every"`
	// BurstTrials repeats the back-to-back search; BurstTime bounds the
	// longest burst tried (at the line rate).
	BurstTrials int           `json:"burst_trials"`
	BurstTime   time.Duration `json:"burst_time_ns"`
}

// WithDefaults fills the zero fields; LineRateBps has none.
func (c RFC2544Config) WithDefaults() RFC2544Config {
	if c.MTU == 0 {
		c.MTU = DefaultRFC2544MTU
	}
	if len(c.FrameSizes) == 0 {
		c.FrameSizes = rfc2544.Sizes(c.MTU)
	}
	if len(c.Directions) == 0 {
		c.Directions = bothWays()
	}
	if len(c.Tests) == 0 {
		c.Tests = []string{BenchThroughput, BenchLatency, BenchLoss, BenchBackToBack}
	}
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.ResolutionPct, DefaultRFC2544Resolution)
	def(&c.LossRatioPct, DefaultRFC2544LossRatio)
	for _, d := range []struct {
		v *time.Duration
		d time.Duration
	}{{&c.Trial, DefaultRFC2544Trial}, {&c.Drain, DefaultRFC2544Drain}, {&c.BurstTime, DefaultRFC2544BurstTime}} {
		if *d.v == 0 {
			*d.v = d.d
		}
	}
	for _, d := range []struct {
		v *int
		d int
	}{{&c.LatencyTrials, DefaultRFC2544LatencyTrials}, {&c.EchoEvery, DefaultRFC2544EchoEvery}, {&c.BurstTrials, DefaultRFC2544BurstTrials}} {
		if *d.v == 0 {
			*d.v = d.d
		}
	}
	return c
}

// Has says whether the run takes test (BenchThroughput, ...).
func (c RFC2544Config) Has(test string) bool { return slices.Contains(c.Tests, test) }

// Validate reports what is wrong with c, or nil.
func (c RFC2544Config) Validate() error {
	switch {
	case c.LineRateBps <= 0:
		return fieldErr("line_rate_bps", "the line rate is required (--rate, e.g. 100M): 100 %% of every table; the tool cannot know it")
	case c.MTU < 576 || c.MTU > 9216:
		return fieldErr("mtu_bytes", "%d: want 576 to 9216 bytes", c.MTU)
	case c.Trial < 100*time.Millisecond || c.Trial > 10*time.Minute:
		return fieldErr("trial_ns", "%v: want 100ms to 10m (RFC 2544: 60s)", c.Trial)
	case c.Drain < 0 || c.Drain > time.Minute:
		return fieldErr("drain_ns", "%v: want 0 to 1m", c.Drain)
	case c.ResolutionPct <= 0 || c.ResolutionPct > 50:
		return fieldErr("resolution_pct", "%g %%: want above 0 and up to 50 %% of the line rate", c.ResolutionPct)
	case c.LossRatioPct < 0 || c.LossRatioPct >= 100:
		return fieldErr("loss_ratio_pct", "%g %%: want 0 to below 100 %%", c.LossRatioPct)
	case c.LatencyTrials < 1 || c.LatencyTrials > 100:
		return fieldErr("latency_trials", "%d: want 1 to 100", c.LatencyTrials)
	case c.BurstTrials < 1 || c.BurstTrials > 100:
		return fieldErr("burst_trials", "%d: want 1 to 100", c.BurstTrials)
	case c.EchoEvery < 1:
		return fieldErr("echo_every", "%d: want 1 or more", c.EchoEvery)
	case c.BurstTime <= 0 || c.BurstTime > time.Minute:
		return fieldErr("burst_time_ns", "%v: want above 0 and up to 1m", c.BurstTime)
	case len(c.FrameSizes) > 32:
		return fieldErr("frame_sizes", "%d sizes: want at most 32", len(c.FrameSizes))
	}
	for i, f := range c.FrameSizes {
		if err := rfc2544.CheckSize(f, c.MTU, c.IPv6); err != nil || slices.Contains(c.FrameSizes[:i], f) {
			return fieldErr("frame_sizes", "%v: %v (each once)", c.FrameSizes, err)
		}
	}
	for i, t := range c.Tests {
		if !slices.Contains([]string{BenchThroughput, BenchLatency, BenchLoss, BenchBackToBack}, t) || slices.Contains(c.Tests[:i], t) {
			return fieldErr("tests", "%q: want throughput, latency, loss, back-to-back, each once", c.Tests)
		}
	}
	if c.Has(BenchLatency) && !c.Has(BenchThroughput) {
		return fieldErr("tests", "latency is measured at the throughput rate: add throughput to the tests")
	}
	return checkDirections(c.Directions)
}

// RFC2544 is an RFC 2544 run's document.
type RFC2544 struct {
	Meta
	Config     RFC2544Config                         `json:"config"`
	Directions map[vocab.Direction]*RFC2544Direction `json:"directions"`
	Warnings   []string                              `json:"warnings"`
}

// RFC2544Direction is one direction's tables.
type RFC2544Direction struct {
	Sizes []*RFC2544Size `json:"sizes"`
	// Lossy is set when loss did not depend on the offered rate at some
	// size (a lossy line, not a rate limit): zero-loss throughput is then
	// not meaningful, and loss and BER are reported instead.
	Lossy *RFC2544Lossy `json:"lossy,omitempty"`
}

// RFC2544Size is one frame size's results in one direction.
type RFC2544Size struct {
	FrameBytes   int     `json:"frame_bytes"`
	PayloadBytes int     `json:"payload_bytes"` // UDP payload: frame − 46 (IPv4) or − 66 (IPv6)
	LineFPS      float64 `json:"line_fps"`      // the line rate in frames/s: rate / ((frame + 20) × 8)
	// Skipped says why this size was not measured (the engine cannot send
	// it, ...).
	Skipped    string              `json:"skipped,omitempty"`
	Throughput *RFC2544Throughput  `json:"throughput,omitempty"`
	Latency    *RFC2544LatencyRow  `json:"latency,omitempty"`
	Loss       []RFC2544Trial      `json:"loss,omitempty"` // the frame loss rate table, highest load first
	BackToBack *RFC2544BackToBack  `json:"back_to_back,omitempty"`
	Rate       *RFC2544RateVerdict `json:"rate_verdict,omitempty"` // does loss depend on the offered rate
}

// RFC2544Trial is one stream trial: offered frames/s, frames sent and
// received.
type RFC2544Trial struct {
	OfferedFPS float64 `json:"offered_fps"`
	PctOfLine  float64 `json:"pct_of_line"`
	Sent       uint64  `json:"sent"`
	Received   uint64  `json:"received"`
	LossPct    float64 `json:"loss_pct"`
	// GeneratorLimited: the sender could not hold the rate; the trial
	// says nothing of the path.
	GeneratorLimited bool `json:"generator_limited,omitempty"`
	// SenderLate counts frames the sender sent more than 1 ms (and one gap) behind its
	// schedule (then in a catch-up burst), SenderMaxSlipUs the most any
	// was behind; Tries is how many times the trial was run (a trial
	// that lost frames while its sender was late or its receiver's socket
	// dropped, or a generator-limited one, is run once more: on a shared
	// host the next may pass).
	SenderLate uint64 `json:"sender_late,omitempty"`
	// ReceiverDrops counts frames the receiving socket dropped for want
	// of buffer: the receiving host's loss, counted in the loss.
	ReceiverDrops   uint64  `json:"receiver_drops,omitempty"`
	SenderMaxSlipUs float64 `json:"sender_max_slip_us,omitempty"`
	Tries           int     `json:"tries,omitempty"`
}

// RFC2544Throughput is §26.1's throughput and the search's second goal.
type RFC2544Throughput struct {
	// ZeroLossFPS is the highest rate tried with no frame lost (0: none);
	// LossRatioFPS the highest with at most the config's loss ratio lost.
	ZeroLossFPS  float64 `json:"zero_loss_fps"`
	ZeroLossPct  float64 `json:"zero_loss_pct_of_line"`
	LossRatioFPS float64 `json:"loss_ratio_fps"`
	LossRatioPct float64 `json:"loss_ratio_pct_of_line"`
	// GeneratorLimitedFPS is the rate at which this host's generator
	// could not keep up, and the search stopped (0: it never fell short).
	GeneratorLimitedFPS float64        `json:"generator_limited_fps,omitempty"`
	Trials              []RFC2544Trial `json:"trials"`
}

// RFC2544LatencyRow is §26.2's latency at the throughput rate: the round
// trip of the latency probes inside the stream (there under load, and
// back), over LatencyTrials trials, µs. Min and Max are over all trials,
// the others the trials' mean.
type RFC2544LatencyRow struct {
	RateFPS float64       `json:"rate_fps"`
	Trials  []*UDPLatency `json:"trials"`
	Summary UDPLatency    `json:"summary"`
	// ExpectedUs is what the path's arithmetic expects unloaded: the base
	// round trip (the run's idle RTT) plus one serialisation of the frame
	// each way at the line rate; 0 when the base RTT is not known.
	ExpectedUs float64 `json:"expected_us,omitempty"`
	BaseRTTUs  float64 `json:"base_rtt_us,omitempty"`
}

// RFC2544BackToBack is §26.4's back-to-back frames: the longest burst at
// the generator's fastest with no loss, per repetition, and the buffer it
// implies.
type RFC2544BackToBack struct {
	Longest  []int   `json:"longest_frames"` // per repetition
	MeanLong float64 `json:"mean_longest_frames"`
	MaxTried int     `json:"max_frames"` // the longest burst tried (BurstTime at the line rate)
	// GeneratorFPS is the rate the bursts left this host at (their
	// sender's clock), frames/s. Below the line rate no burst queues.
	GeneratorFPS float64 `json:"generator_fps"`
	// BufferFrames = (longest − 1) × (1 − line / generator): the frames
	// the longest burst left waiting, with the generator's rate that
	// burst's own (a held sender's burst arrives slower), the mean over
	// the searches; BufferBytes counts them in frame bytes.
	BufferFrames float64        `json:"buffer_frames"`
	BufferBytes  float64        `json:"buffer_bytes"`
	NoLimit      bool           `json:"no_limit"` // the longest burst tried passed: the buffer is at least this
	Trials       []RFC2544Burst `json:"trials"`
}

// RFC2544Burst is one burst.
type RFC2544Burst struct {
	Frames   int     `json:"frames"`
	Received int     `json:"received"`
	SendFPS  float64 `json:"send_fps"`
}

// RFC2544RateVerdict is ber.JudgeRate over one size's trials at or below
// the line rate.
type RFC2544RateVerdict struct {
	Verdict string  `json:"verdict"` // "rate-independent loss", "rate-dependent loss", "no loss", "too few losses"
	LossPct float64 `json:"loss_pct"`
	Chi2    float64 `json:"chi2"`
	DF      int     `json:"df"`
	P       float64 `json:"p"`
}

// RFC2544Lossy is the lossy line's reading: loss against frame size
// fitted to bit errors and a size-independent loss (ber.Fit, the lab's IP
// bits), each with its 95 % interval.
type RFC2544Lossy struct {
	Why     string  `json:"why"`
	Verdict string  `json:"verdict"` // ber's: "bit errors", "size-independent loss", ...
	BER     float64 `json:"ber"`
	BERLow  float64 `json:"ber_low"`
	BERHigh float64 `json:"ber_high"`
	Q       float64 `json:"q"` // size-independent loss probability
	QLow    float64 `json:"q_low"`
	QHigh   float64 `json:"q_high"`
	Sent    uint64  `json:"sent"`
	Lost    uint64  `json:"lost"`
	FitP    float64 `json:"fit_p"`
	Bits    string  `json:"bits"` // which bits a bit error hits: "ip" (frame − 18)
}
