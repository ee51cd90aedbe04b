package method

import (
	"context"
	"fmt"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/sweep"
	"github.com/fullpipe/fullpipe/internal/tester"
)

// MsgLenSweepConfig is a message-length sweep (design scenario 5).
type MsgLenSweepConfig struct {
	Sizes      []int         `json:"sizes_bytes"`
	Duration   time.Duration `json:"duration_ns"` // per size and protocol
	UDPRateBps int64         `json:"udp_rate_bps"`
	Interval   time.Duration `json:"interval_ns"`
}

// MsgLenSweep is a message-length sweep's result.
type MsgLenSweep struct {
	result.Meta
	Points        []sweep.MsgLenPoint  `json:"points"`
	Analysis      sweep.MsgLenAnalysis `json:"analysis"`
	Partial       bool                 `json:"partial"`
	PartialReason string               `json:"partial_reason,omitempty"`
}

// maxUDPPayload is the largest IPv4 UDP payload.
const maxUDPPayload = 65507

// udpDrain is how long the UDP receiver counts after the sender stops.
const udpDrain = 300 * time.Millisecond

// RunMsgLenSweep runs, for each size, a TCP upload whose every write is
// that size, then a paced UDP upload of datagrams of that size (at most
// 65,507 B). Ctrl-C ends it with the sizes so far and an error wrapping
// tester.ErrPartial.
func RunMsgLenSweep(ctx context.Context, t tester.Target, cfg MsgLenSweepConfig, progress func(i int, p sweep.MsgLenPoint)) (*MsgLenSweep, error) {
	if err := cfg.prepare(); err != nil {
		return nil, err
	}
	res := &MsgLenSweep{}
	var stopErr error
	for i, size := range cfg.Sizes {
		p := sweep.MsgLenPoint{SizeBytes: size, UDPSizeBytes: min(max(size, 40), maxUDPPayload)}
		tr, err := tester.RunTCP(ctx, t, tester.TCPConfig{Streams: 1, Duration: cfg.Duration, Interval: cfg.Interval, WriteSize: size}, nil)
		if tr != nil {
			if res.Meta.Schema == 0 {
				res.Meta = tr.Meta
			}
			p.Partial = tr.Summary.Partial
			if d := tr.Summary.Directions[result.Up]; d != nil {
				p.TCPGoodputBps, p.TCPRetransSegs = d.ThroughputBps, d.RetransSegs
			}
			for _, st := range tr.Summary.Streams {
				p.TCPWrites += st.Writes
			}
			if p.TCPWrites > 0 {
				p.TCPBytesPerWrite = float64(tr.Summary.Bytes) / float64(p.TCPWrites)
			}
		}
		if err == nil {
			var ur *result.UDP
			ur, err = tester.RunUDP(ctx, t, tester.UDPConfig{RateBps: cfg.UDPRateBps, Size: p.UDPSizeBytes, Duration: cfg.Duration, Interval: cfg.Interval, Drain: udpDrain}, nil)
			if ur != nil {
				p.UDPSenderBps, p.UDPReceiverBps, p.UDPLossPct = ur.Summary.SenderRateBps, ur.Summary.ReceiverRateBps, ur.Summary.LossPct
				p.Partial = p.Partial || ur.Summary.Partial
			}
		}
		if tr != nil {
			if progress != nil {
				progress(i, p)
			}
			res.Points = append(res.Points, p)
		}
		if stop, fatal := stopped(ctx, err, len(res.Points), fmt.Sprintf("size %d B", size)); fatal != nil {
			return nil, fatal
		} else if stop != nil {
			stopErr = stop
			break
		}
	}
	res.Meta.Test, res.Meta.Config = "sweep msglen", cfg
	var whole []sweep.MsgLenPoint
	for _, p := range res.Points {
		if !p.Partial {
			whole = append(whole, p)
		}
	}
	res.Analysis = sweep.AnalyzeMsgLen(whole)
	res.Partial, res.PartialReason, stopErr = partial(stopErr)
	return res, stopErr
}
