package tester

import (
	"bytes"
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
// Up, the stream's datagrams 9, 19, … are the probes: exactly 500,
// counted as data by the responder; down, the client sends 250 a second
// beside the responder's stream: 500 ± 2 % (its own schedule). Loopback
// loses none (≥ 99 % come back, the stream's own tolerance); the order
// statistics are ordered, the round trips positive and under 100 ms (a
// loopback round trip is two socket hops and a wake-up: tens of µs, a
// scheduler stall of this shared machine at worst), and the mean
// difference between consecutive probes' round trips (IPDV) lies within
// the spread.
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
			if !tc.reverse && (l.Probes != 500 || s.RecvPackets+s.Lost != s.SentPackets) {
				t.Errorf("%d probes, %d received + %d lost of %d sent: want 500 probes, all counted", l.Probes, s.RecvPackets, s.Lost, s.SentPackets)
			}
			if tc.reverse && (l.Probes < 490 || l.Probes > 510) {
				t.Errorf("%d probes, want 500 ± 2 %%", l.Probes)
			}
			if float64(l.Replies) < 0.99*float64(l.Probes) || l.Replies > l.Probes {
				t.Errorf("%d replies to %d probes: want ≥ 99 %% on loopback", l.Replies, l.Probes)
			}
			if !(0 < l.MinUs && l.MinUs <= l.P50Us && l.P50Us <= l.P90Us && l.P90Us <= l.P99Us && l.P99Us <= l.MaxUs && l.MaxUs < 100_000) {
				t.Errorf("round trips min %v p50 %v p90 %v p99 %v max %v µs: want 0 < ordered < 100 ms", l.MinUs, l.P50Us, l.P90Us, l.P99Us, l.MaxUs)
			}
			if l.MeanUs < l.MinUs || l.MeanUs > l.MaxUs || l.IPDVUs < 0 || l.IPDVUs > l.MaxUs-l.MinUs {
				t.Errorf("mean %v, IPDV %v µs: want within [min, max] and [0, max − min]", l.MeanUs, l.IPDVUs)
			}
			// At 2500 datagrams/s the sender keeps up unless this shared
			// host stalls it for over 100 ms (5 % of 2 s): the flag must
			// say which it was.
			if want := s.SentPackets < 4975 || s.SenderLate > s.SentPackets/20; s.GeneratorLimited != want {
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
	if err := report.Text(&b, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "generator-limited") {
		t.Errorf("text report does not say generator-limited:\n%s", b.String())
	}
}
