package method

import (
	"context"
	"fmt"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/schedule"
	"github.com/fullpipe/fullpipe/internal/sweep"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/vocab"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// msgLenTests are a message-length sweep's two tests of one size: a TCP
// upload whose every write is size bytes, and a paced UDP upload of
// datagrams of that size (at least 40 B, at most 65,507 B).
func msgLenTests(cfg result.MsgLenSweepConfig, size int) (result.TCPConfig, result.UDPConfig) {
	return result.TCPConfig{Streams: 1, Duration: cfg.Duration, Interval: cfg.Interval, WriteSize: size},
		result.UDPConfig{RateBps: cfg.UDPRateBps, Size: min(max(size, 40), wire.MaxUDPPayload), Duration: cfg.Duration,
			Interval: cfg.Interval, Drain: result.MsgLenUDPDrain}
}

// MsgLenSweepCost is a message-length sweep's plan (RunMsgLenSweep):
// for each size, its TCP upload and its UDP upload.
func MsgLenSweepCost(cfg result.MsgLenSweepConfig, _ time.Duration) (schedule.Cost, error) {
	var all schedule.Cost
	for _, size := range cfg.Sizes {
		tcp, udp := msgLenTests(cfg, size)
		all = all.Plus(tester.TCPCost(tcp)).Plus(tester.UDPCost(udp))
	}
	return all, nil
}

// RunMsgLenSweep runs, for each size, a TCP upload whose every write is
// that size, then a paced UDP upload of datagrams of that size (at most
// 65,507 B). Ctrl-C ends it with the sizes so far and an error wrapping
// result.ErrPartial.
func RunMsgLenSweep(ctx context.Context, n Network, cfg result.MsgLenSweepConfig, progress Progress) (*result.MsgLenSweep, error) {
	cfg, err := prepare("msglen sweep", cfg)
	if err != nil {
		return nil, err
	}
	res := &result.MsgLenSweep{}
	var stopErr error
	for i, size := range cfg.Sizes {
		tcp, udp := msgLenTests(cfg, size)
		p := sweep.MsgLenPoint{SizeBytes: size, UDPSizeBytes: udp.Size}
		tr, err := n.TCP(ctx, tcp, nil)
		if tr != nil {
			if res.Meta.Schema == 0 {
				res.Meta = tr.Meta
			}
			p.Partial = tr.Summary.Partial
			if d := tr.Summary.Directions[vocab.Up]; d != nil {
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
			ur, err = n.UDP(ctx, udp, nil)
			if ur != nil {
				p.UDPSenderBps, p.UDPReceiverBps, p.UDPLossPct = ur.Summary.SenderRateBps, ur.Summary.ReceiverRateBps, ur.Summary.LossPct
				p.Partial = p.Partial || ur.Summary.Partial
			}
		}
		if tr != nil {
			progress.emit(Event{Kind: Sample, Step: StepMsgLen, Direction: vocab.Up, MsgLen: &p, Index: i})
			res.Points = append(res.Points, p)
		}
		if stop, fatal := stopped(ctx, err, len(res.Points), fmt.Sprintf("size %d B", size)); fatal != nil {
			return nil, fatal
		} else if stop != nil {
			stopErr = stop
			break
		}
	}
	res.Meta.Test, res.Config = "sweep msglen", cfg
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
