// Package y1564 is ITU-T Y.1564 (EtherSAM)'s mathematics: services with
// their bandwidth profile and acceptance criteria, the steps of the
// service configuration test, the judgement of each step and service,
// availability from 1-second intervals, and the service performance
// test's verdict. It is pure: no sockets, no clocks; the runner
// (internal/method) measures and hands the figures in.
//
// Rates are information rates (IR) counted at layer 2, as Y.1564 and MEF
// 10 count a service frame: the bits of each Ethernet frame from its
// destination MAC address through its FCS (frame size × 8), without the
// preamble and inter-frame gap (20 bytes a frame on the wire). A 512-byte
// frame service at a CIR of 20 Mbit/s is 4,883 frames/s. Over IPv4 and
// UDP a frame carries frame − 46 bytes of UDP payload (over IPv6 − 66).
package y1564

import (
	"fmt"
	"time"

	"github.com/fullpipe/fullpipe/internal/frame"
)

// A frame's bytes beyond its UDP payload and its IP packet are package
// frame's (frame.UDPPayload, frame.EthernetHeaderFCS).
const (
	// MinBurstBytes is the committed and excess burst assumed when a
	// service does not state its own: MEF 10.3's smallest CBS for a
	// non-zero CIR, 8 frames of 1522 bytes.
	MinBurstBytes = 12176
)

// SAC is a service's acceptance criteria.
type SAC struct {
	// MaxFLRPct is the highest frame loss ratio, percent of frames sent.
	MaxFLRPct float64 `json:"max_flr_pct"`
	// MaxFTD is the highest frame transfer delay, as measured: the mean
	// round trip of the latency probes carried in the stream (see
	// Figures.FTD). 0: not judged.
	MaxFTD time.Duration `json:"max_ftd_ns"`
	// MaxFDV is the highest frame delay variation (Figures.FDV). 0: not
	// judged.
	MaxFDV time.Duration `json:"max_fdv_ns"`
	// MinAvailPct is the lowest availability, percent of 1-second
	// intervals (Availability), judged in the service performance test.
	MinAvailPct float64 `json:"min_avail_pct"`
}

// Service is one service under test: its bandwidth profile, its frames
// and its acceptance criteria.
type Service struct {
	Name       string  `json:"name"`
	CIRBps     float64 `json:"cir_bps"` // committed information rate, layer 2 (frame bits)
	EIRBps     float64 `json:"eir_bps"` // excess information rate, layer 2; 0: none
	FrameBytes int     `json:"frame_bytes"`
	DSCP       int     `json:"dscp"`
	// BurstBytes is the policer's committed plus excess burst (CBS + EBS)
	// as far as known; 0: MinBurstBytes. It sets the policing step's
	// tolerance (Tolerance).
	BurstBytes int `json:"burst_bytes,omitempty"`
	SAC        SAC `json:"sac"`
}

// Validate checks a service's values, naming what to fix.
func (s Service) Validate() error {
	bad := func(f string, a ...any) error {
		return fmt.Errorf("service %q: "+f, append([]any{s.Name}, a...)...)
	}
	switch {
	case s.Name == "":
		return fmt.Errorf("a service needs a name (name=...)")
	case s.CIRBps <= 0:
		return bad("cir %.0f bit/s: want a committed rate above 0 (cir=20M)", s.CIRBps)
	case s.EIRBps < 0:
		return bad("eir %.0f bit/s must not be negative", s.EIRBps)
	case s.FrameBytes < 64 || s.FrameBytes > 9018:
		return bad("frame %d B: want an Ethernet frame of 64 to 9018 bytes", s.FrameBytes)
	case s.DSCP < 0 || s.DSCP > frame.MaxDSCP:
		return bad("dscp %d: want 0 to 63", s.DSCP)
	case s.BurstBytes < 0:
		return bad("burst %d B must not be negative", s.BurstBytes)
	case s.SAC.MaxFLRPct < 0 || s.SAC.MaxFLRPct > 100:
		return bad("flr %g %%: want 0 to 100", s.SAC.MaxFLRPct)
	case s.SAC.MaxFTD < 0 || s.SAC.MaxFDV < 0:
		return bad("ftd and fdv must not be negative")
	case s.SAC.MinAvailPct < 0 || s.SAC.MinAvailPct > 100:
		return bad("avail %g %%: want 0 to 100", s.SAC.MinAvailPct)
	}
	return nil
}

