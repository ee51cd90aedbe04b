package result

import (
	"math"
	"time"

	"github.com/fullpipe/fullpipe/internal/frame"
	"github.com/fullpipe/fullpipe/internal/ping"
)

// The single-ended tests' document (fullpipe ping, fullpipe unreach): to
// any host, no responder (docs/single.md).

// The probes a single-ended test sends.
const (
	ProbeEcho    = "echo"    // ICMP echo requests
	ProbeUnreach = "unreach" // UDP datagrams to a closed port, answered by ICMP port unreachable
)

// The bounds and defaults of a single-ended test.
const (
	// MaxPingCount bounds the probes of one run (or one trial): 3 words
	// each in memory.
	MaxPingCount = 100_000
	// MinPingInterval is the shortest gap between probes; 1/it is the
	// highest rate a rate search may ask (MaxPingRate).
	MinPingInterval = 50 * time.Microsecond
	MaxPingRate     = 20_000
	// MinPingSize is the smallest payload: the run's token and the
	// probe's sequence number; MaxPingSize fills a 1500-byte IPv4 packet
	// (ICMP's header is as long as UDP's).
	MinPingSize = 12
	MaxPingSize = frame.EthernetMTU - frame.IPv4UDP
	// MaxPingRun bounds one run's sending time, and MaxPingWait the wait
	// for late replies after it.
	MaxPingRun  = time.Hour
	MaxPingWait = time.Minute

	DefaultPingCount      = 20
	DefaultPingInterval   = 100 * time.Millisecond
	DefaultPingSize       = 56 // ping's: a 84-byte IP packet
	DefaultUnreachPort    = 33434
	DefaultPingWait       = time.Second
	DefaultPingMinRate    = 10
	DefaultPingMaxRate    = 10_000
	DefaultPingTrial      = 2 * time.Second
	DefaultPingLossRatio  = 0.005
	DefaultPingResolution = 0.05
)

// PingConfig is a single-ended test: one run of Count probes Interval
// apart, or (RateSearch) a search for the highest rate of probes with no
// loss and with a loss ratio at most LossRatio, in trials of
// TrialDuration.
type PingConfig struct {
	Probe    string        `json:"probe"`       // "echo" (default) or "unreach"
	Count    int           `json:"count"`       // one run's probes
	Interval time.Duration `json:"interval_ns"` // one run's gap between probes
	Size     int           `json:"size_bytes"`  // ICMP echo data or UDP payload (≥ 12)
	Port     int           `json:"port"`        // unreach: the closed UDP port (33434, traceroute's)
	Wait     time.Duration `json:"wait_ns"`     // after a run's last probe, the wait for late replies
	// The rate search.
	RateSearch    bool          `json:"rate_search"`
	MinRate       float64       `json:"min_rate_pps"`
	MaxRate       float64       `json:"max_rate_pps"`
	TrialDuration time.Duration `json:"trial_ns"`
	LossRatio     float64       `json:"loss_ratio"` // the second target, e.g. 0.005
	Resolution    float64       `json:"resolution"` // relative, e.g. 0.05
}

// WithDefaults fills the zero fields.
func (c PingConfig) WithDefaults() PingConfig {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	if c.Probe == "" {
		c.Probe = ProbeEcho
	}
	if c.Count == 0 {
		c.Count = DefaultPingCount
	}
	if c.Interval == 0 {
		c.Interval = DefaultPingInterval
	}
	if c.Size == 0 {
		c.Size = DefaultPingSize
	}
	if c.Port == 0 && c.Probe == ProbeUnreach {
		c.Port = DefaultUnreachPort
	}
	if c.Wait == 0 {
		c.Wait = DefaultPingWait
	}
	if c.RateSearch {
		def(&c.MinRate, DefaultPingMinRate)
		def(&c.MaxRate, DefaultPingMaxRate)
		def(&c.LossRatio, DefaultPingLossRatio)
		def(&c.Resolution, DefaultPingResolution)
		if c.TrialDuration == 0 {
			c.TrialDuration = DefaultPingTrial
		}
	}
	return c
}

// Validate reports what is wrong with c, or nil.
func (c PingConfig) Validate() error {
	switch {
	case c.Probe != ProbeEcho && c.Probe != ProbeUnreach:
		return fieldErr("probe", "%q: want %q or %q", c.Probe, ProbeEcho, ProbeUnreach)
	case c.Count < 1 || c.Count > MaxPingCount:
		return fieldErr("count", "%d: want 1 to %d probes", c.Count, MaxPingCount)
	case c.Interval < MinPingInterval:
		return fieldErr("interval_ns", "%v is below the %v minimum between probes", c.Interval, MinPingInterval)
	case time.Duration(c.Count)*c.Interval > MaxPingRun:
		return fieldErr("count", "%d probes %v apart take over %v: send fewer or closer probes", c.Count, c.Interval, MaxPingRun)
	case c.Size < MinPingSize || c.Size > MaxPingSize:
		return fieldErr("size_bytes", "%d: want %d to %d bytes per probe (the first %d carry the run's token and sequence number)", c.Size, MinPingSize, MaxPingSize, MinPingSize)
	case c.Probe == ProbeUnreach && (c.Port < 1 || c.Port > 65535):
		return fieldErr("port", "%d: want 1 to 65535", c.Port)
	case c.Probe == ProbeEcho && c.Port != 0:
		return fieldErr("port", "%d: only unreach probes go to a port", c.Port)
	case c.Wait <= 0 || c.Wait > MaxPingWait:
		return fieldErr("wait_ns", "%v: want more than 0, at most %v", c.Wait, MaxPingWait)
	}
	if c.RateSearch {
		return c.validateSearch()
	}
	return nil
}

