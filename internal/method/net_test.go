package method

import (
	"context"
	"time"

	"github.com/fullpipe/fullpipe/internal/method/fakenet"
	"github.com/fullpipe/fullpipe/internal/result"
)

// scripted is a fake path whose rtt or train answers a test scripts
// itself; every other test is the path's.
type scripted struct {
	*fakenet.Path
	rtt   func(context.Context, result.RTTConfig, func(uint64, time.Duration)) (*result.RTT, error)
	train func(context.Context, result.TrainConfig) (*result.Train, error)
	udp   func(context.Context, result.UDPConfig, func(result.UDPInterval)) (*result.UDP, error)
}

func (s scripted) UDP(ctx context.Context, c result.UDPConfig, f func(result.UDPInterval)) (*result.UDP, error) {
	if s.udp != nil {
		return s.udp(ctx, c, f)
	}
	return s.Path.UDP(ctx, c, f)
}

func (s scripted) RTT(ctx context.Context, c result.RTTConfig, f func(uint64, time.Duration)) (*result.RTT, error) {
	if s.rtt != nil {
		return s.rtt(ctx, c, f)
	}
	return s.Path.RTT(ctx, c, f)
}

func (s scripted) Train(ctx context.Context, c result.TrainConfig) (*result.Train, error) {
	if s.train != nil {
		return s.train(ctx, c)
	}
	return s.Path.Train(ctx, c)
}
