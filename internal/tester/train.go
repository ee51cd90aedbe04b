package tester

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/fullpipe/fullpipe/internal/flow"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/schedule"
	"github.com/fullpipe/fullpipe/internal/sockopt"
	"github.com/fullpipe/fullpipe/internal/vocab"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// trainRecvBuffer is the down receiver's socket buffer: the whole of a
// long train may arrive while the reader is scheduled out.
const trainRecvBuffer = 32 << 20

// trainWriter writes the up train's datagrams (a test holds a write).
var trainWriter = flow.ConnWriter

// TrainCost is one train's own time (RunTrain) when its datagrams take
// span to arrive, first to last (TrainSpan): a round trip for the first
// to reach the receiver and its reading to come back, the span, and the
// drain, which the sender waits out after its last datagram (up) and
// the receiver after the last that came (down). One session. A down
// train none of whose datagrams arrive waits trainFirstWait and the
// drain instead: a path that failed, which the bound leaves out.
func TrainCost(cfg result.TrainConfig, span, rtt time.Duration) schedule.Cost {
	cfg = cfg.WithDefaults()
	return schedule.Cost{Run: schedule.SatAdd(schedule.SatAdd(rtt, span), cfg.Drain), Sessions: 1}
}

// TrainSpan is how long cfg's train takes to arrive, first datagram to
// last, through a bottleneck of bottleneckBps (bit/s with the train's
// Overhead counted; 0: none known): its bytes at the slower of its pace
// (RateBps; 0: back to back, as fast as the host sends) and the
// bottleneck. The tester cannot know the bottleneck: the method that
// sized the train does.
func TrainSpan(cfg result.TrainConfig, bottleneckBps float64) time.Duration {
	per := float64(cfg.Size + cfg.Overhead)
	rate := bottleneckBps
	if pace := float64(cfg.RateBps) * per / float64(max(cfg.Size, 1)); cfg.RateBps > 0 && (rate <= 0 || pace < rate) {
		rate = pace
	}
	return schedule.BitsTime(float64(cfg.Packets)*per*8, rate)
}

// RunTrain sends one train (or, Reverse, has the responder send it) and
// returns its receiver's reading: the responder's for up, from its
// kernel's receive stamps; this host's for down.
func RunTrain(ctx context.Context, t Target, cfg result.TrainConfig) (*result.Train, error) {
	cfg, err := checked("train", cfg)
	if err != nil {
		return nil, err
	}
	s, err := open(ctx, t, cfg.Request())
	if err != nil {
		return nil, err
	}
	defer s.ctrl.Close()
	uc, err := dialUDP(s)
	if err != nil {
		return nil, err
	}
	defer uc.Close()
	rc, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	res := &result.Train{Meta: meta(s, "train"), Config: cfg, Direction: vocab.Up, Packets: cfg.Packets, SizeBytes: cfg.Size, OverheadBytes: cfg.Overhead}
	if cfg.Reverse {
		res.Direction = vocab.Down
		err = receiveTrain(ctx, s, uc, rc, cfg, res)
	} else {
		err = sendTrain(ctx, s, uc, rc, cfg, res)
	}
	return res, err
}

// sendTrain sends the train up and takes the responder's reading.
func sendTrain(ctx context.Context, s *session, uc *net.UDPConn, rc syscall.RawConn, cfg result.TrainConfig, res *result.Train) error {
	_ = sockopt.SetRecvErr(rc, s.remote.IP.To4() == nil)
	if err := s.startTest(ctx); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	_, before := flow.UDPErrors()
	spec := flow.TrainSpec{Cookie: s.accept.Cookie, Packets: cfg.Packets, Size: cfg.Size, RateBps: float64(cfg.RateBps)}
	sent, err := flow.SendTrain(ctx, trainWriter(uc), flow.NewClock(), spec)
	if err != nil {
		return fmt.Errorf("sending the train: %w", err)
	}
	_, after := flow.UDPErrors()
	// Refused writes that were made again count in SndbufErrors too.
	dropped := max(int64(after)-int64(before)-int64(sent.Retries), 0)
	select { // the drain: the last datagrams still queued or in flight
	case <-time.After(cfg.Drain):
	case <-ctx.Done():
		return ctx.Err()
	}
	msgs := make(chan serverMsg, 4)
	go s.readLoop(msgs)
	r := s.stopWith(wire.Stop{Reason: "done", Held: sent.Held}, msgs)
	if r == nil || r.Train == nil || r.Train.Reading == nil {
		return errors.New("the responder sent no reading of the train")
	}
	res.Reading, res.Stamps = *r.Train.Reading, r.Train.Stamps
	res.LocalDrops = r.Train.LocalDrops + uint32(min(dropped, 1<<31))
	return nil
}

