// Package rfc2544 is the mathematics of RFC 2544's benchmarks (throughput,
// latency, frame loss rate, back-to-back frames) as fullpipe runs them
// over UDP through its responder: the frame-size to UDP-payload mapping,
// line-rate arithmetic, the throughput search, the frame-loss table's
// steps, the back-to-back burst search and the buffer it implies, and the
// judgement of a lossy line (loss that does not depend on the rate, read
// with package ber). It is pure: no sockets and no clock; the runner
// (internal/method) passes in what each trial saw.
package rfc2544

import (
	"fmt"
	"time"
)

// Bytes of one frame beyond its IP packet and on the wire beyond the frame.
const (
	// EthernetBytes is the Ethernet header (14) and FCS (4) a frame of
	// RFC 2544's sizes includes around its IP packet.
	EthernetBytes = 18
	// WireExtraBytes is the preamble and start delimiter (8) and the
	// minimum inter-frame gap (12) each frame also costs on the line.
	WireExtraBytes = 20
	// IPv4UDPBytes and IPv6UDPBytes are a frame's bytes beyond its UDP
	// payload: Ethernet 18, IP 20 or 40, UDP 8.
	IPv4UDPBytes = EthernetBytes + 20 + 8
	IPv6UDPBytes = EthernetBytes + 40 + 8
	// Jumbo is the jumbo frame size added where the path MTU allows.
	Jumbo = 9018
)

// StandardSizes are RFC 2544 §9.1's Ethernet frame sizes, in bytes.
func StandardSizes() []int { return []int{64, 128, 256, 512, 1024, 1280, 1518} }

// Payload is the UDP payload that makes a frame of frame bytes: frame − 46
// over IPv4 (64 → 18), frame − 66 over IPv6 (84 → 18).
func Payload(frame int, ipv6 bool) int {
	if ipv6 {
		return frame - IPv6UDPBytes
	}
	return frame - IPv4UDPBytes
}

// Frame is the Ethernet frame a UDP payload of payload bytes makes.
func Frame(payload int, ipv6 bool) int {
	if ipv6 {
		return payload + IPv6UDPBytes
	}
	return payload + IPv4UDPBytes
}

// IPBytes is a frame's IP packet: frame − 18.
func IPBytes(frame int) int { return frame - EthernetBytes }

// MinPayload is the smallest UDP payload the engine sends (its compact
// header); a frame whose payload is smaller cannot be sent.
const MinPayload = 18

// CheckSize says why frame cannot be sent over a path of IP MTU mtu, or
// nil: its payload must hold the engine's header and its IP packet fit
// the MTU.
func CheckSize(frame, mtu int, ipv6 bool) error {
	switch p := Payload(frame, ipv6); {
	case p < MinPayload:
		return fmt.Errorf("frame %d B: its UDP payload of %d B is below the %d B the engine's header needs", frame, p, MinPayload)
	case IPBytes(frame) > mtu:
		return fmt.Errorf("frame %d B: its IP packet of %d B is above the path MTU of %d B", frame, IPBytes(frame), mtu)
	}
	return nil
}

// Sizes is the standard sizes whose IP packet fits mtu, and the jumbo
// frame when it fits too (an MTU of 9000).
func Sizes(mtu int) []int {
	var out []int
	for _, f := range append(StandardSizes(), Jumbo) {
		if IPBytes(f) <= mtu {
			out = append(out, f)
		}
	}
	return out
}

// LineFPS is the most frames per second of frame bytes a line of rateBps
// (layer 1, as Ethernet's rates are stated) carries: rate / ((frame + 20)
// × 8), the preamble and the inter-frame gap counted (100 Mbit/s, 64 B:
// 148,809 frames/s).
func LineFPS(rateBps float64, frame int) float64 {
	return rateBps / (float64(frame+WireExtraBytes) * 8)
}

// WireBps is the line rate frames/s of frame bytes take, preamble and gap
// counted: the inverse of LineFPS.
func WireBps(fps float64, frame int) float64 { return fps * float64(frame+WireExtraBytes) * 8 }

// FrameBps is the bit rate of the frames themselves (without preamble and
// gap), as RFC 2544's Mbit/s columns are usually stated.
func FrameBps(fps float64, frame int) float64 { return fps * float64(frame) * 8 }

// PayloadBps is the UDP payload bit rate of fps frames/s: what the
// engine's UDP test is asked for (result.UDPConfig.RateBps).
func PayloadBps(fps float64, frame int, ipv6 bool) float64 {
	return fps * float64(Payload(frame, ipv6)) * 8
}

// Serialisation is the time a frame takes on a line of rateBps, preamble
// and gap counted.
func Serialisation(frame int, rateBps float64) time.Duration {
	if rateBps <= 0 {
		return 0
	}
	return time.Duration(float64(frame+WireExtraBytes) * 8 / rateBps * 1e9)
}

// ExpectedRTT is the round trip a latency probe of frame bytes takes over
// an unloaded symmetric path of base round trip base and line rate
// rateBps: the delay both ways and one serialisation each way. Queueing
// under load comes on top.
func ExpectedRTT(base time.Duration, frame int, rateBps float64) time.Duration {
	return base + 2*Serialisation(frame, rateBps)
}
