// Package fakenet is a scripted network path for the methods' tests: the
// engine's tests (method.Network) answered from the physics of a path
// with a base RTT, a bottleneck rate and queue, a policer, random loss
// and a path MTU, in virtual time. Rates and windows follow the same
// formulas as the lab's ground truth (rfc6349.Model); packet trains go
// through the lab's own link stages (package link). It runs no socket
// and sleeps nowhere: a whole RFC 6349 run takes milliseconds.
package fakenet

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/fullpipe/fullpipe/internal/dispersion"
	"github.com/fullpipe/fullpipe/internal/dispersion/dispersiontest"
	"github.com/fullpipe/fullpipe/internal/frame"
	"github.com/fullpipe/fullpipe/internal/link"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/stats"
	"github.com/fullpipe/fullpipe/internal/sweep"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// Ethernet framing the bottleneck counts per IP packet, and the MTU of
// the sending host's interface.
const (
	framing  = frame.EthernetWire
	localMTU = frame.EthernetMTU
)

// Path is the scripted path, the same both ways. Zero fields: no limit.
type Path struct {
	BaseRTT    time.Duration // base round trip
	RateBps    float64       // the bottleneck at layer 2 (Ethernet framing counted), as a CIR is stated
	QueueBytes int           // the bottleneck's tail-drop queue, IP bytes
	// QueuePackets bounds the bottleneck's queue in packets too (0: no
	// such bound), as the lab's --queue-packets.
	QueuePackets int
	PoliceBps    float64 // a token-bucket policer in front, IP bit/s (0: none)
	BucketBytes  int     // its bucket
	LossPct      float64 // random loss on the line, at any load
	// BER is the line's bit error ratio over each IP packet's bits (the
	// lab's link.BER stage): a packet of n IP bytes is lost with
	// 1 − (1 − BER)^(8n), at any load.
	BER float64
	// GeneratorFPS is the most datagrams per second the sending host
	// gets out (0: no limit): a UDP test asked for more sends this many
	// and says it was generator-limited.
	GeneratorFPS float64
	// StallLossPct, when > 0, is a sending host that falls behind in
	// every UDP stream (a stall it catches up in a burst) and loses that
	// share of the stream to the burst, its own loss, not the path's.
	StallLossPct float64
	// TrainHold, when > 0, holds the sender of each train length's first
	// HeldTries sends once, halfway through the train, for that long
	// (scheduled out between a stamp and its write, and saying so).
	TrainHold time.Duration
	HeldTries int
	// HeldLength, with TrainHold and HeldTries, holds only trains of
	// this many packets (0: of every length).
	HeldLength int
	// HeldShorter, with TrainHold, holds every send of a train shorter
	// than this many packets as well: a host busy while a search's short
	// bursts went and idle for its longest.
	HeldShorter int
	// LateFrames, when > 0, is a sending host that falls a little behind
	// in every UDP stream: this many datagrams late, none lost to it.
	LateFrames uint64
	MTU        int  // the path MTU (0: 1500, the interface's)
	ICMP       bool // a frag-needed comes back for larger packets (else a black hole)
	// ICMPLimitPPS is the far host's ICMP rate limit (as Linux's
	// icmp_ratelimit with echo-reply in icmp_ratemask, or a router's): a
	// token bucket of that many replies/s and ICMPBurst deep (0: 1),
	// full at each run's start. 0: none.
	ICMPLimitPPS float64
	ICMPBurst    int
	// StallAfter, when > 0, makes every test after that many fail as a
	// responder that vanished: partial, wrapping result.ErrPartial.
	StallAfter int

	mu         sync.Mutex
	calls      []Call
	trainSends map[trainKey]int // sends per train length, size and direction
}

// Call is one test a method ran on the path: what Calls lists of it, and
// its config as the engine would run it (its defaults filled): a
// result.PMTUConfig, RTTConfig, UDPConfig, TCPConfig, TrainConfig,
// WindowPointConfig (a window point, its TCP test within), PingConfig or
// STAMPConfig.
type Call struct {
	What   string
	Config any
}

// Calls lists the tests run so far, in order ("tcp up 4×62500 B", ...).
func (p *Path) Calls() []string {
	var out []string
	for _, c := range p.Made() {
		out = append(out, c.What)
	}
	return out
}

// Made lists the tests run so far, in order, with their configs.
func (p *Path) Made() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Call(nil), p.calls...)
}

