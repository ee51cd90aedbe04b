package stamp

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// relay is a UDP relay on 127.0.0.1 between a sender and a reflector
// that drops, duplicates or holds packets by their sender sequence number
// (octets 0..3 of a request; 24..27 of an unauthenticated reply): the
// test's lossy path, over real sockets.
type relay struct {
	front, back *net.UDPConn
	dropFwd     map[uint32]bool
	dropBack    map[uint32]bool
	dupBack     map[uint32]bool
	holdBack    map[uint32]bool // sent after the next reply instead
}

// startRelay runs r's two goroutines until the test ends; each ends when
// its socket is closed (in cleanup), and cleanup waits for both.
func startRelay(t *testing.T, r *relay, to *net.UDPAddr) *net.UDPAddr {
	t.Helper()
	var err error
	if r.front, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}); err != nil {
		t.Fatal(err)
	}
	if r.back, err = net.DialUDP("udp", nil, to); err != nil {
		t.Fatal(err)
	}
	var client net.Addr
	var mu sync.Mutex // guards client
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, 65536)
		for {
			n, from, err := r.front.ReadFrom(buf)
			if err != nil {
				return
			}
			mu.Lock()
			client = from
			mu.Unlock()
			if n >= 4 && !r.dropFwd[binary.BigEndian.Uint32(buf)] {
				r.back.Write(buf[:n])
			}
		}
	})
	wg.Go(func() {
		buf := make([]byte, 65536)
		var held []byte
		for {
			n, err := r.back.Read(buf)
			if err != nil {
				return
			}
			mu.Lock()
			to := client
			mu.Unlock()
			seq := binary.BigEndian.Uint32(buf[24:])
			switch {
			case r.dropBack[seq]:
			case r.holdBack[seq]:
				held = append([]byte(nil), buf[:n]...)
			default:
				r.front.WriteTo(buf[:n], to)
				if r.dupBack[seq] {
					r.front.WriteTo(buf[:n], to)
				}
				if held != nil {
					r.front.WriteTo(held, to)
					held = nil
				}
			}
		}
	})
	t.Cleanup(func() {
		r.front.Close()
		r.back.Close()
		wg.Wait()
	})
	return r.front.LocalAddr().(*net.UDPAddr)
}