// receiveTrain has the responder send the train and reads it here, from
// this kernel's receive stamps.
func receiveTrain(ctx context.Context, s *session, uc *net.UDPConn, rc syscall.RawConn, cfg result.TrainConfig, res *result.Train) error {
	if _, err := sockopt.SetRecvBuffer(rc, trainRecvBuffer); err != nil {
		return fmt.Errorf("receive buffer for the train: %w", err)
	}
	if err := sockopt.EnableRxStamps(rc); err != nil {
		return err
	}
	stopHello := sendHellos(ctx, uc, s.accept.Cookie)
	err := s.startTest(ctx)
	stopHello()
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	msgs := make(chan serverMsg, 4)
	go s.readLoop(msgs)
	rec := flow.NewTrainRecorder(cfg.Packets, cfg.Size, cfg.Overhead)
	drops, stamps := readTrain(ctx, uc, s.accept.Cookie, rec, cfg)
	r := s.stopAndWait("done", msgs)
	if r != nil && r.Train != nil {
		rec.SetHeld(r.Train.Held)
	}
	res.Reading, res.LocalDrops, res.Stamps = rec.Reading(), drops, stamps
	if r != nil && r.Train != nil {
		res.LocalDrops += r.Train.LocalDrops
	}
	return ctx.Err()
}

// trainFirstWait is how much longer than the drain a down train's
// receiver waits for the first datagram: the responder starts sending
// when it has the start.
const trainFirstWait = 3 * time.Second

// readTrain records the train's datagrams until all arrived, or none came
// for cfg.Drain after the first (trainFirstWait more before it), or ctx
// ends. It returns
// how many this socket dropped meanwhile and where the stamps came from.
func readTrain(ctx context.Context, uc *net.UDPConn, cookie wire.Cookie, rec *flow.TrainRecorder, cfg result.TrainConfig) (drops uint32, stamps string) {
	stop := context.AfterFunc(ctx, func() { _ = uc.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	buf, oob := make([]byte, 65536), make([]byte, sockopt.RxStampSpace)
	stamps = "kernel"
	var first, last uint32
	seen, got := false, 0
	for got < cfg.Packets && ctx.Err() == nil {
		wait := trainFirstWait + cfg.Drain
		if seen {
			wait = cfg.Drain
		}
		_ = uc.SetReadDeadline(time.Now().Add(wait))
		n, oobn, _, _, err := uc.ReadMsgUDP(buf, oob)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isClosed(err) {
				break
			}
			continue // an ICMP error on a connected socket
		}
		h, err := wire.ParseUDP(buf[:n])
		if err != nil || h.Type != wire.UDPData || !h.Matches(cookie) || h.Seq >= uint64(cfg.Packets) {
			continue // not this train's (the sender's warm-up datagram included)
		}
		st := sockopt.ParseRxStamp(oob[:oobn])
		at := st.At.UnixNano()
		if !st.Stamped {
			// The wall clock, the kernel stamps' own (CLOCK_REALTIME), so
			// one train never mixes two clocks.
			at, stamps = time.Now().UnixNano(), "user"
		}
		if !seen {
			seen, first = true, st.Drops
		}
		last = st.Drops
		rec.Add(h, at)
		got++
	}
	return last - first, stamps
}