// Target names the fake responder.
func (p *Path) Target() string { return "fake:6349" }

// call records a test of config cfg, or says why the path runs it not.
func (p *Path) call(ctx context.Context, cfg any, format string, a ...any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, Call{What: fmt.Sprintf(format, a...), Config: cfg})
	if p.StallAfter > 0 && len(p.calls) > p.StallAfter {
		return fmt.Errorf("%w: the responder stopped answering", result.ErrPartial)
	}
	return nil
}

func (p *Path) mtu() int {
	if p.MTU > 0 {
		return min(p.MTU, localMTU)
	}
	return localMTU
}

func meta(test string) result.Meta {
	return result.Meta{Schema: result.Schema, Tool: "fullpipe", Test: test, Target: "fake:6349", Started: time.Unix(0, 0).UTC(),
		Server: result.Host{Software: "fakenet", Kernel: "none"}}
}

// checked is cfg with its defaults, or why the engine would refuse it.
func checked[C interface {
	WithDefaults() C
	Validate() error
}](cfg C) (C, error) {
	cfg = cfg.WithDefaults()
	return cfg, cfg.Validate()
}

// PMTU finds the path MTU both ways, as the probe search would.
func (p *Path) PMTU(ctx context.Context, cfg result.PMTUConfig) (*result.PMTU, error) {
	cfg, err := checked(cfg)
	if err != nil {
		return nil, err
	}
	if err := p.call(ctx, cfg, "mtu"); err != nil {
		return nil, err
	}
	m := p.mtu()
	return &result.PMTU{Meta: meta("mtu"), Config: cfg, UpBytes: m, DownBytes: m, LocalBytes: localMTU,
		ICMPSeen: p.ICMP && m < localMTU, Probes: 5 + 2*cfg.Tries*9, Timeout: max(100*time.Millisecond, 4*p.BaseRTT)}, nil
}

// RTT answers cfg.Count probes at the base RTT, less the line's loss, and
// reports TCP's minimum on the control connection as the same RTT.
func (p *Path) RTT(ctx context.Context, cfg result.RTTConfig, onReply func(uint64, time.Duration)) (*result.RTT, error) {
	cfg, err := checked(cfg)
	if err != nil {
		return nil, err
	}
	if err := p.call(ctx, cfg, "rtt %d", cfg.Count); err != nil {
		return nil, err
	}
	got := cfg.Count - int(math.Round(float64(cfg.Count)*p.LossPct/100))
	samples := make([]time.Duration, got)
	for i := range samples {
		samples[i] = p.BaseRTT
		if onReply != nil {
			onReply(uint64(i), p.BaseRTT)
		}
	}
	s := result.RTTSummary{RTTStats: *result.NewRTTStats(cfg.Count, samples), SizeBytes: cfg.Size,
		ControlTCPMinUs: p.BaseRTT.Microseconds()}
	return &result.RTT{Meta: meta("rtt"), Config: cfg, Summary: s}, nil
}

// drainIP is what leaves the bottleneck, IP bit/s, for packets of ip
// bytes: its layer-2 rate less the framing, and the policer's rate.
func (p *Path) drainIP(ip int) float64 {
	r := math.Inf(1)
	if p.RateBps > 0 {
		r = p.RateBps * float64(ip) / float64(ip+framing)
	}
	if p.PoliceBps > 0 {
		r = math.Min(r, p.PoliceBps)
	}
	return r
}