func (c PingConfig) validateSearch() error {
	switch {
	case !(c.MinRate >= 1 && c.MinRate <= c.MaxRate && c.MaxRate <= MaxPingRate):
		return fieldErr("max_rate_pps", "rates %g to %g probes/s: want 1 ≤ min ≤ max ≤ %d", c.MinRate, c.MaxRate, MaxPingRate)
	case c.TrialDuration < 100*time.Millisecond || c.TrialDuration > time.Minute:
		return fieldErr("trial_ns", "%v: want 100ms to 1m", c.TrialDuration)
	case c.MaxRate*c.TrialDuration.Seconds() > MaxPingCount:
		return fieldErr("trial_ns", "a trial of %v at %g probes/s sends over %d probes: shorten the trials or lower the rate", c.TrialDuration, c.MaxRate, MaxPingCount)
	case !(c.LossRatio > 0 && c.LossRatio < 1):
		return fieldErr("loss_ratio", "%g: want between 0 and 1 (0.005 is 0.5 %%)", c.LossRatio)
	case !(c.Resolution >= 0.001 && c.Resolution <= 0.5):
		return fieldErr("resolution", "%g: want 0.001 to 0.5", c.Resolution)
	}
	return nil
}

// Trial is the run a rate search's trial at rate probes/s sends: as many
// probes as TrialDuration holds, 1/rate apart.
func (c PingConfig) Trial(rate float64) PingConfig {
	t := c
	t.RateSearch = false
	t.Interval = max(time.Duration(float64(time.Second)/rate), MinPingInterval)
	t.Count = min(max(int(math.Ceil(rate*c.TrialDuration.Seconds())), 1), MaxPingCount)
	return t
}

// FrameBytes is the Ethernet frame one probe travels in (14-byte header
// and 4-byte FCS counted, as RFC 2544's frame sizes): IPv4 (20) or IPv6
// (40) plus ICMP or UDP (8) plus the payload, plus 18; at least 64.
func (c PingConfig) FrameBytes(ipv6 bool) int {
	return max(frame.OfUDPPayload(c.Size, ipv6), frame.MinFrame) // ICMP's header is as long as UDP's
}

// PingRun is what one run of probes saw (the engine's answer to
// method.Network's Ping).
type PingRun struct {
	Fates      []ping.Fate // in send order
	Socket     string      // "ping" (unprivileged ICMP), "raw" or "udp"
	Stamped    int         // replies timed by the kernel's receive stamp
	Duplicates int
	OtherICMP  int    // unreach: ICMP errors other than port unreachable
	Unmatched  int    // unreach: errors quoting too little to tell the probe
	SendErrors int    // probes this host failed to send (counted lost)
	LocalDrops uint32 // replies this host's socket dropped for want of buffer (counted lost)
	IPv6       bool   // the probes went over IPv6
}

// Ping is a single-ended test's document.
type Ping struct {
	Meta
	Config   PingConfig   `json:"config"`
	Socket   string       `json:"socket"`            // the socket the probes went out on: ping, raw or udp
	IPv6     bool         `json:"ipv6,omitempty"`    // the probes went over IPv6
	Summary  *PingSummary `json:"summary,omitempty"` // a single run's figures
	Search   *PingSearch  `json:"search,omitempty"`  // the rate search's
	Verdict  ping.Verdict `json:"verdict"`           // the run's, or the search's (rate-limited when its trials showed a limiter)
	Partial  bool         `json:"partial"`           // stopped early
	Reason   string       `json:"partial_reason,omitempty"`
	Warnings []string     `json:"warnings"`
}

// PingSummary is a run's RTTs (µs) and loss, and what else its socket
// read.
type PingSummary struct {
	RTTStats
	Stamped    int    `json:"stamped"` // replies timed by the kernel's receive stamp, not the read
	Duplicates int    `json:"duplicates"`
	OtherICMP  int    `json:"other_icmp"` // unreach: ICMP errors other than port unreachable
	Unmatched  int    `json:"unmatched"`  // unreach: errors quoting too little of the datagram to tell its probe
	SendErrors int    `json:"send_errors"`
	LocalDrops uint32 `json:"local_drops,omitempty"` // replies this host's socket dropped for want of buffer: lost here, not on the path
}

// PingSearch is a rate search's outcome: the highest rates that passed,
// in probes/s and in bit/s of the probes' Ethernet frames (FrameBytes ×
// 8 × rate; on the line each frame also costs 20 bytes of preamble and
// gap).
type PingSearch struct {
	FrameBytes  int         `json:"frame_bytes"`
	ZeroLossPPS float64     `json:"zero_loss_pps"` // 0: no rate passed
	ZeroLossBps float64     `json:"zero_loss_bps"`
	AtRatioPPS  float64     `json:"at_ratio_pps"`
	AtRatioBps  float64     `json:"at_ratio_bps"`
	Trials      []PingTrial `json:"trials"`
}

// PingTrial is one trial of a rate search.
type PingTrial struct {
	RatePPS     float64      `json:"rate_pps"` // asked
	Sent        int          `json:"sent"`
	Received    int          `json:"received"`
	LossPct     float64      `json:"loss_pct"`
	RepliesPPS  float64      `json:"replies_pps"`   // replies over the trial's sending time
	MedianRTTUs float64      `json:"median_rtt_us"` // the run's p50_us (stats.Median)
	Verdict     ping.Verdict `json:"verdict"`
}
