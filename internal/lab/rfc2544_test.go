package lab

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/result/resulttest"
	"github.com/fullpipe/fullpipe/internal/rfc2544"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// runRFC2544 runs `fullpipe rfc2544` (upload) from the client namespace
// against a responder in the server namespace, until the lab held its
// path over a run for b; its document must validate against
// docs/schema/rfc2544.schema.json. It returns the up direction and the
// lab's account of the held run.
func runRFC2544(t *testing.T, l *Lab, b Budget, args ...string) (*result.RFC2544, *result.RFC2544Direction, Account) {
	t.Helper()
	bin := buildFullpipe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute) // 3 runs of at most 8 minutes, 2 pauses
	defer cancel()
	startResponder(t, ctx, bin, l)
	var raw json.RawMessage
	a := held(t, l, b, func(int) {
		ctx, cancel := context.WithTimeout(ctx, 8*time.Minute)
		defer cancel()
		if err := clientJSON(t, ctx, l, &raw, append([]string{bin, "rfc2544", l.Server.Addr.String(), "--json", "--direction", "up"}, args...)...); err != nil {
			t.Fatalf("rfc2544: %v", err)
		}
	})
	t.Logf("lab up: path drops %v, most queued %d B", a.Dirs[0].Drops, a.Dirs[0].QueueMaxBytes)
	resulttest.Validate(t, raw)
	var r result.RFC2544
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	for _, w := range r.Warnings {
		t.Logf("warning: %s", w)
	}
	d := r.Directions[vocab.Up]
	if d == nil {
		t.Fatal("no up direction")
	}
	return &r, d, a
}