// UDP sends a paced stream: what arrives is the sent rate or the drain
// rate, whichever is lower, less the line's loss and bit errors;
// datagrams larger than the path MTU vanish. A sender asked for more
// than GeneratorFPS sends that many and says so. Latency probes
// (EchoEvery) take the base RTT, one serialisation each way, and the full
// queue's wait where the stream overloads the bottleneck.
func (p *Path) UDP(ctx context.Context, cfg result.UDPConfig, progress func(result.UDPInterval)) (*result.UDP, error) {
	cfg, err := checked(cfg)
	if err != nil {
		return nil, err
	}
	dir := vocab.Of(cfg.Reverse)
	if err := p.call(ctx, cfg, "udp %s %.0f", dir, float64(cfg.RateBps)); err != nil {
		return nil, err
	}
	ip := cfg.Size + frame.IPv4UDP
	secs := cfg.Duration.Seconds()
	rate := float64(cfg.RateBps)
	limited := p.GeneratorFPS > 0 && rate/8/float64(cfg.Size) > p.GeneratorFPS*1.005
	if limited {
		rate = p.GeneratorFPS * 8 * float64(cfg.Size)
	}
	sentIP := rate * float64(ip) / float64(cfg.Size)
	pass := (1 - p.LossPct/100) * (1 - link.BERLossProb(p.BER, ip))
	recvIP := math.Min(sentIP, p.drainIP(ip)) * pass
	if ip > p.mtu() {
		recvIP = 0
	}
	sent := uint64(rate * secs / 8 / float64(cfg.Size))
	got := uint64(math.Round(float64(sent) * recvIP / sentIP))
	late := p.LateFrames
	if p.StallLossPct > 0 {
		late = max(1, sent/100)
		got = min(got, uint64(float64(sent)*(1-p.StallLossPct/100)))
	}
	s := result.UDPSummary{Direction: dir, SizeBytes: cfg.Size, TargetRateBps: cfg.RateBps, SentPackets: sent,
		SentBytes: sent * uint64(cfg.Size), SenderRateBps: rate, RecvPackets: got, RecvBytes: got * uint64(cfg.Size),
		ReceiverRateBps: recvIP * float64(cfg.Size) / float64(ip), ReceiverIPBps: recvIP, IntervalS: secs, Lost: sent - got,
		GeneratorLimited: limited, SenderLate: late, Latency: p.latency(cfg, sent, sentIP, ip, pass)}
	if sent > 0 {
		s.LossPct = float64(sent-got) / float64(sent) * 100
	}
	var ivs []result.UDPInterval
	for t := 0.0; t < secs; t += cfg.Interval.Seconds() {
		end := math.Min(secs, t+cfg.Interval.Seconds())
		iv := result.UDPInterval{StartS: t, EndS: end, ThroughputBps: s.ReceiverRateBps,
			Packets: uint64(float64(got) * (end - t) / secs), Lost: uint64(float64(sent-got) * (end - t) / secs)}
		iv.Bytes = iv.Packets * uint64(cfg.Size)
		ivs = append(ivs, iv)
		if progress != nil {
			progress(iv)
		}
	}
	return &result.UDP{Meta: meta("udp"), Config: cfg, Intervals: ivs, Summary: s}, nil
}

// latency is a stream's latency probes (nil without EchoEvery): the base
// RTT, the probe's serialisation at the bottleneck both ways, and the
// full queue's wait when the stream (sentIP, IP bit/s) overloads it.
func (p *Path) latency(cfg result.UDPConfig, sent uint64, sentIP float64, ip int, pass float64) *result.UDPLatency {
	if cfg.EchoEvery <= 0 {
		return nil
	}
	rtt := p.BaseRTT
	if p.RateBps > 0 {
		ser := time.Duration(float64(ip+framing) * 8 / p.RateBps * 1e9)
		rtt += 2 * ser
		if sentIP > p.drainIP(ip)*1.0001 { // above the rate, not at it by rounding
			q := float64(p.QueueBytes)
			if p.QueuePackets > 0 && (q == 0 || float64(p.QueuePackets*ip) < q) {
				q = float64(p.QueuePackets * ip)
			}
			rtt += time.Duration(q * 8 / p.drainIP(ip) * 1e9)
		}
	}
	probes := sent / uint64(cfg.EchoEvery)
	replies := uint64(math.Round(float64(probes) * pass * pass))
	us := float64(rtt) / 1e3
	return &result.UDPLatency{Probes: probes, Replies: replies,
		Delays: stats.Delays{Count: int(replies), MinUs: us, MeanUs: us, P50Us: us, P90Us: us, P99Us: us, MaxUs: us}}
}

