package tester

import (
	"context"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
)

// Remote is the engine's tests against one responder, as the methods see
// the network (method.Network): each call runs one test over the real
// sockets.
type Remote struct{ T Target }

// Target is the responder, host:port.
func (r Remote) Target() string { return HostPort(r.T.Addr) }

// PMTU runs RunPMTU.
func (r Remote) PMTU(ctx context.Context, cfg result.PMTUConfig) (*result.PMTU, error) {
	return RunPMTU(ctx, r.T, cfg)
}

// RTT runs RunRTT.
func (r Remote) RTT(ctx context.Context, cfg result.RTTConfig, onReply func(uint64, time.Duration)) (*result.RTT, error) {
	return RunRTT(ctx, r.T, cfg, onReply)
}

// UDP runs RunUDP.
func (r Remote) UDP(ctx context.Context, cfg result.UDPConfig, progress func(result.UDPInterval)) (*result.UDP, error) {
	return RunUDP(ctx, r.T, cfg, progress)
}

// TCP runs RunTCP.
func (r Remote) TCP(ctx context.Context, cfg result.TCPConfig, progress func(result.TCPInterval)) (*result.TCP, error) {
	return RunTCP(ctx, r.T, cfg, progress)
}

// Train runs RunTrain.
func (r Remote) Train(ctx context.Context, cfg result.TrainConfig) (*result.Train, error) {
	return RunTrain(ctx, r.T, cfg)
}

// WindowPoint runs RunWindowPoint.
func (r Remote) WindowPoint(ctx context.Context, cfg result.WindowPointConfig) (*result.WindowPointRun, error) {
	return RunWindowPoint(ctx, r.T, cfg)
}

// Ping runs RunPing toward the host of the target (no responder).
func (r Remote) Ping(ctx context.Context, cfg result.PingConfig, onReply func(int, time.Duration)) (*result.PingRun, error) {
	return RunPing(ctx, r.T, cfg, onReply)
}
