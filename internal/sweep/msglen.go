package sweep

// MsgLenPoint is one write size of a message-length sweep (design
// scenario 5): TCP goodput with writes of that size, and a paced UDP
// stream of datagrams of that size, sender's rate against receiver's.
type MsgLenPoint struct {
	SizeBytes        int     `json:"size_bytes"`
	TCPGoodputBps    float64 `json:"tcp_goodput_bps"`
	TCPWrites        int64   `json:"tcp_writes"`
	TCPBytesPerWrite float64 `json:"tcp_bytes_per_write"`
	TCPRetransSegs   uint32  `json:"tcp_retrans_segs"`
	UDPSizeBytes     int     `json:"udp_size_bytes"`
	UDPSenderBps     float64 `json:"udp_sender_bps"`
	UDPReceiverBps   float64 `json:"udp_receiver_bps"`
	UDPLossPct       float64 `json:"udp_loss_pct"`
	Partial          bool    `json:"partial"`
}

// MsgLenAnalysis is where TCP goodput flattens and where UDP's receiver
// falls behind its sender.
type MsgLenAnalysis struct {
	// TCPMaxBps is the best TCP goodput; TCPKneeBytes the smallest write
	// size within kneeShare of it (larger writes gain little).
	TCPMaxBps    float64 `json:"tcp_max_bps"`
	TCPKneeBytes int     `json:"tcp_knee_bytes"`
	// UDPDivergeBytes is the smallest datagram size from which the
	// receiver's rate stays below divergeShare of the sender's (0: never).
	UDPDivergeBytes int `json:"udp_diverge_bytes"`
}

const (
	kneeShare    = 0.9
	divergeShare = 0.99
)

// AnalyzeMsgLen finds the TCP knee and the UDP divergence; points must be
// in increasing size.
func AnalyzeMsgLen(points []MsgLenPoint) MsgLenAnalysis {
	var a MsgLenAnalysis
	for _, p := range points {
		a.TCPMaxBps = max(a.TCPMaxBps, p.TCPGoodputBps)
	}
	for _, p := range points {
		if a.TCPMaxBps > 0 && p.TCPGoodputBps >= kneeShare*a.TCPMaxBps {
			a.TCPKneeBytes = p.SizeBytes
			break
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		p := points[i]
		if p.UDPSenderBps <= 0 || p.UDPReceiverBps >= divergeShare*p.UDPSenderBps {
			break
		}
		a.UDPDivergeBytes = p.SizeBytes
	}
	return a
}
