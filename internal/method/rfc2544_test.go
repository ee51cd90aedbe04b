package method

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/method/fakenet"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/rfc2544"
	"github.com/fullpipe/fullpipe/internal/vocab"
	"github.com/fullpipe/fullpipe/internal/wire"
)

func run2544(t *testing.T, p *fakenet.Path, cfg result.RFC2544Config) *result.RFC2544 {
	t.Helper()
	var lines int
	res, err := RunRFC2544(context.Background(), p, cfg, func(e Event) {
		if e.Kind == Line {
			lines++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if lines == 0 {
		t.Error("no progress lines")
	}
	return res
}

// TestRFC2544Clean: a 100 Mbit/s Ethernet path searched up from a line
// of 120 Mbit/s: each size's zero-loss throughput is the path's frames/s
// to within the resolution (0.5 % of 120 Mbit/s); latency at it is the
// base RTT plus one serialisation each way; the loss table loses the
// excess above 100 Mbit/s and stops after two clean steps; the loss
// depends on the rate (no lossy line).
func TestRFC2544Clean(t *testing.T) {
	p := &fakenet.Path{BaseRTT: 2 * time.Millisecond, RateBps: 100e6, QueuePackets: 40}
	res := run2544(t, p, result.RFC2544Config{LineRateBps: 120e6, FrameSizes: []int{128, 512, 1518}, Directions: []vocab.Direction{vocab.Up}})
	d := res.Directions[vocab.Up]
	if d == nil || len(d.Sizes) != 3 || d.Lossy != nil {
		t.Fatalf("direction %+v", d)
	}
	for _, s := range d.Sizes {
		want := rfc2544.LineFPS(100e6, s.FrameBytes)
		tp := s.Throughput
		if tp.ZeroLossFPS > want || tp.ZeroLossFPS < want-0.005*s.LineFPS {
			t.Errorf("%d B: throughput %.0f frames/s, want within 0.5 %% of the line below %.0f", s.FrameBytes, tp.ZeroLossFPS, want)
		}
		if tp.LossRatioFPS < tp.ZeroLossFPS || tp.LossRatioFPS > want/0.995 {
			t.Errorf("%d B: at 0.5 %% loss %.0f frames/s, want %.0f to %.0f", s.FrameBytes, tp.LossRatioFPS, tp.ZeroLossFPS, want/0.995)
		}
		rtt := float64(rfc2544.ExpectedRTT(2*time.Millisecond, s.FrameBytes, 100e6)) / 1e3
		if s.Latency == nil || math.Abs(s.Latency.Summary.MeanUs-rtt) > 1 {
			t.Errorf("%d B: latency %+v, want %.1f µs", s.FrameBytes, s.Latency, rtt)
		}
		if n := len(s.Loss); n < 3 || s.Loss[n-1].LossPct != 0 || s.Loss[0].LossPct < 16 {
			t.Errorf("%d B: loss table %+v", s.FrameBytes, s.Loss)
		}
		if s.Rate == nil || s.Rate.Verdict != "rate-dependent loss" {
			t.Errorf("%d B: rate verdict %+v", s.FrameBytes, s.Rate)
		}
		t.Logf("%d B: throughput %.0f (%.2f %%), latency %.1f µs, %d loss steps, %d trials",
			s.FrameBytes, tp.ZeroLossFPS, tp.ZeroLossPct, s.Latency.Summary.MeanUs, len(s.Loss), len(tp.Trials))
	}
}

// TestRFC2544BackToBack: bursts at the generator's 1 Gbit/s into a 100
// Mbit/s line with a queue of 40 packets: the longest burst without loss
// implies the queue within a frame, in frames and in bytes.
func TestRFC2544BackToBack(t *testing.T) {
	for _, q := range []int{1, 40, 200} {
		p := &fakenet.Path{BaseRTT: 2 * time.Millisecond, RateBps: 100e6, QueuePackets: q}
		res := run2544(t, p, result.RFC2544Config{LineRateBps: 100e6, FrameSizes: []int{128, 1518}, Directions: []vocab.Direction{vocab.Up},
			Tests: []string{result.BenchBackToBack}})
		for _, s := range res.Directions[vocab.Up].Sizes {
			b := s.BackToBack
			if b == nil || math.Abs(b.BufferFrames-float64(q)) > 1 || b.NoLimit || b.BufferBytes != b.BufferFrames*float64(s.FrameBytes) {
				t.Errorf("queue %d, %d B: back-to-back %+v, want a buffer of %d ± 1 frames", q, s.FrameBytes, b, q)
				continue
			}
			t.Logf("queue %d, %d B: longest %v → %.2f frames (%d bursts)", q, s.FrameBytes, b.Longest, b.BufferFrames, len(b.Trials))
		}
	}
}

// backToBack512 runs one back-to-back search of 512-byte frames up a
// 10 Mbit/s line on p.
func backToBack512(t *testing.T, p *fakenet.Path) (*result.RFC2544Size, *result.RFC2544BackToBack) {
	t.Helper()
	res := run2544(t, p, result.RFC2544Config{LineRateBps: 10e6, FrameSizes: []int{512}, Directions: []vocab.Direction{vocab.Up},
		Tests: []string{result.BenchBackToBack}, BurstTrials: 1})
	s := res.Directions[vocab.Up].Sizes[0]
	if s.BackToBack == nil {
		t.Fatal("no back-to-back")
	}
	return s, s.BackToBack
}

// TestRFC2544BackToBackHeldSender: a 10 Mbit/s line with a queue of 50
// packets, its sender held 1 ms halfway through every burst shorter than
// 50 frames (a busy host, CI beside a busy core) and not in the longer
// ones. The held bursts left at a sixth of the generator's rate; read
// with the median of every whole burst's rate (the buffer before this
// test) the queue is 47 frames. Each search's longest burst at its own
// rate gives 50 ± 1.
func TestRFC2544BackToBackHeldSender(t *testing.T) {
	const q = 50
	p := &fakenet.Path{BaseRTT: 2 * time.Millisecond, RateBps: 10e6, QueuePackets: q, TrainHold: time.Millisecond, HeldShorter: q}
	s, b := backToBack512(t, p)
	var fastest float64
	for _, tr := range b.Trials {
		fastest = max(fastest, tr.SendFPS)
	}
	held := 0
	for _, tr := range b.Trials {
		if tr.Received >= tr.Frames && tr.SendFPS < fastest/2 {
			held++
		}
	}
	median := rfc2544.Buffer(b.Longest[0], s.LineFPS, b.GeneratorFPS)
	t.Logf("longest %v; %d whole bursts held; the median rate %.0f frames/s reads %.2f frames, the longest's own %.2f", b.Longest, held, b.GeneratorFPS, median, b.BufferFrames)
	if held == 0 || math.Abs(median-q) <= 1 {
		t.Errorf("the fake did not make the case: %d whole bursts held, the median rate reads %.2f frames", held, median)
	}
	if math.Abs(b.BufferFrames-q) > 1 || b.NoLimit {
		t.Errorf("buffer %.2f frames, want %d ± 1", b.BufferFrames, q)
	}
}

// TestRFC2544BackToBackSlowLongest: CI run 36's case. A 10 Mbit/s line
// with a queue of 50 packets; the first send of a 51-frame burst is held
// 1 ms halfway (a busy host), every other burst leaves at the
// generator's rate. 51 frames pass whatever their rate (one in service,
// 50 waiting), 52 at the generator's rate do not: the search ends with
// 51 as its longest whole burst, sent slowly, which reads the queue
// below 49 frames. Sent again at the usual rate it reads 50 ± 1.
func TestRFC2544BackToBackSlowLongest(t *testing.T) {
	const q = 50
	// heldShorter: every send of a shorter burst is held too, so the
	// search's median rate is slow (CI run 40, beside a busy core), and
	// only the lost 52-frame burst shows the generator's rate.
	for _, heldShorter := range []int{0, q + 1} {
		p := &fakenet.Path{BaseRTT: 2 * time.Millisecond, RateBps: 10e6, QueuePackets: q, TrainHold: time.Millisecond,
			HeldTries: 1, HeldLength: q + 1, HeldShorter: heldShorter}
		s, b := backToBack512(t, p)
		var slow float64 // the first, held, send of q+1 frames
		sends := 0
		for _, tr := range b.Trials {
			if tr.Frames == q+1 {
				sends++
				if slow == 0 {
					slow = tr.SendFPS
				}
			}
		}
		held := rfc2544.Buffer(q+1, s.LineFPS, slow)
		t.Logf("held shorter than %d: longest %v, %d sends of %d frames, the first at %.0f frames/s (reads %.2f); generator %.0f frames/s; buffer %.2f frames (%d bursts)",
			heldShorter, b.Longest, sends, q+1, slow, held, b.GeneratorFPS, b.BufferFrames, len(b.Trials))
		if sends < 2 || held > q-1 {
			t.Errorf("held shorter than %d: the fake did not make the case: %d sends of %d frames, the held one reads %.2f", heldShorter, sends, q+1, held)
		}
		if math.Abs(b.BufferFrames-q) > 1 || b.NoLimit {
			t.Errorf("held shorter than %d: buffer %.2f frames, want %d ± 1", heldShorter, b.BufferFrames, q)
		}
	}
}

// TestRFC2544Lossy: a 2 Mbit/s line with BER 1e-6 loses at every rate:
// zero-loss throughput collapses, the loss is judged rate-independent,
// and the BER fitted to loss against size is within ×1.5, with the
// words that say why throughput is not the figure to read.
func TestRFC2544Lossy(t *testing.T) {
	p := &fakenet.Path{BaseRTT: 10 * time.Millisecond, RateBps: 2e6, BER: 1e-6}
	res := run2544(t, p, result.RFC2544Config{LineRateBps: 2e6, FrameSizes: []int{128, 512, 1518}, Directions: []vocab.Direction{vocab.Down},
		Tests: []string{result.BenchThroughput, result.BenchLoss}, Trial: 3 * time.Second})
	d := res.Directions[vocab.Down]
	if d.Lossy == nil {
		t.Fatalf("no lossy-line reading: %+v", d.Sizes[0].Rate)
	}
	l := d.Lossy
	if l.BER < 1e-6/1.5 || l.BER > 1.5e-6 || l.Verdict != "bit errors" || !strings.Contains(l.Why, "not what the path carries") {
		t.Errorf("lossy %+v", l)
	}
	// A 3 s trial at 20 % of the line carries 97 frames of 1518 B, 1.2
	// of them lost on average: only chance passes it.
	if d.Sizes[2].Throughput.ZeroLossPct > 20 {
		t.Errorf("1518 B zero-loss throughput %.1f %%: a line losing 1.2 %% of them has none worth the name", d.Sizes[2].Throughput.ZeroLossPct)
	}
	t.Logf("BER %.3g [%.3g, %.3g], %d lost of %d", l.BER, l.BERLow, l.BERHigh, l.Lost, l.Sent)
}

// TestRFC2544GeneratorLimited: a host that sends at most 50,000 frames/s
// stops the search at its first trial and says so, rather than reading
// its shortfall as the path's loss.
func TestRFC2544GeneratorLimited(t *testing.T) {
	p := &fakenet.Path{BaseRTT: time.Millisecond, RateBps: 100e6, GeneratorFPS: 50_000}
	res := run2544(t, p, result.RFC2544Config{LineRateBps: 100e6, FrameSizes: []int{128}, Directions: []vocab.Direction{vocab.Up}, Tests: []string{result.BenchThroughput}})
	tp := res.Directions[vocab.Up].Sizes[0].Throughput
	if tp.GeneratorLimitedFPS == 0 || len(tp.Trials) != 1 || !strings.Contains(strings.Join(res.Warnings, "\n"), "generator-limited at 84459 frames/s") {
		t.Errorf("throughput %+v, warnings %q", tp, res.Warnings)
	}
}

// TestRFC2544StallingHost: a host whose sender falls behind in every
// trial and loses 0.5 % to its catch-up bursts, on a clean 100 Mbit/s
// path: each trial is run maxTries times, and the search stops at its
// first trial, generator-limited, rather than reading the host's loss
// as the path's and searching down to a throughput the path does not
// have (TestRFC2544Throughput in CI read 87.1 % of the line so).
func TestRFC2544StallingHost(t *testing.T) {
	p := &fakenet.Path{BaseRTT: time.Millisecond, RateBps: 100e6, StallLossPct: 0.5}
	res := run2544(t, p, result.RFC2544Config{LineRateBps: 100e6, FrameSizes: []int{1518}, Directions: []vocab.Direction{vocab.Up}, Tests: []string{result.BenchThroughput}})
	tp := res.Directions[vocab.Up].Sizes[0].Throughput
	if tp.GeneratorLimitedFPS == 0 || len(tp.Trials) != 1 || tp.Trials[0].Tries != maxTries || tp.ZeroLossFPS != 0 {
		t.Errorf("throughput %+v, warnings %q: want one trial, tried %d times, generator-limited, no zero-loss figure", tp, res.Warnings, maxTries)
	}
}

// TestRFC2544LateOnOverload: a line 1 % slower than the one the user
// names, from a host that falls 9 frames behind in every trial (as CI's
// TestRFC2544Throughput did at 101 Mbit/s). The trials above the line
// lose more than a catch-up burst of 9 late frames could: that is the
// path's loss, so the search goes on down to the line's 8,127 frames/s
// instead of stopping there, generator-limited, and runs no trial twice.
func TestRFC2544LateOnOverload(t *testing.T) {
	p := &fakenet.Path{BaseRTT: time.Millisecond, RateBps: 100e6, LateFrames: 9}
	res := run2544(t, p, result.RFC2544Config{LineRateBps: 101e6, FrameSizes: []int{1518}, Directions: []vocab.Direction{vocab.Up}, Tests: []string{result.BenchThroughput}, ResolutionPct: 0.5})
	tp := res.Directions[vocab.Up].Sizes[0].Throughput
	want := rfc2544.LineFPS(100e6, 1518)
	if tp.GeneratorLimitedFPS != 0 || math.Abs(tp.ZeroLossFPS-want) > 0.01*want {
		t.Errorf("throughput %+v, warnings %q: want %.0f frames/s ± 1 %%, not generator-limited", tp, res.Warnings, want)
	}
	for _, tr := range tp.Trials {
		if tr.Tries != 1 {
			t.Errorf("trial at %.0f frames/s run %d times: its loss was the path's", tr.OfferedFPS, tr.Tries)
		}
	}
}

// TestRFC2544SettledLimit: CI run 17's search on a 100 Mbit/s line named
// 101 Mbit/s. Its last trial, 50 frames/s above the zero-loss rate
// found, came from a sender 120 frames late in its 2 s (a burst that could hold its
// loss), twice: generator-limited. The answer could move by less than
// the 0.5 % resolution asked, so it stands and the size is not flagged
// generator-limited; a trial so limited further above still flags it
// (TestRFC2544StallingHost).
func TestRFC2544SettledLimit(t *testing.T) {
	p := &fakenet.Path{BaseRTT: time.Millisecond, RateBps: 100e6}
	udp := func(ctx context.Context, c result.UDPConfig, f func(result.UDPInterval)) (*result.UDP, error) {
		res, err := p.UDP(ctx, c, f)
		if fps := float64(c.RateBps) / 8 / float64(c.Size); err == nil && fps > 8160 && fps < 8200 {
			res.Summary.SenderLate = 120
		}
		return res, err
	}
	res, err := RunRFC2544(context.Background(), scripted{Path: p, udp: udp}, result.RFC2544Config{LineRateBps: 101e6, FrameSizes: []int{1518},
		Directions: []vocab.Direction{vocab.Up}, Tests: []string{result.BenchThroughput}, ResolutionPct: 0.5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tp := res.Directions[vocab.Up].Sizes[0].Throughput
	want := rfc2544.LineFPS(100e6, 1518)
	last := tp.Trials[len(tp.Trials)-1]
	if tp.GeneratorLimitedFPS != 0 || math.Abs(tp.ZeroLossFPS-want) > 0.01*want || !last.GeneratorLimited || last.OfferedFPS < 8160 {
		t.Errorf("throughput %+v: want %.0f frames/s ± 1 %%, the last trial generator-limited within the resolution, the size not flagged", tp, want)
	}
}

// TestRFC2544Frame64: 64-byte frames go out as 18-byte payloads (the
// engine's compact header) and are measured like any other size.
func TestRFC2544Frame64(t *testing.T) {
	p := &fakenet.Path{BaseRTT: time.Millisecond, RateBps: 100e6}
	res := run2544(t, p, result.RFC2544Config{LineRateBps: 100e6, FrameSizes: []int{64, 128}, Directions: []vocab.Direction{vocab.Up}, Tests: []string{result.BenchThroughput}})
	s := res.Directions[vocab.Up].Sizes
	if s[0].Skipped != "" || s[0].PayloadBytes != wire.MinUDPSize || s[0].Throughput == nil || s[0].Throughput.ZeroLossPct != 100 {
		t.Errorf("64 B: %+v", s[0])
	}
}