// TestRFC2544Throughput (issue 13, lab proof (a)): a 100 Mbit/s
// Ethernet-framed path with a 64 kB queue, its line rate given as 100
// Mbit/s, as RFC 2544 is run (the search starts at the media's rate):
// each size's zero-loss throughput is within 1 % of the line-rate
// arithmetic, 100e6 / ((frame + 20) × 8) frames/s. This proves the
// frame-to-payload mapping, the generator's pacing and the framing count
// together: a payload one byte too large at 1518 B (0.07 %) would not
// show, but an overshoot of 0.5 % (the search's resolution) would, a 1 s
// trial at 100.5 % overflowing the queue (62.5 kB over 64 kB). Then the
// search proper, 1518 B under a line stated 1 % too fast (101 Mbit/s):
// its first trial overflows the queue (125 kB in the second), and the
// bisection must come back to within its resolution (0.5 % of 101
// Mbit/s) below 8,127 frames/s. 64-byte frames (148,809 frames/s) are
// judged like the others unless this host's generator could not send
// them: such a run is repeated once for 64 B, and a second is said, not
// judged. Every run is one the lab held (CountBudget: the figures are
// counts of frames, which a late frame does not change).
func TestRFC2544Throughput(t *testing.T) {
	needRoot(t)
	l := startLab(t, "t2544tp", Direction{RateBps: 100e6, Delay: time.Millisecond, QueueBytes: 64_000})
	throughput := func(sizes string) *result.RFC2544Direction {
		_, d, _ := runRFC2544(t, l, CountBudget, "--rate", "100M", "--sizes", sizes, "--tests", "throughput", "--trial", "1s", "--resolution", "0.5")
		return d
	}
	d := throughput("64,128,512,1518")
	// The sending host judges itself as the lab does: a size whose search
	// it could not generate is the host's, not the path's, and is run
	// again, 3 runs in all.
	for try := 2; try <= 3; try++ {
		limited := generatorLimited(d)
		if limited == "" {
			break
		}
		t.Logf("run %d: %s B generator-limited: run again", try, limited)
		for _, again := range throughput(limited).Sizes {
			for i := range d.Sizes {
				if d.Sizes[i].FrameBytes == again.FrameBytes {
					d.Sizes[i] = again
				}
			}
		}
	}
	for _, s := range d.Sizes {
		want := rfc2544.LineFPS(100e6, s.FrameBytes)
		tp := s.Throughput
		if tp == nil {
			t.Errorf("%d B: no throughput (%s)", s.FrameBytes, s.Skipped)
			continue
		}
		t.Logf("%d B: zero loss %.0f frames/s (%.2f %% of 100 Mbit/s's %.0f), at 0.5 %% loss %.0f, %d trials, generator-limited at %.0f",
			s.FrameBytes, tp.ZeroLossFPS, 100*tp.ZeroLossFPS/want, want, tp.LossRatioFPS, len(tp.Trials), tp.GeneratorLimitedFPS)
		for _, tr := range tp.Trials {
			t.Logf("  trial %.0f frames/s (%.2f %%): %d sent, %d lost; sender late %d, slip %.1f ms, tries %d", tr.OfferedFPS, tr.PctOfLine, tr.Sent, tr.Sent-tr.Received, tr.SenderLate, tr.SenderMaxSlipUs/1e3, tr.Tries)
		}
		if s.FrameBytes == 64 && tp.GeneratorLimitedFPS > 0 {
			// 148,809 frames/s: the limit of this host's generator on 2
			// shared cores, twice: said, not proven.
			t.Logf("64 B: NOT PROVEN in this run: generator-limited at %.0f frames/s", tp.GeneratorLimitedFPS)
			continue
		}
		if tp.GeneratorLimitedFPS > 0 {
			t.Errorf("%d B: HOST-LIMITED: this host could not generate %.0f frames/s in 3 runs: the lab proof needs a generator faster than the path", s.FrameBytes, tp.GeneratorLimitedFPS)
		}
		if math.Abs(tp.ZeroLossFPS-want) > 0.01*want {
			t.Errorf("%d B: zero-loss throughput %.0f frames/s, want %.0f ± 1 %%", s.FrameBytes, tp.ZeroLossFPS, want)
		}
	}
	for try := 1; try <= 3; try++ {
		_, d, _ = runRFC2544(t, l, CountBudget, "--rate", "101M", "--sizes", "1518", "--tests", "throughput", "--trial", "1s", "--resolution", "0.5")
		if generatorLimited(d) == "" {
			break
		}
	}
	want := rfc2544.LineFPS(100e6, 1518)
	switch tp := d.Sizes[0].Throughput; {
	case tp != nil && tp.GeneratorLimitedFPS > 0:
		// The host fell behind in every try, by enough that its catch-up
		// burst could have made the loss: the method said so rather
		// than read it, and the proof needs a host that keeps its pace.
		t.Errorf("1518 B under a 101 Mbit/s line: HOST-LIMITED in 3 runs: generator-limited at %.0f frames/s (trials %+v): this host could not send the schedule; not a reading of the path", tp.GeneratorLimitedFPS, tp.Trials)
	case tp == nil || math.Abs(tp.ZeroLossFPS-want) > 0.01*want:
		t.Errorf("1518 B under a 101 Mbit/s line: %+v, want %.0f frames/s ± 1 %%", tp, want)
	default:
		t.Logf("1518 B under a 101 Mbit/s line: zero loss %.0f frames/s (%.2f %% of the truth) after %d trials", tp.ZeroLossFPS, 100*tp.ZeroLossFPS/want, len(tp.Trials))
	}
}

// generatorLimited lists the sizes whose throughput search this host's
// generator could not hold ("64,512"), or "".
func generatorLimited(d *result.RFC2544Direction) string {
	var sizes []string
	for _, s := range d.Sizes {
		if tp := s.Throughput; tp != nil && tp.GeneratorLimitedFPS > 0 {
			sizes = append(sizes, strconv.Itoa(s.FrameBytes))
		}
	}
	return strings.Join(sizes, ",")
}

