package result

import (
	"time"

	"github.com/fullpipe/fullpipe/internal/sweep"
)

// The sweeps' documents (fullpipe sweep window, sweep msglen).

// WindowSweepConfig is a window sweep (design scenario 7): one TCP test
// per window, each with an exact window and stamped UDP probes.
type WindowSweepConfig struct {
	Windows        []int         `json:"windows_bytes"`
	MSS            int           `json:"mss_bytes"` // what one "mss" of a window stands for
	Duration       time.Duration `json:"duration_ns"`
	Reverse        bool          `json:"reverse"`
	CC             string        `json:"cc"`
	ProbeDSCPs     []int         `json:"probe_dscps"`
	ProbeGap       time.Duration `json:"probe_gap_ns"`
	BaselineProbes int           `json:"baseline_probes"`
	Settle         time.Duration `json:"settle_ns"`
	Interval       time.Duration `json:"interval_ns"`
	Seed           uint64        `json:"seed"` // probe send times; point i uses Seed + i
}

// WindowSweep is a window sweep's
type WindowSweep struct {
	Meta
	Config        WindowSweepConfig   `json:"config"`
	Points        []sweep.WindowPoint `json:"points"`
	Analysis      sweep.SweepAnalysis `json:"analysis"`
	Partial       bool                `json:"partial"`
	PartialReason string              `json:"partial_reason,omitempty"`
}

// MsgLenSweepConfig is a message-length sweep (design scenario 5).
type MsgLenSweepConfig struct {
	Sizes      []int         `json:"sizes_bytes"`
	Duration   time.Duration `json:"duration_ns"` // per size and protocol
	UDPRateBps int64         `json:"udp_rate_bps"`
	Interval   time.Duration `json:"interval_ns"`
}

// MsgLenSweep is a message-length sweep's
type MsgLenSweep struct {
	Meta
	Config        MsgLenSweepConfig    `json:"config"`
	Points        []sweep.MsgLenPoint  `json:"points"`
	Analysis      sweep.MsgLenAnalysis `json:"analysis"`
	Partial       bool                 `json:"partial"`
	PartialReason string               `json:"partial_reason,omitempty"`
}
