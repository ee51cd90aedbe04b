package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fullpipe/fullpipe/internal/ctxtime"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// abuseCounts is what the abuse mix did.
type abuseCounts struct {
	conns, frames, datagrams, stalled atomic.Int64
}

// abuses run concurrently with the legitimate clients, each until ctx ends.
var abuses = []func(context.Context, *abuseCounts){abuseIdle, abuseFrames, abuseUDP, abuseStall}

// dial opens a TCP connection to the responder from bind.
func dial(bind string, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP(bind)}}
	return d.Dial("tcp", addr)
}

func preamble() []byte {
	b := []byte(wire.MagicControl + "\x00\x00")
	binary.BigEndian.PutUint16(b[4:], wire.Version)
	return b
}

// abuseIdle: rounds of 8 addresses × 300 connections, half silent, half
// stopping after the preamble, each held 2.5 s.
func abuseIdle(ctx context.Context, a *abuseCounts) {
	for ctx.Err() == nil {
		var held []net.Conn
		for i := range 8 * 300 {
			if ctx.Err() != nil {
				break
			}
			c, err := dial(fmt.Sprintf("127.0.2.%d", 1+i%8), 500*time.Millisecond)
			if err != nil {
				continue
			}
			a.conns.Add(1)
			if i%2 == 1 {
				_ = c.SetWriteDeadline(time.Now().Add(time.Second))
				_, _ = c.Write(preamble())
			}
			held = append(held, c)
		}
		ctxtime.Sleep(ctx, 2500*time.Millisecond)
		for _, c := range held {
			c.Close()
		}
	}
}

// garbage is what abuseFrames sends after a preamble, in turn.
var garbage = [][]byte{
	{0x00, 0x10, 0x00, 0x00},                             // announces 1 MiB, sends nothing
	{0xff, 0xff, 0xff, 0xff},                             // announces 4 GiB
	append([]byte{0, 0, 0x20, 0}, make([]byte, 8192)...), // 8 KiB of zeros, beyond the 4 KiB limit
	append([]byte{0, 0, 0, 20}, "{not json at all....."...),
	frame(`{"type":"request","body":{"kind":"tcp","streams":2,"duration_ns":1000000000,"interval_ns":10000000,"reverse":true,"pacing_bps":4611686018427387904}}`),
	frame(`{"type":"request","body":{"kind":"udp","duration_ns":100000000,"interval_ns":10000000,"reverse":true,"rate_bps":9200000000000000000,"size":40}}`),
}

func frame(js string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(js))), js...)
}

// abuseFrames: 20 connections every 100 ms, each a preamble and one kind
// of bad frame, read until the responder closes (2 s at most).
func abuseFrames(ctx context.Context, a *abuseCounts) {
	for n := 0; ctx.Err() == nil; n++ {
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := dial("127.0.2.9", 500*time.Millisecond)
				if err != nil {
					return
				}
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(2 * time.Second))
				_, _ = c.Write(append(preamble(), garbage[(n+i)%len(garbage)]...))
				a.frames.Add(1)
				_, _ = bufio.NewReader(c).Discard(1 << 20)
			}()
		}
		wg.Wait()
		ctxtime.Sleep(ctx, 100*time.Millisecond)
	}
}

const floodPorts = 64

// abuseUDP: 64 source ports, each 2 datagrams every 10 ms (12,800/s):
// random bytes, and fullpipe headers with random cookies asking for
// 65,507-byte echo replies.
func abuseUDP(ctx context.Context, a *abuseCounts) {
	var socks []*net.UDPConn
	for range floodPorts {
		c, err := net.DialUDP("udp", &net.UDPAddr{IP: net.ParseIP("127.0.2.10")}, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
		if err != nil {
			continue
		}
		defer c.Close()
		socks = append(socks, c)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 1200)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for ctx.Err() == nil {
		for _, c := range socks {
			for k := range 2 {
				for i := range buf {
					buf[i] = byte(rng.Uint32())
				}
				if k == 1 {
					wire.PutUDP(buf, wire.UDPHeader{Type: wire.UDPEcho, EchoMode: wire.EchoSized, EchoSize: 65507})
				}
				_, _ = c.Write(buf[:40+rng.IntN(len(buf)-40)])
				a.datagrams.Add(1)
			}
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// abuseStall: rounds of 2 reverse TCP tests (2 s, 1 stream) and 8 rtt
// sessions whose client starts them and then reads nothing and never
// stops; each round holds them 10 s (the responder ends them at 2 s +
// 6 s) before it closes them.
func abuseStall(ctx context.Context, a *abuseCounts) {
	for ctx.Err() == nil {
		var held []net.Conn
		for i := range 10 {
			req := wire.Request{Kind: wire.KindRTT, Duration: 2 * time.Second, Interval: 10 * time.Millisecond}
			if i < 2 {
				req = wire.Request{Kind: wire.KindTCP, Streams: 1, Duration: 2 * time.Second, Interval: 10 * time.Millisecond, Reverse: true}
			}
			conns, err := stalled(fmt.Sprintf("127.0.3.%d", 1+i%4), req)
			held = append(held, conns...)
			if err == nil {
				a.stalled.Add(1)
			}
		}
		ctxtime.Sleep(ctx, 10*time.Second)
		for _, c := range held {
			c.Close()
		}
	}
}

// stalled opens a session of req from bind, its data connection if any,
// and starts it; it returns the connections, to be held unread.
func stalled(bind string, req wire.Request) ([]net.Conn, error) {
	c, err := dial(bind, time.Second)
	if err != nil {
		return nil, err
	}
	conns := []net.Conn{c}
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	br := bufio.NewReader(c)
	var acc wire.Accept
	err = firstErr(
		func() error { return wire.WritePreamble(c, wire.MagicControl) },
		func() error { _, _, err := wire.ReadPreamble(br); return err },
		func() error { m, err := wire.Decode(br); return into(m, err, wire.TypeHello, &wire.Hello{}) },
		func() error { return wire.Encode(c, wire.TypeRequest, req) },
		func() error { m, err := wire.Decode(br); return into(m, err, wire.TypeAccept, &acc) },
	)
	if err == nil && req.Kind == wire.KindTCP {
		var d net.Conn
		if d, err = dial(bind, time.Second); err == nil {
			conns = append(conns, d)
			_ = d.SetWriteDeadline(time.Now().Add(time.Second))
			_, err = d.Write(append(append([]byte(wire.MagicData), preamble()[4:]...), mustFrame(wire.DataHello{Cookie: acc.Cookie})...))
		}
	}
	if err == nil {
		err = wire.Encode(c, wire.TypeStart, nil)
	}
	return conns, err
}

func into(m wire.Msg, err error, typ string, v any) error {
	if err != nil {
		return err
	}
	return m.Into(typ, v)
}

func firstErr(steps ...func() error) error {
	for _, f := range steps {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

func mustFrame(dh wire.DataHello) []byte {
	var b bufferWriter
	if err := wire.Encode(&b, wire.TypeData, dh); err != nil {
		panic(err)
	}
	return b
}

type bufferWriter []byte

func (b *bufferWriter) Write(p []byte) (int, error) { *b = append(*b, p...); return len(p), nil }