func runSender(t *testing.T, cfg SenderConfig) Result {
	t.Helper()
	s, err := NewSender(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := s.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestSenderLoopback(t *testing.T) {
	for _, f := range []Format{NTP, PTP} {
		t.Run(f.String(), func(t *testing.T) {
			r := startReflector(t, ReflectorConfig{Stateful: true, Format: f})
			res := runSender(t, SenderConfig{Target: r.Addr().String(), Count: 50, Interval: 2 * time.Millisecond,
				Wait: 300 * time.Millisecond, Format: f, Size: 100, Stateful: true})
			t.Logf("RTT %+v; residence %+v; forward %+v", res.RTT, res.Residence, res.Forward)
			if res.Sent != 50 || res.Received != 50 || res.Lost != 0 || res.Duplicates != 0 || res.Unknown != 0 {
				t.Fatalf("%+v", res)
			}
			// Loopback: well under 50 ms even on a loaded 2-core machine;
			// the residence time (T3−T2) is removed, so RTT ≥ 0 up to the
			// NTP fraction's rounding.
			if res.RTT.MinUs < -1 || res.RTT.MaxUs > 50_000 || res.RTT.P50Us < res.RTT.MinUs || res.RTT.P99Us > res.RTT.MaxUs {
				t.Errorf("RTT %+v", res.RTT)
			}
			if res.Residence.MinUs < 0 {
				t.Errorf("residence %+v", res.Residence)
			}
			// One clock on both ends: one-way delays are real here.
			if res.Forward.MinUs < -1 || res.Backward.MinUs < -1 {
				t.Errorf("one-way forward %+v backward %+v on one clock", res.Forward, res.Backward)
			}
			for i, rec := range res.Records {
				if rec.ReflectorSeq != uint32(i) || rec.Seq != uint32(i) {
					t.Fatalf("record %d: %+v", i, rec)
				}
			}
		})
	}
}

// The relay drops 3 and 4 on the way out, 7 on the way back, and the
// last packet (19) on the way out; duplicates reply 10 and holds reply
// 12 until 13's has gone.
func TestSenderLossDirections(t *testing.T) {
	for _, stateful := range []bool{true, false} {
		name := map[bool]string{true: "stateful", false: "stateless"}[stateful]
		t.Run(name, func(t *testing.T) {
			ref := startReflector(t, ReflectorConfig{Stateful: stateful})
			rl := &relay{dropFwd: map[uint32]bool{3: true, 4: true, 19: true}, dropBack: map[uint32]bool{7: true},
				dupBack: map[uint32]bool{10: true}, holdBack: map[uint32]bool{12: true}}
			to := startRelay(t, rl, ref.Addr())
			res := runSender(t, SenderConfig{Target: to.String(), Count: 20, Interval: 3 * time.Millisecond,
				Wait: 300 * time.Millisecond, Stateful: stateful})
			want := Result{Sent: 20, Received: 16, Lost: 4, Duplicates: 1, OutOfOrder: 1}
			if stateful {
				want.LostForward, want.LostBackward, want.LostUnknown = 2, 1, 1
			} else {
				want.LostUnknown = 4
			}
			got := Result{Sent: res.Sent, Received: res.Received, Lost: res.Lost, Duplicates: res.Duplicates, OutOfOrder: res.OutOfOrder,
				LostForward: res.LostForward, LostBackward: res.LostBackward, LostUnknown: res.LostUnknown}
			if got.Sent != want.Sent || got.Received != want.Received || got.Lost != want.Lost || got.Duplicates != want.Duplicates ||
				got.OutOfOrder != want.OutOfOrder || got.LostForward != want.LostForward || got.LostBackward != want.LostBackward ||
				got.LostUnknown != want.LostUnknown {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestSenderAuthenticated(t *testing.T) {
	key := []byte("session key")
	r := startReflector(t, ReflectorConfig{Key: key})
	res := runSender(t, SenderConfig{Target: r.Addr().String(), Count: 5, Interval: time.Millisecond, Wait: 200 * time.Millisecond, Key: key})
	if res.Received != 5 || res.BadAuth != 0 {
		t.Errorf("%+v", res)
	}
	res = runSender(t, SenderConfig{Target: r.Addr().String(), Count: 5, Interval: time.Millisecond, Wait: 200 * time.Millisecond, Key: []byte("wrong")})
	if res.Received != 0 || r.Stats().BadAuth != 5 {
		t.Errorf("wrong key: %+v; reflector %+v", res, r.Stats())
	}
}

func TestSenderCancel(t *testing.T) {
	r := startReflector(t, ReflectorConfig{})
	s, err := NewSender(SenderConfig{Target: r.Addr().String(), Count: 1000, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := s.Run(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Errorf("Run = %v after %v", err, time.Since(start))
	}
	if res.Sent == 0 || res.Sent >= 1000 {
		t.Errorf("sent %d before the cancel", res.Sent)
	}
}

func TestSenderConfig(t *testing.T) {
	for _, c := range []SenderConfig{{}, {Target: "127.0.0.1:1", Size: 43}, {Target: "127.0.0.1:1", Key: []byte("k"), Size: 100}, {Target: "127.0.0.1:1", Count: MaxCount + 1}} {
		if _, err := NewSender(c); err == nil {
			t.Errorf("%+v was taken", c)
		}
	}
}

// A TWAMP-Light responder that sends only the 38 octets of timing fields
// (no MBZ, no Sender TTL; nokia/twampy does, unpadded) is still read.
func TestSenderShortTWAMPReplies(t *testing.T) {
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { pc.Close(); <-done })
	go func() { // ends when pc is closed
		defer close(done)
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			req, err := DecodeSender(buf[:n], true)
			if err != nil {
				continue
			}
			out := make([]byte, TWAMPReflectedMin)
			now := Stamp(time.Now(), NTP)
			EncodeReflector(out, ReflectorPacket{Seq: req.Seq, Timestamp: now, ReceiveTimestamp: now, SenderSeq: req.Seq,
				SenderTimestamp: req.Timestamp, SenderErrorEstimate: req.ErrorEstimate, SenderTTL: 64})
			pc.WriteTo(out[:ReflectedTimingMin], from)
		}
	}()
	res := runSender(t, SenderConfig{Target: pc.LocalAddr().String(), Count: 5, Interval: time.Millisecond, Wait: 200 * time.Millisecond})
	if res.Received != 5 || res.Unknown != 0 {
		t.Errorf("%+v", res)
	}
}

// TestSendSchedule: on fake time, packet k leaves at exactly start + k ×
// Interval, and a context ending between two packets ends the schedule
// then with its error.
func TestSendSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer sink.Close()
		conn, err := net.DialUDP("udp", nil, sink.LocalAddr().(*net.UDPAddr))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		s, err := NewSender(SenderConfig{Target: sink.LocalAddr().String(), Count: 5, Interval: 7 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		recs := make([]Record, 5)
		var mu sync.Mutex
		if err := s.send(context.Background(), conn, recs, &mu); err != nil {
			t.Fatal(err)
		}
		for k, r := range recs {
			if want := start.Add(time.Duration(k) * 7 * time.Millisecond); !r.T1.Equal(want) || r.Seq != uint32(k) {
				t.Errorf("packet %d (seq %d) sent at %v, want exactly %v", k, r.Seq, r.T1.Sub(start), want.Sub(start))
			}
		}

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		start = time.Now()
		recs = make([]Record, 5)
		if err := s.send(ctx, conn, recs, &mu); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 10*time.Millisecond {
			t.Errorf("send = %v after %v, want the deadline's error after exactly 10 ms", err, time.Since(start))
		}
		if !recs[1].T1.Equal(start.Add(7*time.Millisecond)) || !recs[2].T1.IsZero() {
			t.Errorf("sent at %v, %v, want 0, 7 ms and no third", recs[0].T1.Sub(start), recs[1].T1.Sub(start))
		}
	})
}
