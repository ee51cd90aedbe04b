// Package result is fullpipe's result model: what every test measured, in
// named units, with enough context (command line, configuration, both
// hosts) to trace each figure. Reports render it; JSON is its encoding and
// docs/json.md its specification.
package result

import (
	"time"

	"github.com/fullpipe/fullpipe/internal/cpuload"
	"github.com/fullpipe/fullpipe/internal/dispersion"
	"github.com/fullpipe/fullpipe/internal/stats"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// Schema is the version of the JSON encoding. Bump it on any change that
// renames or removes a key; adding keys keeps it. Decode reads every
// older version into today's types (upgrade.go); docs/json.md lists the
// versions.
//
//  1. the first.
//  2. every delay distribution in one shape, stats.Delays (count, min,
//     mean, p50, p90, p99, max, stddev, µs): the median_us of RTTStats is
//     p50_us, Y.1564's delay is in µs, not ns; rtt's summary.interval_ms
//     is gone (config.interval_ns says it).
const Schema = 2

// Meta describes a run.
type Meta struct {
	Schema  int       `json:"schema"`
	Tool    string    `json:"tool"`
	Version string    `json:"version"`
	Command []string  `json:"command"`
	Test    string    `json:"test"`
	Started time.Time `json:"started"` // wall clock, label only
	Target  string    `json:"target"`
	Client  Host      `json:"client"`
	Server  Host      `json:"server"`
	Lab     *LabRun   `json:"lab,omitempty"` // only when the test crossed a lab path (fullpipe lab exec)

	// UpgradedFrom is the schema a document was written in when Decode
	// read it from an older one into today's (Schema); absent as
	// emitted. Figures the older schema did not record read 0
	// (docs/json.md names them).
	UpgradedFrom int `json:"upgraded_from,omitempty"`
}

// LabRun is the lab's own account of a test that crossed one of its
// emulated paths: whether the lab held the path while the test ran. A
// lab-limited test's figures are the lab's (a forwarder that could not
// keep the path's schedule on a busy host), not the path's.
type LabRun struct {
	Name string `json:"name"`
	LabAccount
	// Steps is each step's own account, judged by what that step
	// measures (a method's packet trains need the forwarder far more
	// punctual than its throughput does); the run is lab-limited when
	// the whole or any step was.
	Steps []LabStep `json:"steps,omitempty"`
}

// LabAccount is the lab's figures over an interval and whether it held.
type LabAccount struct {
	LabLimited       bool    `json:"lab_limited"`
	Account          string  `json:"account"`    // the lab's figures in words: how it held, or why it did not
	IntervalS        float64 `json:"interval_s"` // from the command's (or step's) start to its end
	ForwardedPackets uint64  `json:"forwarded_packets"`
	LatePackets      uint64  `json:"late_packets"` // written more than late_by_us after their virtual departure, or read after waiting as long in the lab's input
	LateByUs         int64   `json:"late_by_us"`
	MeanLateUs       float64 `json:"mean_late_us"`    // the packets' mean lateness (a window-limited step's budget is on it)
	ForwarderDrops   uint64  `json:"forwarder_drops"` // lost by the forwarder itself, never the path
}

// LabStep is one step's LabAccount.
type LabStep struct {
	Step string `json:"step"`
	LabAccount
}

// Host is one end.
type Host struct {
	Software string `json:"software"`
	Kernel   string `json:"kernel"`
	CC       string `json:"cc"` // congestion control of its sending sockets
}

// TCPStream is one stream's figures over an interval or the whole test.
// Bytes and throughput are measured at the receiver; the TCP_INFO fields
// come from the sender's socket (Sender says which host that is).
type TCPStream struct {
	Stream           int             `json:"stream"`
	Direction        vocab.Direction `json:"direction"`
	Sender           string          `json:"sender"`
	Bytes            int64           `json:"bytes"`
	ThroughputBps    float64         `json:"throughput_bps"`
	RTTUs            int64           `json:"rtt_us"`
	RTTVarUs         int64           `json:"rttvar_us"`
	RTTMinUs         int64           `json:"rtt_min_us"`
	CwndBytes        uint64          `json:"cwnd_bytes"`
	MSSBytes         uint32          `json:"mss_bytes"`
	BytesSent        uint64          `json:"bytes_sent"`
	BytesRetrans     uint64          `json:"bytes_retrans"`
	RetransSegs      uint32          `json:"retrans_segs"`
	DeliveryRateBps  uint64          `json:"delivery_rate_bps"`
	BusyUs           int64           `json:"busy_us"`
	RwndLimitedPct   float64         `json:"rwnd_limited_pct"`
	SndbufLimitedPct float64         `json:"sndbuf_limited_pct"`
	LimitedBy        string          `json:"limited_by"`
	PeerWindowBytes  uint32          `json:"peer_window_bytes"`
	InflightMaxBytes int64           `json:"inflight_max_bytes,omitempty"`
	Writes           int64           `json:"writes,omitempty"`
	HasTCPInfo       bool            `json:"has_tcp_info"`
}

// TCPInterval is one reporting interval.
type TCPInterval struct {
	StartS        float64     `json:"start_s"`
	EndS          float64     `json:"end_s"`
	Bytes         int64       `json:"bytes"`
	ThroughputBps float64     `json:"throughput_bps"`
	RetransSegs   uint32      `json:"retrans_segs"`
	Streams       []TCPStream `json:"streams"`
}

// TCPDirection sums one direction's streams.
type TCPDirection struct {
	Bytes         int64   `json:"bytes"`
	ThroughputBps float64 `json:"throughput_bps"`
	IntervalS     float64 `json:"interval_s"`
	BytesSent     uint64  `json:"bytes_sent"`
	BytesRetrans  uint64  `json:"bytes_retrans"`
	RetransSegs   uint32  `json:"retrans_segs"`
	EfficiencyPct float64 `json:"efficiency_pct"`
	RTTMinUs      int64   `json:"rtt_min_us"`
	RTTMeanUs     int64   `json:"rtt_mean_us"`
}

// TCPSummary is the whole test. Throughput is goodput at the receiver:
// payload bytes over the span from the first to the last byte received
// (IntervalS), summed over streams and directions.
type TCPSummary struct {
	TCPDirection
	MeasuredAt      string                            `json:"measured_at"`
	WindowRequested int                               `json:"window_requested_bytes"`
	WindowEffective int64                             `json:"window_effective_bytes"`
	Directions      map[vocab.Direction]*TCPDirection `json:"directions"`
	Streams         []TCPStream                       `json:"streams"`
	LatencyIdle     *RTTStats                         `json:"latency_idle,omitempty"`
	LatencyLoaded   *RTTStats                         `json:"latency_loaded,omitempty"`
	Partial         bool                              `json:"partial"`
	PartialReason   string                            `json:"partial_reason,omitempty"`
	Load
}

// TCP is a TCP throughput test.
type TCP struct {
	Meta
	Config    TCPConfig                      `json:"config"`
	Intervals []TCPInterval                  `json:"intervals"`
	Summary   TCPSummary                     `json:"summary"`
	Series    map[vocab.Direction]*TCPSeries `json:"series,omitempty"`
}

// TCPSeries is one direction's time series: the receiver's instantaneous
// rate, from its read times, and the sender's smoothed RTT. Each is on
// its own side's clock, zero when that side started the test (the two
// zeros differ by at most the control connection's one-way delay).
type TCPSeries struct {
	RateClock string      `json:"rate_clock"` // "client" or "responder": the receiver
	WindowS   float64     `json:"rate_window_s"`
	Rate      []RatePoint `json:"rate"`
	RTTClock  string      `json:"rtt_clock"` // the sender
	RTT       []RTTPoint  `json:"rtt"`
}

// RatePoint is the goodput received in the window (TS − WindowS, TS].
type RatePoint struct {
	TS  float64 `json:"t_s"`
	Bps float64 `json:"bps"`
}

// RTTPoint is the mean smoothed RTT (TCP_INFO) of a direction's streams.
type RTTPoint struct {
	TS float64 `json:"t_s"`
	Us int64   `json:"rtt_us"`
}

// Rate series parameters: a point every RateStep, each over RateWindow.
const (
	RateWindow = 100 * time.Millisecond
	RateStep   = 50 * time.Millisecond
)

// RateSeries turns byte counts per bin into rates over a sliding window:
// a point every RateStep from the first full window on, each the bytes of
// the RateWindow before it × 8 / RateWindow.
func RateSeries(bins []int64, bin time.Duration) []RatePoint {
	if bin <= 0 || RateWindow%bin != 0 || RateStep%bin != 0 {
		return nil
	}
	w, step := int(RateWindow/bin), int(RateStep/bin)
	var out []RatePoint
	for end := w; end <= len(bins); end += step {
		var b int64
		for _, v := range bins[end-w : end] {
			b += v
		}
		out = append(out, RatePoint{TS: (time.Duration(end) * bin).Seconds(), Bps: float64(b) * 8 / RateWindow.Seconds()})
	}
	return out
}

// RTTStats is the loss of sent probes and the distribution of their
// round trips (µs, the one shape of a delay distribution).
type RTTStats struct {
	Sent     int     `json:"sent"`
	Received int     `json:"received"`
	LossPct  float64 `json:"loss_pct"`
	stats.Delays
}

// NewRTTStats summarises samples from sent probes.
func NewRTTStats(sent int, samples []time.Duration) *RTTStats {
	r := &RTTStats{Sent: sent, Received: len(samples), Delays: stats.NewDelays(samples)}
	if sent > 0 {
		r.LossPct = float64(sent-len(samples)) / float64(sent) * 100
	}
	return r
}

// RTT is an RTT test.
type RTT struct {
	Meta
	Config  RTTConfig  `json:"config"`
	Summary RTTSummary `json:"summary"`
}

// RTTSummary is an RTT test's result (the probes' gap is the config's
// interval_ns).
type RTTSummary struct {
	RTTStats
	SizeBytes int `json:"size_bytes"`
	// Rejected counts replies that answered no probe as sent (a sequence
	// number not sent, or a stamp other than the one sent with it).
	Rejected int `json:"rejected_replies"`
	// ControlTCPMinUs is the kernel's tcpi_min_rtt of the test's control
	// connection (its handshake and frames, timed by TCP, not by the
	// probes): a cross-check of MinUs. 0 if unknown.
	ControlTCPMinUs int64 `json:"control_tcp_min_rtt_us"`
	// ResponderHolds counts the replies whose responder said how long it
	// held the probe (from its kernel's receive stamp to the reply's
	// build: its own scheduling, not the path), taken out of their RTTs;
	// 0 from a responder too old to say. ResponderHoldMaxUs is the
	// longest such hold. Every RTT is also timed at the reply's kernel
	// receive stamp on the tester, not at its read.
	ResponderHolds     int     `json:"responder_holds,omitempty"`
	ResponderHoldMaxUs float64 `json:"responder_hold_max_us,omitempty"`
	Partial            bool    `json:"partial"`
	PartialReason      string  `json:"partial_reason,omitempty"`
}

// UDPInterval is one interval of a UDP test (receiver figures).
type UDPInterval struct {
	StartS        float64 `json:"start_s"`
	EndS          float64 `json:"end_s"`
	Packets       uint64  `json:"packets"`
	Bytes         uint64  `json:"bytes"`
	ThroughputBps float64 `json:"throughput_bps"`
	Lost          uint64  `json:"lost"`
	JitterUs      float64 `json:"jitter_us"`
}

// UDPSummary compares what the sender sent with what the receiver got.
type UDPSummary struct {
	Direction       vocab.Direction `json:"direction"`
	SizeBytes       int             `json:"size_bytes"`
	TargetRateBps   int64           `json:"target_rate_bps"`
	SentPackets     uint64          `json:"sent_packets"`
	SentBytes       uint64          `json:"sent_bytes"`
	SenderRateBps   float64         `json:"sender_rate_bps"`
	RecvPackets     uint64          `json:"received_packets"`
	RecvBytes       uint64          `json:"received_bytes"`
	ReceiverRateBps float64         `json:"receiver_rate_bps"`
	ReceiverIPBps   float64         `json:"receiver_ip_rate_bps"`
	IntervalS       float64         `json:"interval_s"`
	Lost            uint64          `json:"lost"`
	LossPct         float64         `json:"loss_pct"`
	Duplicates      uint64          `json:"duplicates"`
	Reordered       uint64          `json:"reordered"`
	JitterUs        float64         `json:"jitter_us"`
	// SenderLate counts datagrams the sender sent more than 1 ms (and one gap) behind
	// its schedule, and SenderMaxSlipUs is the most any was behind: a
	// sender that fell behind caught up in bursts, so its loss may be its
	// own host's doing (Load says whether it waited for a CPU).
	SenderLate      uint64  `json:"sender_late_packets"`
	SenderMaxSlipUs float64 `json:"sender_max_slip_us"`
	// GeneratorLimited says the sender could not hold the asked rate (it
	// sent less than 99.5 % of it, or fell behind its schedule): the
	// figures then describe this host's generator, not the path.
	GeneratorLimited bool `json:"generator_limited"`
	// ReceiverDrops is how many of Lost the receiving socket itself
	// dropped for want of buffer (SO_RXQ_OVFL): the receiving host's
	// loss, not the path's (on the responder, whose socket its sessions
	// share, possibly another session's too). A lower bound where the
	// socket coalesces datagrams (UDP GRO): the kernel counts a dropped
	// buffer once.
	ReceiverDrops uint64 `json:"receiver_drops,omitempty"`
	// Latency is the round trip of the stream's latency probes
	// (UDPConfig.EchoEvery), measured by the sender; nil without probes.
	Latency       *UDPLatency `json:"latency,omitempty"`
	Partial       bool        `json:"partial"`
	PartialReason string      `json:"partial_reason,omitempty"`
	Load
}

// UDPLatency is the round trip of the latency probes carried in a UDP
// stream, from the sender's send time to the reflected probe's arrival
// back at the sender (kernel receive time where available): the path
// there under the stream's load and back, plus the responder's turn
// around. Round trip, in µs: the distribution of the Replies (Count).
type UDPLatency struct {
	Probes  uint64 `json:"probes"`  // probes sent
	Replies uint64 `json:"replies"` // reflected probes received
	stats.Delays
	// IPDVUs is the mean absolute difference between consecutive
	// probes' round trips (RFC 3393 IPDV, as Y.1564's frame delay
	// variation reads it).
	IPDVUs float64 `json:"ipdv_us"`
}

// Load is each end's process CPU use while the test ran (nil where not
// measured: a kernel without schedstat, or an older responder).
type Load struct {
	ClientCPU *cpuload.Load `json:"client_cpu,omitempty"`
	ServerCPU *cpuload.Load `json:"server_cpu,omitempty"`
}

// Sender is the CPU load of the end that sent in direction dir.
func (l Load) Sender(dir vocab.Direction) *cpuload.Load {
	if dir == vocab.Down {
		return l.ServerCPU
	}
	return l.ClientCPU
}

// UDP is a UDP stream test.
type UDP struct {
	Meta
	Config    UDPConfig     `json:"config"`
	Intervals []UDPInterval `json:"intervals"`
	Summary   UDPSummary    `json:"summary"`
}

// Efficiency is RFC 6349's TCP Efficiency in percent:
// (bytes sent − bytes retransmitted) / bytes sent × 100; 0 when nothing
// was sent.
func Efficiency(sent, retrans uint64) float64 {
	if sent == 0 {
		return 0
	}
	return float64(sent-min(retrans, sent)) / float64(sent) * 100
}

// Train is one back-to-back UDP packet train and its receiver's reading
// (package train): the receiver is the responder for up, this host for
// down.
type Train struct {
	Meta
	Config        TrainConfig        `json:"config"`
	Direction     vocab.Direction    `json:"direction"`
	Packets       int                `json:"packets"`
	SizeBytes     int                `json:"size_bytes"`     // UDP payload per datagram
	OverheadBytes int                `json:"overhead_bytes"` // counted per datagram beyond the payload
	Reading       dispersion.Reading `json:"reading"`
	// LocalDrops counts datagrams a socket of either host dropped for want
	// of room during the train (the receiver's SO_RXQ_OVFL, the sender's
	// UDP SndbufErrors): when not 0 the losses are partly the hosts', not
	// the path's, and the reading is not used.
	LocalDrops uint32 `json:"local_drops"`
	Stamps     string `json:"stamps"` // receive times from the "kernel" or the "user" reader
}
