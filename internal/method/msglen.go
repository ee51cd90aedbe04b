package method

import (
	"context"
	"fmt"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/sweep"
	"github.com/fullpipe/fullpipe/internal/vocab"
	"github.com/fullpipe/fullpipe/internal/wire"
)

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
		p := sweep.MsgLenPoint{SizeBytes: size, UDPSizeBytes: min(max(size, 40), wire.MaxUDPPayload)}
		tr, err := n.TCP(ctx, result.TCPConfig{Streams: 1, Duration: cfg.Duration, Interval: cfg.Interval, WriteSize: size}, nil)
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
			ur, err = n.UDP(ctx, result.UDPConfig{RateBps: cfg.UDPRateBps, Size: p.UDPSizeBytes, Duration: cfg.Duration, Interval: cfg.Interval, Drain: result.MsgLenUDPDrain}, nil)
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
