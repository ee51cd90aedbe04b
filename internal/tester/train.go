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
	"github.com/fullpipe/fullpipe/internal/sockopt"
	"github.com/fullpipe/fullpipe/internal/vocab"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// trainRecvBuffer is the down receiver's socket buffer: the whole of a
// long train may arrive while the reader is scheduled out.
const trainRecvBuffer = 32 << 20

// trainWriter writes the up train's datagrams (a test holds a write).
var trainWriter = flow.ConnWriter

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

// readTrain records the train's datagrams until all arrived, or none came
// for cfg.Drain after the first (3 s before it), or ctx ends. It returns
// how many this socket dropped meanwhile and where the stamps came from.
func readTrain(ctx context.Context, uc *net.UDPConn, cookie wire.Cookie, rec *flow.TrainRecorder, cfg result.TrainConfig) (drops uint32, stamps string) {
	stop := context.AfterFunc(ctx, func() { _ = uc.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	buf, oob := make([]byte, 65536), make([]byte, sockopt.RxStampSpace)
	stamps = "kernel"
	var first, last uint32
	seen, got := false, 0
	for got < cfg.Packets && ctx.Err() == nil {
		wait := 3*time.Second + cfg.Drain
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
