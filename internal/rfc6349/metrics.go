// Package rfc6349 holds RFC 6349's formulas and the method's judgements
// (verdict, diagnosis, shaping vs policing) as pure functions: no sockets,
// no clocks, so every number can be checked against the RFC's own
// examples. The test vectors are those of ../shared/rfc6349-notes.md §9.
//
// Units: rates in bit/s (float64), sizes in bytes, times as
// time.Duration. Note the RFC's worked examples use KB = 1000 bytes.
package rfc6349

import (
	"fmt"
	"math"
	"time"

	"github.com/fullpipe/fullpipe/internal/frame"
)

// BDPBits is the bandwidth-delay product in bits: BB × RTT (RFC 6349
// §3.3.1).
func BDPBits(bbBps float64, rtt time.Duration) float64 { return bbBps * float64(rtt) / 1e9 }

// BDPBytes is the BDP in bytes, the minimum window that fills the path.
func BDPBytes(bbBps float64, rtt time.Duration) float64 { return BDPBits(bbBps, rtt) / 8 }

// WindowThroughput is the throughput a window of w bytes allows at rtt:
// W × 8 / RTT (RFC 6349 §3.3.1).
func WindowThroughput(windowBytes float64, rtt time.Duration) float64 {
	if rtt <= 0 {
		return math.Inf(1)
	}
	return windowBytes * 8 / rtt.Seconds()
}

// Link is a layer-1/2 encapsulation: the bytes each frame costs on the
// wire beyond the IP packet (MTU).
type Link struct {
	Name     string
	Overhead int // bytes per frame outside the IP packet, gaps and preambles included
}

// Links, their overheads package frame's. Ethernet: 14 header + 4 FCS +
// 12 inter-frame gap + 7 preamble + 1 SFD = 38 bytes (RFC 6349 §4.1.1);
// each 802.1Q tag adds 4. PPP over a T1/T3: 4 PPP + 2 flags + 2 CRC16 =
// 8.
var (
	Ethernet = Link{"ethernet", frame.EthernetWire}
	VLAN     = Link{"vlan", frame.VLANWire}
	QinQ     = Link{"qinq", frame.QinQWire}
	PPP      = Link{"ppp", frame.PPPWire}
	NoLink   = Link{"none", 0}
)

// LinkByName finds a link type for --link.
func LinkByName(name string) (Link, error) {
	for _, l := range []Link{Ethernet, VLAN, QinQ, PPP, NoLink} {
		if l.Name == name {
			return l, nil
		}
	}
	return Link{}, fmt.Errorf("--link %q: want ethernet, vlan, qinq, ppp or none", name)
}

// FrameRate is the most full-size frames per second a link of rateBps
// carries, floored as the RFC does: rate / ((MTU + overhead) × 8).
func FrameRate(rateBps float64, mtu int, l Link) float64 {
	return math.Floor(rateBps / (float64(mtu+l.Overhead) * 8))
}

// MaxTCPThroughput is RFC 6349's Maximum Achievable TCP Throughput
// (§4.1.1): frame rate × TCP payload per segment × 8. payload is the
// negotiated segment payload: MTU − 40 for IPv4 without TCP options (the
// RFC's case), MTU − 52 with timestamps (Linux's default), MTU − 60 for
// IPv6.
func MaxTCPThroughput(rateBps float64, mtu, payload int, l Link) float64 {
	return FrameRate(rateBps, mtu, l) * float64(payload) * 8
}

// IdealTransferTime is the time to move bytes at the maximum achievable
// throughput (§4.1).
func IdealTransferTime(bytes float64, maxTputBps float64) time.Duration {
	return time.Duration(bytes * 8 / maxTputBps * 1e9)
}

// TTR is the TCP Transfer Time Ratio: actual / ideal transfer time
// (§4.1). 1.0 is ideal; larger is worse.
func TTR(actual, ideal time.Duration) float64 {
	if ideal <= 0 {
		return math.Inf(1)
	}
	return actual.Seconds() / ideal.Seconds()
}

// Efficiency is TCP Efficiency in percent (§4.2): (transmitted −
// retransmitted) / transmitted × 100, where transmitted counts originals
// and retransmissions (tcpi_bytes_sent).
func Efficiency(transmitted, retransmitted float64) float64 {
	if transmitted <= 0 {
		return 0
	}
	return (transmitted - math.Min(retransmitted, transmitted)) / transmitted * 100
}

// BufferDelayPct is Buffer Delay Percentage (§4.3): (average RTT during
// the transfer − baseline RTT) / baseline RTT × 100.
func BufferDelayPct(avgRTT, baseline time.Duration) float64 {
	if baseline <= 0 {
		return 0
	}
	return (avgRTT.Seconds() - baseline.Seconds()) / baseline.Seconds() * 100
}

// Connections is how many connections of at most maxWindow bytes it
// takes to hold window bytes in flight: ceil(window / maxWindow) (§5.1,
// Table 5.1). At least 1.
func Connections(windowBytes, maxWindowBytes float64) int {
	if maxWindowBytes <= 0 || windowBytes <= maxWindowBytes {
		return 1
	}
	return int(math.Ceil(windowBytes / maxWindowBytes))
}

// WalkStep is one window of the walk.
type WalkStep struct {
	Percent     int     // of the BDP
	WindowBytes int     // total window, all connections
	Connections int     // ceil(window / max window)
	PerConn     int     // window of each connection
	IdealBps    float64 // min(window × 8 / RTT, max TCP throughput)
}

// Walk plans the window walk: 25, 50, 75 and 100 % of the BDP (§3.3.1,
// as Anritsu's auto scan), each split over enough connections that none
// exceeds maxWindow (0 = no limit). ceilingBps caps the ideal.
func Walk(bdpBytes float64, rtt time.Duration, maxWindow int, ceilingBps float64) []WalkStep {
	var out []WalkStep
	for _, pct := range []int{25, 50, 75, 100} {
		w := int(math.Round(bdpBytes * float64(pct) / 100))
		n := Connections(float64(w), float64(maxWindow))
		st := WalkStep{Percent: pct, WindowBytes: w, Connections: n, PerConn: int(math.Ceil(float64(w) / float64(n)))}
		st.IdealBps = math.Min(WindowThroughput(float64(w), rtt), ceilingBps)
		out = append(out, st)
	}
	return out
}

// ProbePayload is the UDP payload that makes an IP packet of size bytes:
// size − 28 on IPv4 (20 IP + 8 UDP), − 48 on IPv6.
func ProbePayload(size int, ipv6 bool) int {
	return size - frame.IPUDP(ipv6)
}
