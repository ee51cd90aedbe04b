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

	"github.com/fullpipe/fullpipe/internal/frame"
)

// Frame sizes, the UDP payload that makes each frame and the bytes a
// frame costs the line are package frame's (frame.UDPPayload,
// frame.OfUDPPayload, frame.IPPacket, frame.Wire).

// MinPayload is the smallest UDP payload the engine sends (its compact
// header); a frame whose payload is smaller cannot be sent.
const MinPayload = 18

// CheckSize says why a frame of size bytes cannot be sent over a path of
// IP MTU mtu, or nil: its payload must hold the engine's header and its
// IP packet fit the MTU.
func CheckSize(size, mtu int, ipv6 bool) error {
	switch p := frame.UDPPayload(size, ipv6); {
	case p < MinPayload:
		return fmt.Errorf("frame %d B: its UDP payload of %d B is below the %d B the engine's header needs", size, p, MinPayload)
	case frame.IPPacket(size) > mtu:
		return fmt.Errorf("frame %d B: its IP packet of %d B is above the path MTU of %d B", size, frame.IPPacket(size), mtu)
	}
	return nil
}

// Sizes is the standard sizes whose IP packet fits mtu, and the jumbo
// frame when it fits too (an MTU of 9000).
func Sizes(mtu int) []int {
	var out []int
	for _, f := range append(frame.RFC2544Sizes(), frame.Jumbo) {
		if frame.IPPacket(f) <= mtu {
			out = append(out, f)
		}
	}
	return out
}

// LineFPS is the most frames per second of size bytes a line of rateBps
// (layer 1, as Ethernet's rates are stated) carries: rate / ((frame + 20)
// × 8), the preamble and the inter-frame gap counted (100 Mbit/s, 64 B:
// 148,809 frames/s).
func LineFPS(rateBps float64, size int) float64 {
	return rateBps / (float64(frame.Wire(size)) * 8)
}

// WireBps is the line rate frames/s of size bytes take, preamble and gap
// counted: the inverse of LineFPS.
func WireBps(fps float64, size int) float64 { return fps * float64(frame.Wire(size)) * 8 }

// FrameBps is the bit rate of the frames themselves (without preamble and
// gap), as RFC 2544's Mbit/s columns are usually stated.
func FrameBps(fps float64, size int) float64 { return fps * float64(size) * 8 }

// PayloadBps is the UDP payload bit rate of fps frames/s: what the
// engine's UDP test is asked for (result.UDPConfig.RateBps).
func PayloadBps(fps float64, size int, ipv6 bool) float64 {
	return fps * float64(frame.UDPPayload(size, ipv6)) * 8
}

// Serialisation is the time a frame takes on a line of rateBps, preamble
// and gap counted.
func Serialisation(size int, rateBps float64) time.Duration {
	if rateBps <= 0 {
		return 0
	}
	return time.Duration(float64(frame.Wire(size)) * 8 / rateBps * 1e9)
}

// ExpectedRTT is the round trip a latency probe of size bytes takes over
// an unloaded symmetric path of base round trip base and line rate
// rateBps: the delay both ways and one serialisation each way. Queueing
// under load comes on top.
func ExpectedRTT(base time.Duration, size int, rateBps float64) time.Duration {
	return base + 2*Serialisation(size, rateBps)
}
