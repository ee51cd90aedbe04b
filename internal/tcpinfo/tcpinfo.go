// Package tcpinfo reads Linux TCP_INFO and converts it to Go units.
//
// The kernel reports times in microseconds, cwnd in segments and the
// delivery rate in bytes per second; Info carries durations, bytes and bits
// per second so that callers never convert units themselves.
package tcpinfo

import (
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Info is one TCP_INFO snapshot of a socket. Counters are cumulative since
// the connection was established.
type Info struct {
	State            uint8
	RTT              time.Duration // smoothed RTT (tcpi_rtt)
	RTTVar           time.Duration // RTT mean deviation (tcpi_rttvar)
	MinRTT           time.Duration // windowed minimum RTT (tcpi_min_rtt)
	SndMSS           uint32        // bytes
	PMTU             uint32        // bytes
	CwndSegs         uint32        // congestion window, segments
	CwndBytes        uint64        // CwndSegs × SndMSS
	SsthreshSegs     uint32
	Unacked          uint32 // segments in flight
	TotalRetransSegs uint32 // tcpi_total_retrans
	BytesSent        uint64 // tcpi_bytes_sent, includes retransmissions
	BytesRetrans     uint64 // tcpi_bytes_retrans
	BytesAcked       uint64
	BytesReceived    uint64
	DeliveryRateBps  uint64 // tcpi_delivery_rate × 8
	PacingRateBps    uint64 // tcpi_pacing_rate × 8
	BusyTime         time.Duration
	RwndLimited      time.Duration
	SndbufLimited    time.Duration
	SndWnd           uint32 // peer's advertised window, bytes
	RcvWnd           uint32 // our advertised window, bytes
	NotSentBytes     uint32
}

// Of reads TCP_INFO of c.
func Of(c *net.TCPConn) (Info, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return Info{}, err
	}
	return Get(rc)
}

// Get reads TCP_INFO through a raw connection.
func Get(rc syscall.RawConn) (Info, error) {
	var ti *unix.TCPInfo
	var serr error
	if err := rc.Control(func(fd uintptr) {
		ti, serr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil {
		return Info{}, err
	}
	if serr != nil {
		return Info{}, serr
	}
	return FromRaw(ti), nil
}

func us(v uint64) time.Duration { return time.Duration(v) * time.Microsecond }

// FromRaw converts the kernel structure.
func FromRaw(t *unix.TCPInfo) Info {
	return Info{
		State:            t.State,
		RTT:              us(uint64(t.Rtt)),
		RTTVar:           us(uint64(t.Rttvar)),
		MinRTT:           us(uint64(t.Min_rtt)),
		SndMSS:           t.Snd_mss,
		PMTU:             t.Pmtu,
		CwndSegs:         t.Snd_cwnd,
		CwndBytes:        uint64(t.Snd_cwnd) * uint64(t.Snd_mss),
		SsthreshSegs:     t.Snd_ssthresh,
		Unacked:          t.Unacked,
		TotalRetransSegs: t.Total_retrans,
		BytesSent:        t.Bytes_sent,
		BytesRetrans:     t.Bytes_retrans,
		BytesAcked:       t.Bytes_acked,
		BytesReceived:    t.Bytes_received,
		DeliveryRateBps:  t.Delivery_rate * 8,
		PacingRateBps:    t.Pacing_rate * 8,
		BusyTime:         us(t.Busy_time),
		RwndLimited:      us(t.Rwnd_limited),
		SndbufLimited:    us(t.Sndbuf_limited),
		SndWnd:           t.Snd_wnd,
		RcvWnd:           t.Rcv_wnd,
		NotSentBytes:     t.Notsent_bytes,
	}
}
