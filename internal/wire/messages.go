package wire

import (
	"time"

	"github.com/fullpipe/fullpipe/internal/cpuload"
	"github.com/fullpipe/fullpipe/internal/dispersion"
)

// Test kinds.
const (
	KindTCP = "tcp"
	KindUDP = "udp"
	KindRTT = "rtt"
	// KindTrain is one back-to-back UDP packet train (TrainPackets
	// datagrams of Size bytes, sent by the client, or by the responder
	// with Reverse); the receiver reads it (package train).
	KindTrain = "train"
)

// Request is the test a client asks for. Durations are nanoseconds in JSON
// (Go's time.Duration encoding); sizes are bytes; rates are bit/s.
type Request struct {
	Kind      string        `json:"kind"`
	Streams   int           `json:"streams"`              // TCP streams (per direction)
	Duration  time.Duration `json:"duration_ns"`          // test length; 0 with Bytes
	Bytes     int64         `json:"bytes,omitempty"`      // fixed transfer in total, split over streams
	Reverse   bool          `json:"reverse,omitempty"`    // server sends
	Bidir     bool          `json:"bidir,omitempty"`      // both send
	Window    int           `json:"window,omitempty"`     // exact window in bytes (0 = kernel's choice)
	CC        string        `json:"cc,omitempty"`         // congestion control on the sending side
	MSS       int           `json:"mss,omitempty"`        // TCP_MAXSEG in bytes
	PacingBps int64         `json:"pacing_bps,omitempty"` // per-stream pacing rate on the sending side
	DSCP      int           `json:"dscp,omitempty"`
	Interval  time.Duration `json:"interval_ns"`
	RateBps   int64         `json:"rate_bps,omitempty"`   // UDP payload rate
	Size      int           `json:"size,omitempty"`       // UDP payload bytes
	Latency   bool          `json:"latency,omitempty"`    // UDP RTT probes during the test
	WriteSize int           `json:"write_size,omitempty"` // TCP bytes per write on the sending side (0 = the sender's default: 1 MiB, 128 KiB before 2026-11-24)
	// Echo probing the client will do in this session: the responder
	// answers at most Probes echoes (0: 10 per second of Duration, plus
	// 20) of at most ProbeSize bytes each (0: 48), from at most UDPPorts
	// source ports (0: 1). MTU asks for path-MTU replies (echo mode 2)
	// larger than the probe, up to MaxMTUReply bytes.
	Probes    int  `json:"probes,omitempty"`
	ProbeSize int  `json:"probe_size,omitempty"`
	UDPPorts  int  `json:"udp_ports,omitempty"`
	MTU       bool `json:"mtu,omitempty"`
	// A train (KindTrain): TrainPackets datagrams of Size bytes, back to
	// back. OverheadBytes is what the receiver's rates count per datagram
	// beyond its UDP payload (IP and UDP headers, link framing), so they
	// compare with a layer-2 rate.
	TrainPackets  int `json:"train_packets,omitempty"`
	OverheadBytes int `json:"overhead_bytes,omitempty"`
	// EchoEvery (udp only): the client measures latency with mirrored
	// echoes of Size bytes, one per EchoEvery datagrams of the stream:
	// in an upload every EchoEvery-th datagram of the stream is one (the
	// responder counts it as data and reflects it); in a download the
	// client sends one per EchoEvery datagrams of the responder's stream
	// and the replies travel back beside it. The responder sizes its
	// echo budget for them (StreamProbes).
	EchoEvery int `json:"echo_every,omitempty"`
}

// MaxMTUReply bounds an echo reply in a session that asked for MTU: the
// largest jumbo frame in common use.
const MaxMTUReply = 9000

// Accept answers a Request: the session exists and data may connect.
type Accept struct {
	Cookie  Cookie        `json:"cookie"`
	CC      string        `json:"cc"` // congestion control the server's sockets use by default
	MaxTime time.Duration `json:"max_duration_ns"`
	Host                  // the responder's software and kernel (first sent here, or in auth_ok)
}

// Started says the server's measurement clock started.
type Started struct{}

// Stop asks the server to end the test now.
type Stop struct {
	Reason string `json:"reason"`
	// Held is, for a train the client sent, the datagrams whose write
	// returned late after their stamp (dispersion.Hold), for the responder's
	// reading.
	Held []dispersion.Hold `json:"held,omitempty"`
}

// DataHello follows the data preamble on a data connection.
type DataHello struct {
	Cookie Cookie `json:"cookie"`
	Stream int    `json:"stream"` // index within its direction
	// ClientSends is true for a stream on which the client sends (forward).
	ClientSends bool `json:"client_sends"`
}

// TCPInfo is the subset of TCP_INFO that travels between the ends, in units
// named by the field.
type TCPInfo struct {
	RTTMicros           int64  `json:"rtt_us"`
	RTTVarMicros        int64  `json:"rttvar_us"`
	MinRTTMicros        int64  `json:"min_rtt_us"`
	CwndBytes           uint64 `json:"cwnd_bytes"`
	MSS                 uint32 `json:"mss_bytes"`
	BytesSent           uint64 `json:"bytes_sent"`
	BytesRetrans        uint64 `json:"bytes_retrans"`
	BytesAcked          uint64 `json:"bytes_acked"`
	RetransSegs         uint32 `json:"retrans_segs"`
	DeliveryRateBps     uint64 `json:"delivery_rate_bps"`
	BusyMicros          int64  `json:"busy_us"`
	RwndLimitedMicros   int64  `json:"rwnd_limited_us"`
	SndbufLimitedMicros int64  `json:"sndbuf_limited_us"`
	SndWnd              uint32 `json:"snd_wnd_bytes"` // peer's advertised window
	InflightMaxBytes    int64  `json:"inflight_max_bytes,omitempty"`
}

