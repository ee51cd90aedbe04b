package method

import (
	"context"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
)

// Network is the seam between the methods and the network: the engine's
// tests against one responder. tester.Remote runs them over real
// sockets; fakenet.Path runs them on a scripted path in virtual time, so
// each method's logic is tested without root in milliseconds. Every call
// validates its config as the engine does and returns a result marked
// partial, with an error wrapping result.ErrPartial, when stopped early.
// UDP must be safe to call from several goroutines at once: Y.1564's
// performance test runs a stream per service and direction together
// (tester.Remote opens a session per call; fakenet.Path locks its state).
type Network interface {
	Target() string // the responder, host:port
	PMTU(context.Context, result.PMTUConfig) (*result.PMTU, error)
	RTT(context.Context, result.RTTConfig, func(seq uint64, rtt time.Duration)) (*result.RTT, error)
	UDP(context.Context, result.UDPConfig, func(result.UDPInterval)) (*result.UDP, error)
	TCP(context.Context, result.TCPConfig, func(result.TCPInterval)) (*result.TCP, error)
	Train(context.Context, result.TrainConfig) (*result.Train, error)
	WindowPoint(context.Context, result.WindowPointConfig) (*result.WindowPointRun, error)
	// Ping is one run of single-ended probes to the target's host (no
	// responder): ICMP echo or UDP to a closed port (docs/single.md).
	Ping(context.Context, result.PingConfig, func(seq int, rtt time.Duration)) (*result.PingRun, error)
	// STAMP runs a STAMP session (RFC 8762) to the reflector on the
	// target's host, at the config's port: no responder involved.
	STAMP(context.Context, result.STAMPConfig) (*result.STAMP, error)
}