// TestRFC2544Latency (issue 13, lab proof (b)): at the throughput rate of
// a path with 2 ms each way, the probes' round trip is the delay both
// ways plus one serialisation of the frame each way (the emulator holds
// each frame exactly that, TestAddedRTT), plus the hosts: the TUN
// devices' round trip (tunFloor, at most 0.3 ms) and the forwarder's
// lateness (its median, measured over the run, once each way). The
// minimum may not be below the emulator's hold, nor above it by more
// than that. A minimum moves only if every probe is late, so the run
// needs of the lab only that it lose nothing of its own (CountBudget).
//
// The path runs at 110 Mbit/s under a line given as 100 Mbit/s, so the
// throughput found (100 % of the line) loads it to 91 %. At exactly 100 %
// (ρ = 1) a queue never drains once a burst of the sending host has
// built it (its length is a random walk): a stall of 1 ms leaves 12.5 kB
// standing for the rest of the trial, 1 ms on every later probe (CI saw
// the minimum 0.4 to 1.1 ms over the hold at ρ = 1). At 99 % (101 Mbit/s,
// the earlier path) that queue drains at 1 Mbit/s, in 0.1 s, longer than
// a busy core's stalls are apart: beside one, CI run 40's 1518-byte
// probes met a standing queue (mean 3.7 ms over the hold, minimum 0.62
// ms over). At 91 % it drains at 10 Mbit/s, in 10 ms, and most of the
// 20 probes a trial (50 ms apart) meet an empty queue: their minimum is
// the path's. A real line's clock and a tester's differ in the same
// way. The mean carries the queue the load builds.
func TestRFC2544Latency(t *testing.T) {
	needRoot(t)
	const delay = 2 * time.Millisecond
	const pathBps = 110e6
	l := startLab(t, "t2544lat", Direction{RateBps: pathBps, Delay: delay, QueueBytes: 64_000})
	// A size whose throughput search the sending host could not generate
	// has no rate to measure latency at: the host's limit, not the
	// path's; the run is repeated, 3 runs in all, until one measured.
	var d *result.RFC2544Direction
	var a Account
	for try := 1; try <= 3; try++ {
		_, d, a = runRFC2544(t, l, CountBudget, "--rate", "100M", "--sizes", "512,1518", "--tests", "throughput,latency", "--trial", "1s", "--resolution", "2", "--latency-trials", "2")
		if !slices.ContainsFunc(d.Sizes, func(s *result.RFC2544Size) bool { return s.Latency == nil || len(s.Latency.Trials) == 0 }) {
			break
		}
		t.Logf("run %d: a size's latency was not measured (generator-limited: %q): run again", try, generatorLimited(d))
	}
	late := 2 * a.LateQuantile(0.5) // the median, both directions pooled, once each way
	proven := 0
	for _, s := range d.Sizes {
		if s.Latency == nil || len(s.Latency.Trials) == 0 {
			t.Logf("%d B: no latency measured (see the warnings: a generator-limited search finds no rate to measure at)", s.FrameBytes)
			continue
		}
		proven++
		hold := rfc2544.ExpectedRTT(2*delay, s.FrameBytes, pathBps)
		l := s.Latency.Summary
		min := time.Duration(l.MinUs * 1e3)
		t.Logf("%d B at %.0f frames/s: round trip min %.0f, mean %.0f, p99 %.0f, max %.0f µs; emulator %.0f µs, expected by the run %.0f µs; forwarder late %v",
			s.FrameBytes, s.Latency.RateFPS, l.MinUs, l.MeanUs, l.P99Us, l.MaxUs, float64(hold)/1e3, s.Latency.ExpectedUs, late)
		if min < hold-100*time.Microsecond || min > hold+tunFloor+late {
			t.Errorf("%d B: minimum round trip %v, want %v to %v + %v (TUN) + %v (forwarder)", s.FrameBytes, min, hold, hold, tunFloor, late)
		}
	}
	if proven == 0 {
		t.Error("HOST-LIMITED: no size's latency was measured in 3 runs, this host's generator could not load the path: nothing proven (rerun on a quieter host)")
	}
}

