package tester

import (
	"bytes"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/report"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/serve"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// TestUDPLatencyProbes: 2500 datagrams/s for 2 s with one in 10 a
// latency probe, up and down, at 1000 and at 18 bytes (compact headers).
// Up, the stream's datagrams 9, 19, … are the probes: 500 (one per 10
// sent), counted as data by the responder; down, the client sends 250 a second
// beside the responder's stream: 500 ± 2 % (its own schedule). Loopback
// loses none (≥ 99 % come back, the stream's own tolerance); the order
// statistics are ordered, the round trips positive and shorter than the
// test (a loopback round trip is two socket hops and a wake-up: tens of
// µs, but a scheduler stall of this shared machine has been seen at
// 190 ms; only a round trip longer than the whole test is impossible),
// the median under 10 ms, and the mean difference between consecutive
// probes' round trips (IPDV) lies within the spread.
func TestUDPLatencyProbes(t *testing.T) {
	_, addr := startServer(t, serve.Config{})
	for _, tc := range []struct {
		name    string
		reverse bool
		size    int
	}{{"up", false, 1000}, {"down", true, 1000}, {"up-compact", false, wire.CompactLen}, {"down-compact", true, wire.CompactLen}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := result.UDPConfig{RateBps: int64(2500 * tc.size * 8), Size: tc.size, Duration: 2 * time.Second, Reverse: tc.reverse,
				Interval: 500 * time.Millisecond, Drain: 200 * time.Millisecond, EchoEvery: 10}
			res, err := RunUDP(testCtx(t, 20*time.Second), Target{Addr: addr}, cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			s, l := res.Summary, res.Summary.Latency
			if l == nil {
				t.Fatal("no latency")
			}
			t.Logf("sent %d received %d lost %d late %d; latency %+v", s.SentPackets, s.RecvPackets, s.Lost, s.SenderLate, *l)
			// (a sender this shared machine stalls stops at the duration
			// short of its 5000: one probe per 10 of those it sent)
			if !tc.reverse && (l.Probes != s.SentPackets/10 || s.SentPackets < 4900 || s.RecvPackets+s.Lost != s.SentPackets) {
				t.Errorf("%d probes, %d received + %d lost of %d sent: want 1 in 10 probes of ≥ 4900, all counted", l.Probes, s.RecvPackets, s.Lost, s.SentPackets)
			}
			if tc.reverse && (l.Probes < 490 || l.Probes > 510) {
				t.Errorf("%d probes, want 500 ± 2 %%", l.Probes)
			}
			if float64(l.Replies) < 0.99*float64(l.Probes) || l.Replies > l.Probes {
				t.Errorf("%d replies to %d probes: want ≥ 99 %% on loopback", l.Replies, l.Probes)
			}
			span := float64(cfg.Duration+cfg.Drain) / 1e3
			if !(0 < l.MinUs && l.MinUs <= l.P50Us && l.P50Us <= l.P90Us && l.P90Us <= l.P99Us && l.P99Us <= l.MaxUs && l.MaxUs < span && l.P50Us < 10_000) {
				t.Errorf("round trips min %v p50 %v p90 %v p99 %v max %v µs: want 0 < ordered < %v µs, p50 < 10 ms", l.MinUs, l.P50Us, l.P90Us, l.P99Us, l.MaxUs, span)
			}
			if l.MeanUs < l.MinUs || l.MeanUs > l.MaxUs || l.IPDVUs < 0 || l.IPDVUs > l.MaxUs-l.MinUs {
				t.Errorf("mean %v, IPDV %v µs: want within [min, max] and [0, max − min]", l.MeanUs, l.IPDVUs)
			}
			// At 2500 datagrams/s the sender keeps up unless this shared
			// host stalls it for over 100 ms (5 % of 2 s): the flag must
			// say which it was. Short of 99.5 % of the 5000 scheduled
			// (4975) by more than the one last datagram the duration may
			// cut (flow.GeneratorLimited): 4974 sent is not limited.
			if want := s.SentPackets+1 < 4975 || s.SenderLate > s.SentPackets/20; s.GeneratorLimited != want {
				t.Errorf("generator-limited %v with %d sent of 5000, %d late: want %v", s.GeneratorLimited, s.SentPackets, s.SenderLate, want)
			}
		})
	}
}