// StreamSample is one stream's figures over one interval (or, in Result, in
// total) as seen by the side that reports it.
type StreamSample struct {
	Stream      int      `json:"stream"`
	ClientSends bool     `json:"client_sends"`
	BytesRx     int64    `json:"bytes_rx"`    // payload bytes received by this side
	BytesTx     int64    `json:"bytes_tx"`    // payload bytes written by this side
	FirstRxNs   int64    `json:"first_rx_ns"` // receive window, relative to start
	LastRxNs    int64    `json:"last_rx_ns"`
	Writes      int64    `json:"writes,omitempty"` // write calls by this side, when it sends
	TCP         *TCPInfo `json:"tcp,omitempty"`    // of this side's socket, when it sends
}

// UDPStats are a UDP receiver's figures.
type UDPStats struct {
	Packets     uint64 `json:"packets"`
	Bytes       uint64 `json:"bytes"` // payload bytes
	Unique      uint64 `json:"unique"`
	Lost        uint64 `json:"lost"`
	Duplicates  uint64 `json:"duplicates"`
	Reordered   uint64 `json:"reordered"`
	JitterNanos int64  `json:"jitter_ns"`
	FirstRxNs   int64  `json:"first_rx_ns"`
	LastRxNs    int64  `json:"last_rx_ns"`
	SentPackets uint64 `json:"sent_packets"` // packets this side sent (when it sends)
	SentBytes   uint64 `json:"sent_bytes"`
	SentLate    uint64 `json:"sent_late,omitempty"`        // of those, sent more than 1 ms and one gap behind schedule
	SentSlipNs  int64  `json:"sent_max_slip_ns,omitempty"` // the most a packet was behind its schedule
	// LocalDrops is what the receiving socket itself dropped for want of
	// buffer while the test ran (SO_RXQ_OVFL): the receiving host's loss,
	// not the path's. The responder's socket is shared by its sessions,
	// so its figure may include another session's drops; with UDP GRO
	// the kernel counts a coalesced buffer as one, so it is a lower
	// bound.
	LocalDrops uint64 `json:"local_drops,omitempty"`
}

// Interval is the server's view of one reporting interval.
type Interval struct {
	Index   int            `json:"index"`
	StartNs int64          `json:"start_ns"`
	EndNs   int64          `json:"end_ns"`
	Streams []StreamSample `json:"streams,omitempty"`
	UDP     *UDPStats      `json:"udp,omitempty"`
	Series  *Series        `json:"series,omitempty"`
}

// Result is the server's final view.
type Result struct {
	Streams []StreamSample `json:"streams,omitempty"`
	UDP     *UDPStats      `json:"udp,omitempty"`
	Train   *TrainResult   `json:"train,omitempty"` // a train the responder received or sent
	Series  *Series        `json:"series,omitempty"`
	Partial bool           `json:"partial,omitempty"`
	Reason  string         `json:"reason,omitempty"`
	// Load is the responder process's CPU use over the test: whether its
	// host could have held the test back (wire v3, optional).
	Load *cpuload.Load `json:"cpu_load,omitempty"`
}

// Series is the part of a TCP test's time series the server adds since
// its previous interval frame: the bytes it received per 10 ms bin (all
// streams; the up direction) from bin FromBin on, and the smoothed RTT of
// the streams it sends (the down direction) every 100 ms. Times are on
// the server's clock, which starts when it reads start.
type Series struct {
	FromBin int        `json:"from_bin"`
	RxBins  []int64    `json:"rx_bins,omitempty"`
	RTT     []RTTPoint `json:"rtt,omitempty"`
}

// RTTPoint is one RTT sample: the mean smoothed RTT of a side's sending
// streams at a time on that side's clock.
type RTTPoint struct {
	Ns int64 `json:"t_ns"`
	Us int64 `json:"rtt_us"`
}

// TrainResult is the responder's side of a train: its reading of a train
// it received (receive times stamped by its kernel), or what it sent.
type TrainResult struct {
	Reading *dispersion.Reading `json:"reading,omitempty"` // the client sent: the responder's reading
	Sent    int                 `json:"sent"`              // datagrams the responder sent (Reverse)
	// LocalDrops is how many datagrams the receiving socket itself
	// dropped during the train (SO_RXQ_OVFL): losses of the host, not of
	// the network. A reading with local drops is not a reading of the path.
	LocalDrops uint32 `json:"local_drops"`
	Stamps     string `json:"stamps"` // "kernel" or "user": where receive times came from
	// Held is, for a train the responder sent (Reverse), the datagrams
	// whose write returned late after their stamp, for the client's
	// reading.
	Held []dispersion.Hold `json:"held,omitempty"`
}