// TestRFC2544BackToBack (issue 13, lab proof (c)): a 10 Mbit/s path with
// a queue of 50 packets: the longest burst without loss implies the
// queue within one frame. At 10 Mbit/s (812 frames/s of 1518 B) a
// generator of ~100,000 frames/s makes line/generator about 1 %, so an
// error of half in the generator's measured rate moves the buffer by a
// quarter of a frame. A longest whole burst the host sent slowly is a
// lower bound (a 51-frame burst sent at 57,000 frames/s while a
// 52-frame one went faster read 47.95 frames, CI run 36); the search
// sends it again (docs/rfc2544.md).
func TestRFC2544BackToBack(t *testing.T) {
	needRoot(t)
	const queue = 50
	l := startLab(t, "t2544b2b", Direction{RateBps: 10e6, Delay: time.Millisecond, QueuePackets: queue})
	_, d, _ := runRFC2544(t, l, CountBudget, "--rate", "10M", "--sizes", "512,1518", "--tests", "back-to-back", "--burst-trials", "1")
	for _, s := range d.Sizes {
		b := s.BackToBack
		if b == nil {
			t.Fatalf("%d B: no back-to-back", s.FrameBytes)
		}
		t.Logf("%d B: longest burst %v, sent at %.0f frames/s: buffer %.2f frames, %.0f B (%d bursts)", s.FrameBytes, b.Longest, b.GeneratorFPS, b.BufferFrames, b.BufferBytes, len(b.Trials))
		if b.NoLimit || math.Abs(b.BufferFrames-queue) > 1 {
			t.Errorf("%d B: buffer %.2f frames, want %d ± 1", s.FrameBytes, b.BufferFrames, queue)
		}
	}
}

// TestRFC2544LossyLine (issue 13, lab proof (d)): a 2 Mbit/s line with
// BER 1e-6 (the design's STAGE line) loses frames at every rate: the run
// says zero-loss throughput is not meaningful and estimates the BER
// within ×1.5. Sizes 128 and 1518 B, 5 s trials, the search to 2 % of
// the line and the loss table: about 27 line-seconds per size below 99 %
// of the line (the trials the fit reads), ~54 frames lost at 1518 B (1.2
// %) and ~41 at 128 B (0.09 %): the BER's standard error is about 12 %,
// so ×1.5 (−33 %) is some 2.7 standard errors away (docs/ber.md: 60 s
// per size gives 200 of 200 within ×1.5; this is shorter for CI's sake).
// About 3 minutes on an idle machine.
func TestRFC2544LossyLine(t *testing.T) {
	needRoot(t)
	const ber = 1e-6
	l := startLab(t, "t2544ber", Direction{RateBps: 2e6, Delay: 5 * time.Millisecond, QueueBytes: 16_000, BER: ber})
	_, d, _ := runRFC2544(t, l, CountBudget, "--rate", "2M", "--sizes", "128,1518", "--tests", "throughput,loss", "--trial", "5s", "--resolution", "2")
	for _, s := range d.Sizes {
		if s.Rate != nil {
			t.Logf("%d B: zero-loss throughput %.1f %% of the line; loss %.3g %% pooled, %s (p %.2f)", s.FrameBytes, s.Throughput.ZeroLossPct, s.Rate.LossPct, s.Rate.Verdict, s.Rate.P)
		}
	}
	lossy := d.Lossy
	if lossy == nil {
		t.Fatal("no lossy-line reading: the run did not see that loss does not depend on the rate")
	}
	t.Logf("BER %.3g [%.3g, %.3g], q %.3g, %s, %d of %d lost; why: %s", lossy.BER, lossy.BERLow, lossy.BERHigh, lossy.Q, lossy.Verdict, lossy.Lost, lossy.Sent, lossy.Why)
	if lossy.BER < ber/1.5 || lossy.BER > ber*1.5 {
		t.Errorf("BER %.3g, want %.3g within ×1.5", lossy.BER, ber)
	}
	if !strings.Contains(lossy.Why, "zero-loss throughput") || !strings.Contains(lossy.Why, "no rate is loss-free") {
		t.Errorf("the report does not explain why zero-loss throughput is not meaningful: %q", lossy.Why)
	}
}