// TestUDPGeneratorLimited: 18-byte datagrams asked at 10 Gbit/s (69 M
// datagrams/s, far above what one core sends) for 1 s: the sender falls
// behind and sends far fewer than its schedule holds, so the summary is
// flagged generator-limited, and the text report says so. At an easy
// rate (TestUDPLatencyProbes) it is not.
func TestUDPGeneratorLimited(t *testing.T) {
	_, addr := startServer(t, serve.Config{})
	cfg := result.UDPConfig{RateBps: 10e9, Size: wire.CompactLen, Duration: time.Second, Interval: 500 * time.Millisecond, Drain: 200 * time.Millisecond}
	res, err := RunUDP(testCtx(t, 20*time.Second), Target{Addr: addr}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	t.Logf("sent %d (%.3g datagrams/s), received %d, lost %d (%d by the receiving socket), late %d", s.SentPackets, float64(s.SentPackets)/cfg.Duration.Seconds(), s.RecvPackets, s.Lost, s.ReceiverDrops, s.SenderLate)
	if !s.GeneratorLimited {
		t.Errorf("%d datagrams sent of the 69 M asked: want generator-limited", s.SentPackets)
	}
	var b bytes.Buffer
	if err := report.RenderUDP.Text(&b, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "generator-limited") {
		t.Errorf("text report does not say generator-limited:\n%s", b.String())
	}
}

// TestUDPSpeed measures the whole udp test at 64-byte frames (18-byte
// payloads) asked at 1 M datagrams/s for 2 s, each way, against the
// in-process responder. A measurement, not a check (the machine is
// shared): set FULLPIPE_SPEED=1 to run it.
func TestUDPSpeed(t *testing.T) {
	if os.Getenv("FULLPIPE_SPEED") == "" {
		t.Skip("FULLPIPE_SPEED not set")
	}
	_, addr := startServer(t, serve.Config{})
	for _, reverse := range []bool{false, true} {
		cfg := result.UDPConfig{RateBps: 18 * 8 * 1e6, Size: wire.CompactLen, Duration: 2 * time.Second, Reverse: reverse, Interval: 500 * time.Millisecond, Drain: 300 * time.Millisecond}
		res, err := RunUDP(testCtx(t, 20*time.Second), Target{Addr: addr}, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		t.Logf("%s: sent %d (%.3g/s), received %d, lost %d (%d by the receiving socket), late %d, limited %v, client CPU %+v, server CPU %+v",
			s.Direction, s.SentPackets, float64(s.SentPackets)/2, s.RecvPackets, s.Lost, s.ReceiverDrops, s.SenderLate, s.GeneratorLimited, s.ClientCPU, s.ServerCPU)
	}
}

// TestUDPIPv6: the same stream over ::1, both ways, at 18 bytes (compact
// headers), 20,000 datagrams/s (batches of UDP GSO), marked AF41 and
// with one in 100 a latency probe: the IPv6 paths of the batched I/O
// and of the marking. Loopback loses none (1 % tolerated, as above); a
// sender stalled by this shared machine sends short of its 20,000 and
// is flagged generator-limited.
func TestUDPIPv6(t *testing.T) {
	if ln, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback}); err != nil {
		t.Skip("no IPv6 loopback:", err)
	} else {
		ln.Close()
	}
	_, addr := startServer(t, serve.Config{Listen: "[::1]:0"})
	for _, reverse := range []bool{false, true} {
		cfg := result.UDPConfig{RateBps: 18 * 8 * 20_000, Size: wire.CompactLen, Duration: time.Second, Reverse: reverse,
			Interval: 500 * time.Millisecond, Drain: 200 * time.Millisecond, DSCP: 34, EchoEvery: 100}
		res, err := RunUDP(testCtx(t, 20*time.Second), Target{Addr: addr}, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		t.Logf("%s: sent %d received %d lost %d; latency %+v", s.Direction, s.SentPackets, s.RecvPackets, s.Lost, s.Latency)
		// a sender this shared machine stalls stops short, and says so
		if (s.SentPackets < 19_900 && !s.GeneratorLimited) || s.RecvPackets+s.Lost != s.SentPackets || s.LossPct > 1 {
			t.Errorf("%s: sent %d (generator-limited %v), received %d, lost %d: want 20,000 sent or the flag, all counted, ≤ 1 %% lost", s.Direction, s.SentPackets, s.GeneratorLimited, s.RecvPackets, s.Lost)
		}
		if s.Latency == nil || s.Latency.Probes < s.SentPackets/100-1 || float64(s.Latency.Replies) < 0.99*float64(s.Latency.Probes) {
			t.Errorf("%s: latency %+v: want ~200 probes, ≥ 99 %% answered", s.Direction, s.Latency)
		}
	}
}