// Train sends one train through the path's link stages in virtual time,
// at 1 Gbit/s, its receive stamps with 30 µs of noise.
func (p *Path) Train(ctx context.Context, cfg result.TrainConfig) (*result.Train, error) {
	cfg, err := checked(cfg)
	if err != nil {
		return nil, err
	}
	dir := vocab.Of(cfg.Reverse)
	if err := p.call(ctx, cfg, "train %s %d×%d", dir, cfg.Packets, cfg.Size); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(uint64(cfg.Packets), uint64(cfg.Size)))
	at := -1 // no hold
	if p.TrainHold > 0 && (p.heldTrain(cfg) || cfg.Packets < p.HeldShorter) {
		at = cfg.Packets / 2
	}
	t := dispersiontest.SendHeldOnce(p.chain(rng), cfg.Packets, cfg.Size+frame.IPv4UDP, cfg.Size+cfg.Overhead, 1e9, at, p.TrainHold, 30*time.Microsecond, rng)
	return &result.Train{Meta: meta("train"), Config: cfg, Direction: dir, Packets: cfg.Packets, SizeBytes: cfg.Size,
		OverheadBytes: cfg.Overhead, Reading: dispersion.Read(t), Stamps: "kernel"}, nil
}

// trainKey is a train's length, packet size and direction.
type trainKey struct {
	packets, size int
	reverse       bool
}

// heldTrain counts a send of cfg's train length and reports whether it
// is one of the first HeldTries.
func (p *Path) heldTrain(cfg result.TrainConfig) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.trainSends == nil {
		p.trainSends = map[trainKey]int{}
	}
	k := trainKey{cfg.Packets, cfg.Size, cfg.Reverse}
	p.trainSends[k]++
	return p.trainSends[k] <= p.HeldTries && (p.HeldLength == 0 || cfg.Packets == p.HeldLength)
}

// chain builds the path's stages: MTU, policer, bottleneck, loss, delay.
func (p *Path) chain(rng *rand.Rand) func() *link.Chain {
	return func() *link.Chain {
		stages := []link.Stage{link.MTU(p.mtu(), nil)}
		if p.PoliceBps > 0 {
			stages = append(stages, link.Policer(int64(p.PoliceBps), p.BucketBytes))
		}
		if p.RateBps > 0 {
			stages = append(stages, &link.Bottleneck{RateBps: int64(p.RateBps), QueueBytes: p.QueueBytes, QueuePackets: p.QueuePackets, Framing: link.FramingEthernet})
		}
		if p.LossPct > 0 {
			stages = append(stages, link.Loss(p.LossPct/100, rng))
		}
		if p.BER > 0 {
			stages = append(stages, link.BER(p.BER, rng))
		}
		return link.NewChain(nil, append(stages, &link.Delay{Delay: p.BaseRTT / 2})...)
	}
}

// WindowPoint runs the point's TCP test and stamps its probes: the
// baseline at the base RTT, the loaded ones behind the queue the window
// builds, on the data's way. It is one call, its TCP test within.
func (p *Path) WindowPoint(ctx context.Context, cfg result.WindowPointConfig) (*result.WindowPointRun, error) {
	cfg, err := checked(cfg)
	if err != nil {
		return nil, err
	}
	if err := p.call(ctx, cfg, "window point: %s", tcpCall(cfg.TCP)); err != nil {
		return nil, err
	}
	tr := p.tcp(cfg.TCP, nil)
	run := &result.WindowPointRun{TCP: tr, BaselineSent: make([]int, len(cfg.DSCPs)), LoadedSent: make([]int, len(cfg.DSCPs))}
	half := p.BaseRTT.Nanoseconds() / 2
	probe := func(i int, at, queue int64) sweep.Probe {
		c := i % len(cfg.DSCPs)
		fwd, rev := half, half
		if cfg.TCP.Reverse {
			rev += queue
		} else {
			fwd += queue
		}
		return sweep.Probe{Class: c, SentNs: at, RespNs: at + fwd, RecvNs: at + fwd + rev}
	}
	for i := range cfg.Baseline {
		run.Baseline = append(run.Baseline, probe(i, int64(i)*cfg.BaselineGap.Nanoseconds(), 0))
		run.BaselineSent[i%len(cfg.DSCPs)]++
	}
	d := tr.Summary.Directions[vocab.Of(cfg.TCP.Reverse)]
	queue := (d.RTTMeanUs - p.BaseRTT.Microseconds()) * 1e3
	start := cfg.Settle.Nanoseconds()
	for i := 0; start+int64(i)*cfg.ProbeGap.Nanoseconds() < cfg.TCP.Duration.Nanoseconds(); i++ {
		run.Loaded = append(run.Loaded, probe(i, start+int64(i)*cfg.ProbeGap.Nanoseconds(), queue))
		run.LoadedSent[i%len(cfg.DSCPs)]++
	}
	return run, nil
}
