package serve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/fullpipe/fullpipe/internal/flow"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// run measures: it starts the session's workers, reports every interval,
// and sends the result when the workers are done, the client stops, or the
// hard deadline passes. It returns an error when the test ended early.
func (ss *session) run(ctx context.Context, c net.Conn, br *bufio.Reader) error {
	req := ss.req
	tctx, cancel := context.WithTimeout(ctx, ss.srv.hardDeadline(req))
	defer cancel()

	stopped := ss.readStop(br, cancel)

	_ = c.SetWriteDeadline(time.Now().Add(writeTimeout)) // control cleared the handshake's deadline
	if err := wire.Encode(c, wire.TypeStarted, wire.Started{}); err != nil {
		return err
	}
	workers := ss.startWorkers(tctx)
	workersDone := make(chan struct{})
	go func() { workers.Wait(); close(workersDone) }()
	done := workersDone
	if !ss.hasWorkers() {
		done = nil // UDP receive and RTT tests end when the client says so
	}

	interval := time.NewTimer(req.Interval)
	defer interval.Stop()
	reason := ""
	for idx, next := 0, req.Interval; ; {
		select {
		case <-interval.C:
			iv := ss.sample(idx, next-req.Interval)
			iv.EndNs = int64(next)
			_ = c.SetWriteDeadline(time.Now().Add(writeTimeout)) // a client that stops reading cannot hold the session
			if err := wire.Encode(c, wire.TypeInterval, iv); err != nil {
				cancel()
				<-workersDone
				res := ss.result()
				res.Partial, res.Reason = true, "control connection lost: "+err.Error()
				ss.record(res)
				return err
			}
			idx++
			next += req.Interval
			interval.Reset(max(0, next-ss.clock.Since()))
			continue
		case <-done:
		case reason = <-stopped:
		case <-tctx.Done():
			// The stop reader cancels tctx right after it delivers the
			// client's reason: prefer that reason when both are ready.
			select {
			case reason = <-stopped:
			default:
				reason = "responder's deadline for this test passed"
				if ctx.Err() != nil {
					reason = "the responder is shutting down"
				}
			}
		}
		break
	}
	cancel()
	<-workersDone
	res := ss.result()
	if reason == "" {
		reason = ss.streamFailure() // streams that end in an error end the test early too (a vanished client)
	}
	if reason != "" && reason != "done" {
		res.Partial, res.Reason = true, reason
	}
	// Free the session's slot before the client hears the result, so a
	// client that starts its next test at once is not refused as busy;
	// the record (a log line, maybe a file and its fsync) comes after the
	// result, which the client waits for only a second or so.
	ss.srv.unregister(ss)
	_ = c.SetWriteDeadline(time.Now().Add(writeTimeout))
	err := wire.Encode(c, wire.TypeResult, res)
	ss.record(res)
	if err != nil {
		return err
	}
	if res.Partial {
		return errors.New(reason)
	}
	return nil
}

// readStop reads the one frame a client sends during a test, after auth
// a normal frame: stop and its reason, anything else "control connection
// lost". It delivers the reason on the channel it returns (never
// closed), then cancels the test. It ends when the connection is closed
// by control's defer.
func (ss *session) readStop(br *bufio.Reader, cancel context.CancelFunc) <-chan string {
	stopped := make(chan string, 1)
	go func() {
		defer ss.srv.survive("stop reader", ss.peerIP.String())
		m, err := wire.Decode(br)
		reason := "control connection lost"
		if err == nil {
			var st wire.Stop
			if m.Into(wire.TypeStop, &st) == nil {
				reason = st.Reason
				ss.trainHeld(st.Held)
			}
		}
		stopped <- reason
		cancel()
	}()
	return stopped
}

// streamFailed keeps the first error a stream ended with.
func (ss *session) streamFailed(err error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.streamErr == nil {
		ss.streamErr = err
	}
}

// streamFailure is why the streams ended early, "" if none failed.
func (ss *session) streamFailure() string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.streamErr == nil {
		return ""
	}
	return ss.streamErr.Error()
}

func (ss *session) hasWorkers() bool {
	return ss.req.Kind == wire.KindTCP || (ss.req.Reverse && (ss.req.Kind == wire.KindUDP || ss.req.Kind == wire.KindTrain))
}

