package result

import "time"

// The engine's test configurations, as every document records them
// under "config".

// TCPConfig is a TCP throughput test. The zero value is invalid: Streams
// and Duration or Bytes must be set (the CLI fills defaults).
type TCPConfig struct {
	Streams   int           `json:"streams"`
	Duration  time.Duration `json:"duration_ns"`
	Bytes     int64         `json:"bytes,omitempty"`
	Reverse   bool          `json:"reverse"`
	Bidir     bool          `json:"bidir"`
	Window    int           `json:"window_bytes,omitempty"`
	CC        string        `json:"cc,omitempty"`
	MSS       int           `json:"mss_bytes,omitempty"`
	PacingBps int64         `json:"pacing_bps,omitempty"`
	DSCP      int           `json:"dscp,omitempty"`
	Interval  time.Duration `json:"interval_ns"`
	Latency   bool          `json:"latency"`
	WriteSize int           `json:"write_size_bytes,omitempty"` // bytes per write call (0: the sender's default, 1 MiB)
}

// UDPConfig is a paced UDP stream test.
type UDPConfig struct {
	RateBps  int64         `json:"rate_bps"` // UDP payload bit/s
	Size     int           `json:"size_bytes"`
	Duration time.Duration `json:"duration_ns"`
	Reverse  bool          `json:"reverse"`
	Interval time.Duration `json:"interval_ns"`
	// Drain is how long the receiver keeps counting after the sender
	// stopped, for packets still queued or in flight.
	Drain time.Duration `json:"drain_ns"`
	// DSCP is the DiffServ code point (0-63) the sender marks each
	// datagram with, on either end (a reverse test's responder too); 0 is
	// best effort. Y.1564 tells its services apart by it.
	DSCP int `json:"dscp,omitempty"`
	// EchoEvery makes every EchoEvery-th datagram of the stream a latency
	// probe of the same size: the responder reflects it and the sender
	// records its round trip (UDPSummary.Latency), so latency is measured
	// inside the load at its rate (RFC 2544 §26.2, Y.1564's FTD and FDV).
	// Probes are part of the stream's rate, not added to it. 0: none.
	EchoEvery int `json:"echo_every,omitempty"`
}

// RTTConfig is a round-trip probe test.
type RTTConfig struct {
	Count    int           `json:"count"`
	Interval time.Duration `json:"interval_ns"`
	Size     int           `json:"size_bytes"` // UDP payload, ≥ 40
}

// PMTUConfig is a packetization-layer path MTU search (RFC 4821 / RFC
// 8899 style) with DF-set UDP probes echoed by the responder, one
// direction at a time, working with or without ICMP.
type PMTUConfig struct {
	MinBytes int `json:"min_bytes"` // smallest IP packet searched; default 1200 (RFC 8899 BASE_PLPMTU) or 1280 on IPv6
	MaxBytes int `json:"max_bytes"` // largest; default the local interface's MTU
	Tries    int `json:"tries"`     // probes per size before it counts as lost; default 3 (RFC 8899 MAX_PROBES)
}

// TrainConfig is one back-to-back UDP packet train (package train).
type TrainConfig struct {
	Packets  int  `json:"packets"`
	Size     int  `json:"size_bytes"`     // UDP payload per datagram
	Overhead int  `json:"overhead_bytes"` // counted beyond the payload: IP and UDP headers, link framing
	Reverse  bool `json:"reverse"`        // the responder sends
	// RateBps paces the train (UDP payload bit/s); 0 sends it back to back.
	RateBps int64 `json:"rate_bps"`
	// Drain is how long the receiver waits for more after the last
	// datagram it got (a queue's drain, a path's delay); default 500 ms.
	Drain time.Duration `json:"drain_ns"`
}

// PMTU is a path MTU test: what the search found.
type PMTU struct {
	Meta
	Config     PMTUConfig    `json:"config"`
	UpBytes    int           `json:"up_bytes"`   // largest IP packet client → responder
	DownBytes  int           `json:"down_bytes"` // largest IP packet responder → client
	LocalBytes int           `json:"local_bytes"`
	ICMPSeen   bool          `json:"icmp_seen"` // the client's kernel learned a smaller MTU from ICMP
	Probes     int           `json:"probes"`
	Timeout    time.Duration `json:"probe_timeout_ns"`
}