// burst is the service's CBS + EBS, or MinBurstBytes.
func (s Service) burst() int {
	if s.BurstBytes > 0 {
		return s.BurstBytes
	}
	return MinBurstBytes
}

// FramesPerSecond is the frame rate that carries rateBps of frame bits.
func (s Service) FramesPerSecond(rateBps float64) float64 {
	return rateBps / float64(s.FrameBytes*8)
}

// Payload is the UDP payload each of the service's frames carries:
// FrameBytes − 46 over IPv4, − 66 over IPv6.
func (s Service) Payload(ipv6 bool) int {
	return frame.UDPPayload(s.FrameBytes, ipv6)
}

// PayloadBps is the UDP payload rate of rateBps of frame bits (what the
// engine's UDP test paces).
func (s Service) PayloadBps(rateBps float64, ipv6 bool) float64 {
	return rateBps * float64(s.Payload(ipv6)) / float64(s.FrameBytes)
}

// StepKind is which of the configuration test's steps a step is.
type StepKind string

// Step kinds, in the order the test takes them.
const (
	StepCIR      StepKind = "cir"      // a fraction of the CIR
	StepEIR      StepKind = "cir+eir"  // CIR + EIR
	StepPolicing StepKind = "policing" // CIR + 125 % EIR, or 125 % CIR when EIR is 0
	StepPerf     StepKind = "performance"
)

// Step is one step of the service configuration test, or the service
// performance test.
type Step struct {
	Kind    StepKind `json:"kind"`
	Pct     float64  `json:"pct_of_cir,omitempty"` // StepCIR: percent of the CIR
	RateBps float64  `json:"rate_bps"`             // offered, layer 2
}

// Name is the step as tables head it: "25 % CIR", "CIR+EIR", "policing".
func (st Step) Name() string {
	switch st.Kind {
	case StepCIR:
		return fmt.Sprintf("%g %% CIR", st.Pct)
	case StepEIR:
		return "CIR+EIR"
	case StepPerf:
		return "performance"
	}
	return "policing"
}

// DefaultStepsPct are Y.1564's CIR steps (§ 8.1.2, informative): 25, 50,
// 75 and 100 % of the CIR.
var DefaultStepsPct = []float64{25, 50, 75, 100}

// Steps are the service configuration test's steps of s: pcts of the CIR
// (ascending, DefaultStepsPct when empty), then CIR + EIR when the
// service has an EIR, then the policing step: CIR + 125 % EIR, or 125 %
// CIR when the EIR is 0.
func Steps(s Service, pcts []float64) []Step {
	if len(pcts) == 0 {
		pcts = DefaultStepsPct
	}
	var steps []Step
	for _, p := range pcts {
		steps = append(steps, Step{Kind: StepCIR, Pct: p, RateBps: s.CIRBps * p / 100})
	}
	police := 1.25 * s.CIRBps
	if s.EIRBps > 0 {
		steps = append(steps, Step{Kind: StepEIR, RateBps: s.CIRBps + s.EIRBps})
		police = s.CIRBps + 1.25*s.EIRBps
	}
	return append(steps, Step{Kind: StepPolicing, RateBps: police})
}

// PerformanceStep is the service performance test's step of s: the CIR.
func PerformanceStep(s Service) Step {
	return Step{Kind: StepPerf, Pct: 100, RateBps: s.CIRBps}
}