// startWorkers starts one goroutine per stream (and the UDP sender); each
// ends when its stream ends or ctx does.
func (ss *session) startWorkers(ctx context.Context) *sync.WaitGroup {
	var wg sync.WaitGroup
	req := ss.req
	sendCtx, sendCancel := ctx, context.CancelFunc(func() {})
	if req.Bytes == 0 && req.Duration > 0 {
		sendCtx, sendCancel = context.WithTimeout(ctx, req.Duration)
	}
	ss.mu.Lock()
	streams, peer, clk := ss.streams, ss.udpPeer, ss.clock
	ss.mu.Unlock()
	var senders []*net.TCPConn
	if req.Kind == wire.KindTCP {
		ss.rx = flow.NewSeries(req.Duration)
		for _, st := range streams {
			if st.serverSends() {
				senders = append(senders, st.conn)
			} else {
				st.ctr.Series = ss.rx
			}
		}
	}
	for _, st := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer ss.srv.survive("stream", ss.peerIP.String())
			var err error
			if st.serverSends() {
				spec := flow.SendSpec{Bytes: flow.Share(req.Bytes, req.Streams, st.hello.Stream), Window: req.Window, Test: ctx, WriteSize: req.WriteSize}
				err = flow.SendTCP(sendCtx, st.conn, spec, &st.ctr)
			} else {
				err = flow.RecvTCP(ctx, st.conn, clk, &st.ctr)
			}
			if err != nil && ctx.Err() == nil {
				ss.log.Info("stream ended with an error", "stream", st.hello.Stream, "err", err)
				ss.streamFailed(fmt.Errorf("stream %d: %w", st.hello.Stream, err))
			}
		}()
	}
	if req.Kind == wire.KindUDP && req.Reverse {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer ss.srv.survive("udp sender", ss.peerIP.String())
			spec := flow.UDPSpec{Cookie: ss.cookie, RateBps: req.RateBps, Size: req.Size, Duration: req.Duration}
			flow.SendUDP(ctx, flow.NewUDPOut(ss.srv.udp, peer, req.DSCP), clk, spec, &ss.udpTx)
		}()
	}
	if req.Kind == wire.KindTrain && req.Reverse {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer ss.srv.survive("train sender", ss.peerIP.String())
			ss.sendTrain(ctx)
		}()
	}
	streamsDone := make(chan struct{})
	go func() { wg.Wait(); sendCancel(); close(streamsDone) }()
	if len(senders) > 0 {
		go func() { // ends with the streams
			defer ss.srv.survive("rtt sampler", ss.peerIP.String())
			ss.rtt.Run(streamsDone, clk, senders)
		}()
	}
	return &wg
}

// sample is the server's cumulative view at the end of interval idx.
func (ss *session) sample(idx int, start time.Duration) wire.Interval {
	iv := wire.Interval{Index: idx, StartNs: int64(start)}
	iv.Streams, iv.UDP = ss.figures()
	iv.Series = ss.series(false)
	return iv
}

func (ss *session) result() wire.Result {
	var r wire.Result
	r.Streams, r.UDP = ss.figures()
	r.Series = ss.series(true)
	r.Train = ss.trainResult()
	r.Load = ss.load.Since()
	return r
}

// series is what the client does not have yet of the time series: the
// bins completed by now (all of them at the end) and the new RTT points.
func (ss *session) series(final bool) *wire.Series {
	if ss.req.Kind != wire.KindTCP || ss.rx == nil {
		return nil
	}
	to := int(ss.clock.Since() / flow.SeriesBin) // the bin in progress is not complete
	if final {
		to = ss.rx.Len()
	}
	out := &wire.Series{FromBin: ss.rxSent}
	if to > ss.rxSent {
		out.RxBins = ss.rx.Bins(ss.rxSent, to)
		ss.rxSent += len(out.RxBins)
	}
	out.RTT, ss.rttSent = ss.rtt.Since(ss.rttSent)
	if len(out.RxBins) == 0 && len(out.RTT) == 0 {
		return nil
	}
	return out
}

// figures returns every stream's cumulative counters and, for streams the
// server sends, its TCP_INFO.
func (ss *session) figures() ([]wire.StreamSample, *wire.UDPStats) {
	ss.mu.Lock()
	streams := ss.streams
	ss.mu.Unlock()
	out := make([]wire.StreamSample, 0, len(streams))
	for _, st := range streams {
		s := flow.StreamSample(st.conn, &st.ctr, st.hello.Stream, st.hello.ClientSends, st.serverSends())
		out = append(out, s)
	}
	var u *wire.UDPStats
	switch {
	case ss.udpRx != nil:
		st := ss.udpRx.Stats(0)
		st.LocalDrops = ss.localDrops()
		u = &st
	case ss.req.Kind == wire.KindUDP:
		u = &wire.UDPStats{SentPackets: ss.udpTx.Packets.Load(), SentBytes: ss.udpTx.Bytes.Load(),
			SentLate: ss.udpTx.Late.Load(), SentSlipNs: ss.udpTx.MaxSlip.Load()}
	}
	return out, u
}
