package result

import (
	"time"

	"github.com/fullpipe/fullpipe/internal/cpuload"
	"github.com/fullpipe/fullpipe/internal/rfc6349"
	"github.com/fullpipe/fullpipe/internal/train"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// The RFC 6349 method's document (fullpipe rfc6349) and its parts, one
// per step; docs/json.md documents the keys.

// RFC6349Config is one RFC 6349 run.
type RFC6349Config struct {
	CIRBps       int64              `json:"cir_bps"`
	Directions   []vocab.Direction  `json:"directions"`
	Duration     time.Duration      `json:"throughput_duration_ns"`
	StepDuration time.Duration      `json:"step_duration_ns"` // each window-walk and shaping test
	MaxWindow    int                `json:"max_window_bytes,omitempty"`
	Link         string             `json:"link"`
	Thresholds   rfc6349.Thresholds `json:"thresholds"`
	ShapingConns int                `json:"shaping_connections"`
	CC           string             `json:"cc,omitempty"` // walk and throughput steps; "" = the sender's default
	// SweepPoints, when > 0, adds a window sweep after the walk: that many
	// exact windows from 3 × BDP / SweepPoints to 3 × BDP, StepDuration
	// each, with reno and one-way delay probes (sweep window).
	SweepPoints int `json:"sweep_points,omitempty"`
}

// RFC6349 is the whole run; its JSON keys are documented in docs/json.md.
type RFC6349 struct {
	Meta
	Config     RFC6349Config                      `json:"config"`
	MTU        PathMTU                            `json:"mtu"`
	RTT        Baseline                           `json:"rtt"`
	BB         BB                                 `json:"bb"`
	BDP        BDP                                `json:"bdp"`
	Walk       []WalkRow                          `json:"walk"`
	Sweep      map[vocab.Direction]*WindowSweep   `json:"sweep,omitempty"`
	Throughput map[vocab.Direction]*ThroughputRow `json:"throughput"`
	Shaping    map[vocab.Direction]*ShapingRow    `json:"shaping_by_direction"`
	ShapingSum ShapingRow                         `json:"shaping,omitzero"`
	Verdict    Verdict                            `json:"verdict"`
	Diagnosis  []rfc6349.Finding                  `json:"diagnosis"`
	Warnings   []string                           `json:"warnings"`
	Partial    bool                               `json:"partial"`
	Reason     string                             `json:"partial_reason,omitempty"`
}

// PathMTU is step 1.
type PathMTU struct {
	UpBytes    int  `json:"up_bytes"`
	DownBytes  int  `json:"down_bytes"`
	LocalBytes int  `json:"local_bytes"`
	ICMPSeen   bool `json:"icmp_seen"`
	Probes     int  `json:"probes"`
}

// Baseline is step 2's baseline and its cross-checks against TCP's own
// minimum RTT (rfc6349.BaselineAgrees).
type Baseline struct {
	BaselineMs float64 `json:"baseline_ms"` // what the BDP is built on: the UDP minimum, or TCP's when that disagreed
	Source     string  `json:"baseline_source"`
	Probes     int     `json:"probes"`
	// UDPMinMs is each series' minimum of UDP probes before any load: one,
	// or two when the first disagreed with TCP.
	UDPMinMs []float64 `json:"udp_min_ms"`
	// ControlTCPMinMs is the kernel's minimum RTT on the control
	// connections of those series (handshake and frames).
	ControlTCPMinMs float64 `json:"control_tcp_min_ms"`
	// TCPMinMs is TCP's own minimum RTT in the throughput test, the lower
	// of the directions; TCPMinUpMs on the client's sending sockets,
	// TCPMinDownMs on the responder's.
	TCPMinMs     float64 `json:"tcp_min_ms"`
	TCPMinUpMs   float64 `json:"tcp_min_up_ms,omitempty"`
	TCPMinDownMs float64 `json:"tcp_min_down_ms,omitempty"`
	// CrossCheck is "" while every TCP figure agrees with the baseline,
	// else what disagreed (also among the warnings).
	CrossCheck string `json:"cross_check,omitempty"`
}

// BB is step 2's bottleneck bandwidth, at layer 2 (comparable to the CIR).
type BB struct {
	UpBps       float64 `json:"up_bps"`
	DownBps     float64 `json:"down_bps"`
	CIRBps      int64   `json:"cir_bps"`
	UpLossPct   float64 `json:"up_loss_pct"`
	DownLossPct float64 `json:"down_loss_pct"`
	Method      string  `json:"method"`
	// Search lists the UDP streams of the rate search, in order.
	Search []BBProbe `json:"search"`
	// LineBER reads a direction's line loss (random loss, as step 2 found
	// it) as bit errors: the BER that would lose that share of its
	// packets (package ber, one packet size). One size cannot tell bit
	// errors from other random loss (RFC 2544's sizes can: fullpipe
	// rfc2544), so this is the BER if all of the loss is bit errors.
	LineBER []LineBER `json:"line_ber,omitempty"`
}

// LineBER is the line loss of one direction read as bit errors.
type LineBER struct {
	Direction vocab.Direction `json:"direction"`
	IPBytes   int             `json:"ip_bytes"` // the streams' packet size: the bits a bit error can hit
	Sent      uint64          `json:"sent"`     // the two streams' packets (quarter CIR and CIR)
	Lost      uint64          `json:"lost"`
	BER       float64         `json:"ber"`      // maximum likelihood
	BERHigh   float64         `json:"ber_high"` // its upper 95 % profile-likelihood bound
}

// BBProbe is one paced UDP stream of the bottleneck-bandwidth search, at
// layer 2 (IP packets plus the link's framing).
type BBProbe struct {
	Direction   vocab.Direction `json:"direction"`
	SentBps     float64         `json:"sent_bps"` // the rate asked
	ReceivedBps float64         `json:"received_bps"`
	LossPct     float64         `json:"loss_pct"`
	// What the sending end did: the rate it sent at (layer 2, as SentBps),
	// its datagrams sent more than 1 ms behind schedule, its CPU, and
	// whether that held the probe back (HostLimit, in words).
	SenderSentBps   float64       `json:"sender_sent_bps"`
	SenderLatePct   float64       `json:"sender_late_pct"`
	SenderMaxSlipMs float64       `json:"sender_max_slip_ms"`
	SenderCPU       *cpuload.Load `json:"sender_cpu,omitempty"`
	HostLimit       string        `json:"host_limit,omitempty"`
}

// BDP is BB × RTT / 8 per direction.
type BDP struct {
	UpBytes   float64 `json:"up_bytes"`
	DownBytes float64 `json:"down_bytes"`
}

// WalkRow is one window of step 3.
type WalkRow struct {
	Direction      vocab.Direction `json:"direction"`
	Percent        int             `json:"percent_of_bdp"`
	WindowBytes    int             `json:"window_bytes"`
	Connections    int             `json:"connections"`
	IdealBps       float64         `json:"ideal_bps"`
	ActualBps      float64         `json:"actual_bps"`
	EfficiencyPct  float64         `json:"efficiency_pct"`
	BufferDelayPct float64         `json:"buffer_delay_pct"`
	RetransPct     float64         `json:"retrans_pct"`
}

// ThroughputRow is step 4 in one direction.
type ThroughputRow struct {
	WindowBytes    int       `json:"window_bytes"`
	Connections    int       `json:"connections"`
	IdealBps       float64   `json:"ideal_bps"`
	ActualBps      float64   `json:"actual_bps"`
	TTR            float64   `json:"ttr"`
	EfficiencyPct  float64   `json:"efficiency_pct"`
	BufferDelayPct float64   `json:"buffer_delay_pct"`
	Bytes          int64     `json:"bytes"`
	Seconds        float64   `json:"seconds"`
	MSSBytes       int       `json:"mss_bytes"`
	PerConnBps     []float64 `json:"per_connection_bps"`
	PerConnEffPct  []float64 `json:"per_connection_efficiency_pct"`
	SndbufLimPct   float64   `json:"sndbuf_limited_pct"`
	// SenderCPU is the sending end's process CPU use during the test, and
	// HostLimit says, in words, how it could have held the test back.
	SenderCPU *cpuload.Load `json:"sender_cpu,omitempty"`
	HostLimit string        `json:"host_limit,omitempty"`
	Pass      bool          `json:"pass"`
	Why       string        `json:"why"`
	// Series is the receiver's rate and the sender's RTT over the test
	// (the tcp test's series for this direction).
	Series *TCPSeries `json:"series,omitempty"`
}

// ShapingRow is step 5.
type ShapingRow struct {
	Verdict        vocab.Shaping `json:"verdict"`
	Detail         string        `json:"detail"`
	Connections    int           `json:"connections"`
	LossPct        float64       `json:"loss_pct"`
	BufferDelayPct float64       `json:"buffer_delay_pct"`
	Fairness       float64       `json:"fairness"`
	TotalBps       float64       `json:"total_bps"`
	PerConnBps     []float64     `json:"per_connection_bps"`
	RateSpreadPct  float64       `json:"rate_spread_pct"`
	// Trains is what back-to-back packet trains showed (decides the
	// verdict when it names a policer, a queue or a clean path), and
	// TrainRows each train.
	Trains    *train.Verdict `json:"trains,omitempty"`
	TrainRows []TrainRow     `json:"train_rows,omitempty"`
}

// Verdict is step 6.
type Verdict struct {
	Pass    bool     `json:"pass"`
	Reasons []string `json:"reasons"`
}

// Baseline sources.
const (
	SourceUDP = "udp" // minimum of the UDP probes (RFC 6349 §3.2.1)
	SourceTCP = "tcp" // TCP's own minimum: two UDP series disagreed with it
)
