package method

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/method/fakenet"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/result/resulttest"
	"github.com/fullpipe/fullpipe/internal/rfc6349"
	"github.com/fullpipe/fullpipe/internal/train"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// The design's scenarios on scripted paths (fakenet): 100 Mbit/s CIR,
// 20 ms RTT, so a BDP of 250,000 B at layer 2. Each run takes
// milliseconds; the lab (internal/lab) runs the same scenarios over real
// sockets as root.
const (
	cir     = 100e6
	baseRTT = 20 * time.Millisecond
)

func run(t *testing.T, p *fakenet.Path, cfg result.RFC6349Config) *result.RFC6349 {
	t.Helper()
	if cfg.CIRBps == 0 {
		cfg.CIRBps = cir
	}
	res, err := Run(context.Background(), p, cfg, nil)
	if err != nil {
		t.Fatalf("run: %v (calls %v)", err, p.Calls())
	}
	return res
}

func causes(res *result.RFC6349) []vocab.Cause {
	var c []vocab.Cause
	for _, f := range res.Diagnosis {
		if !slices.Contains(c, f.Cause) {
			c = append(c, f.Cause)
		}
	}
	return c
}

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol*math.Abs(want) }

// TestRFC6349CleanPath: a path that carries the CIR with a queue of 1.5
// BDP passes both ways with nothing diagnosed. Each figure is the
// physics': BB is the CIR, the BDP 100 Mbit/s × 20 ms / 8, the walk's
// windows 25-100 % of it, the ideal the RFC's maximum TCP throughput
// of 1448-byte segments in 1538-byte frames, and actual reaches it.
func TestRFC6349CleanPath(t *testing.T) {
	res := run(t, &fakenet.Path{BaseRTT: baseRTT, RateBps: cir, QueueBytes: 375_000}, result.RFC6349Config{})
	if !res.Verdict.Pass || len(res.Diagnosis) != 0 {
		t.Fatalf("verdict %+v, diagnosis %+v; want a pass with nothing diagnosed", res.Verdict, res.Diagnosis)
	}
	if res.BB.UpBps != cir || res.BB.DownBps != cir || res.RTT.BaselineMs != 20 {
		t.Errorf("BB %v/%v, baseline %v ms; want the CIR both ways and 20 ms", res.BB.UpBps, res.BB.DownBps, res.RTT.BaselineMs)
	}
	if res.BDP.UpBytes != 250_000 {
		t.Errorf("BDP %v B, want 250000", res.BDP.UpBytes)
	}
	if len(res.Walk) != 8 {
		t.Errorf("%d walk rows, want 4 windows each way", len(res.Walk))
	}
	ideal := rfc6349.MaxTCPThroughput(cir, 1500, 1448, rfc6349.Ethernet)
	for _, dir := range vocab.Both {
		row := res.Throughput[dir]
		if row == nil || !near(row.IdealBps, ideal, 1e-9) || !near(row.ActualBps, ideal, 0.005) || row.MSSBytes != 1448 {
			t.Errorf("%s: throughput %+v; want ideal and actual %.0f bit/s with 1448-byte segments", dir, row, ideal)
		}
	}
}

// TestRFC6349Scenarios: what the method names on the design's hard
// paths, each from the evidence that the physics of the path leaves.
func TestRFC6349Scenarios(t *testing.T) {
	for _, c := range []struct {
		name    string
		path    *fakenet.Path
		cfg     result.RFC6349Config
		pass    bool
		causes  []vocab.Cause
		shaping vocab.Shaping
	}{
		// A 64 KiB window where the path needs 250 kB: named, and the
		// method opens 4 connections to fill the pipe anyway.
		{"window", &fakenet.Path{BaseRTT: baseRTT, RateBps: cir, QueueBytes: 375_000}, result.RFC6349Config{MaxWindow: 64 << 10},
			true, []vocab.Cause{vocab.CauseWindow}, vocab.Shaped},
		// A 20 kB queue in front of 100 Mbit/s: TCP at the BDP window
		// still gets the rate, but the trains find the queue too small.
		{"small buffer", &fakenet.Path{BaseRTT: baseRTT, RateBps: cir, QueueBytes: 20_000}, result.RFC6349Config{},
			true, []vocab.Cause{vocab.CauseBuffer}, vocab.Shaped},
		// A 60 Mbit/s policer with a 30 kB bucket on a 1 Gbit/s line,
		// sold as 100 Mbit/s: BB reads the policed rate, the trains name
		// the policer.
		{"policer", &fakenet.Path{BaseRTT: baseRTT, RateBps: 1e9, QueueBytes: 1 << 20, PoliceBps: 60e6, BucketBytes: 30_000}, result.RFC6349Config{},
			true, []vocab.Cause{vocab.CausePolicer}, vocab.Policed},
		// 0.5 % random loss: TCP falls far short, and the quarter-CIR
		// stream lost as much as the full one, so the line is named.
		{"lossy line", &fakenet.Path{BaseRTT: baseRTT, RateBps: cir, QueueBytes: 375_000, LossPct: 0.5}, result.RFC6349Config{},
			false, []vocab.Cause{vocab.CauseLoss}, vocab.Shaped},
		// A 1400-byte path MTU without ICMP: a black hole, named, and
		// every TCP step clamps its segments to fit (else TCP stalls).
		{"black hole", &fakenet.Path{BaseRTT: baseRTT, RateBps: cir, QueueBytes: 375_000, MTU: 1400}, result.RFC6349Config{},
			true, []vocab.Cause{vocab.CauseMTU}, vocab.Shaped},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := run(t, c.path, c.cfg)
			if got := causes(res); res.Verdict.Pass != c.pass || !slices.Equal(got, c.causes) || res.ShapingSum.Verdict != c.shaping {
				t.Errorf("pass %v, causes %v, shaping %s; want %v, %v, %s\n%+v", res.Verdict.Pass, got, res.ShapingSum.Verdict, c.pass, c.causes, c.shaping, res.Diagnosis)
			}
		})
	}
}

// TestRFC6349Figures: the figures behind three of the scenarios.
func TestRFC6349Figures(t *testing.T) {
	t.Run("policer", func(t *testing.T) {
		res := run(t, &fakenet.Path{BaseRTT: baseRTT, RateBps: 1e9, QueueBytes: 1 << 20, PoliceBps: 60e6, BucketBytes: 30_000}, result.RFC6349Config{Directions: []vocab.Direction{vocab.Up}})
		// The policer counts IP bytes; BB is at layer 2: 60 Mbit/s ×
		// 1538 / 1500. Its bucket in the trains' units likewise.
		tv := res.Shaping[vocab.Up].Trains
		if want := 60e6 * 1538 / 1500; !near(res.BB.UpBps, want, 0.001) || tv == nil || tv.Kind != train.Policer ||
			math.Abs(tv.BucketBytes.Value-30_000*1538/1500.0) > max(tv.BucketBytes.Err, 1500) {
			t.Errorf("BB %.0f bit/s (want %.0f), trains %+v", res.BB.UpBps, want, tv)
		}
		if !strings.Contains(strings.Join(res.Warnings, "\n"), "less than the CIR") {
			t.Errorf("no warning that the path carried less than the CIR: %q", res.Warnings)
		}
	})
	t.Run("window", func(t *testing.T) {
		res := run(t, &fakenet.Path{BaseRTT: baseRTT, RateBps: cir, QueueBytes: 375_000}, result.RFC6349Config{MaxWindow: 64 << 10, Directions: []vocab.Direction{vocab.Up}})
		if row := res.Throughput[vocab.Up]; row.Connections != 4 || row.WindowBytes < 250_000 {
			t.Errorf("throughput over %d connections, window %d B; want 4 windows of 64 KiB or less summing to the BDP", row.Connections, row.WindowBytes)
		}
	})
	// BER 1e-6 on 1500-byte packets loses 1.19 % of them at any load:
	// step 2 reads it as line loss and the line loss as bit errors, from
	// the two streams' ~20,000 packets (~240 lost: the estimate's
	// standard error is about 6.5 %, so ×1.5 is more than 5 of them away);
	// the diagnosis says it.
	t.Run("bit errors", func(t *testing.T) {
		const truth = 1e-6
		res := run(t, &fakenet.Path{BaseRTT: baseRTT, RateBps: cir, QueueBytes: 375_000, BER: truth}, result.RFC6349Config{Directions: []vocab.Direction{vocab.Up}})
		if len(res.BB.LineBER) != 1 {
			t.Fatalf("line BER %+v, want one reading (up)", res.BB.LineBER)
		}
		lb := res.BB.LineBER[0]
		t.Logf("line BER %.3g [≤ %.3g] from %d of %d lost; diagnosis %v", lb.BER, lb.BERHigh, lb.Lost, lb.Sent, res.Diagnosis)
		if lb.Direction != vocab.Up || lb.IPBytes != 1500 || lb.BER < truth/1.5 || lb.BER > truth*1.5 || lb.BERHigh < lb.BER {
			t.Errorf("line BER %+v, want up, 1500 B, %g within ×1.5 and its upper bound above it", lb, truth)
		}
		if d := fmt.Sprint(res.Diagnosis); !strings.Contains(d, "if all bit errors: BER") {
			t.Errorf("diagnosis %s does not read the loss as bit errors", d)
		}
	})
	t.Run("black hole", func(t *testing.T) {
		res := run(t, &fakenet.Path{BaseRTT: baseRTT, RateBps: cir, QueueBytes: 375_000, MTU: 1400}, result.RFC6349Config{Directions: []vocab.Direction{vocab.Up}})
		if res.MTU.UpBytes != 1400 || res.MTU.ICMPSeen || res.Throughput[vocab.Up].MSSBytes != 1348 {
			t.Errorf("MTU %+v, MSS %d; want 1400 B without ICMP and segments of 1400 − 52 B", res.MTU, res.Throughput[vocab.Up].MSSBytes)
		}
	})
}

// TestRFC6349Partial: a responder that stops answering mid-run, or a
// cancelled context, ends the run with what it has, marked partial, an
// error wrapping result.ErrPartial, and a verdict that does not pass.
// The partial document is valid against the schema: a run that ended
// before the shaping step has no `shaping` summary (CI run 15 wrote one
// with an empty verdict, which the schema refuses).
func TestRFC6349Partial(t *testing.T) {
	p := &fakenet.Path{BaseRTT: baseRTT, RateBps: cir, QueueBytes: 375_000, StallAfter: 12}
	res, err := Run(context.Background(), p, result.RFC6349Config{CIRBps: cir}, nil)
	if !errors.Is(err, result.ErrPartial) || res == nil || !res.Partial || res.Verdict.Pass || res.BB.UpBps != cir {
		t.Fatalf("err %v, partial %v, verdict %+v, BB %v; want a partial result that kept step 2's figures", err, res != nil && res.Partial, res.Verdict, res.BB.UpBps)
	}
	validPartial(t, res)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err = Run(ctx, &fakenet.Path{BaseRTT: baseRTT, RateBps: cir}, result.RFC6349Config{CIRBps: cir}, nil)
	if !errors.Is(err, result.ErrPartial) || res == nil || !res.Partial {
		t.Fatalf("cancelled: err %v, res %+v; want a partial result", err, res)
	}
	validPartial(t, res)
}

// validPartial checks a partial run's document against its schema.
func validPartial(t *testing.T, res *result.RFC6349) {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if res.ShapingSum.Verdict == "" && strings.Contains(string(b), `"shaping":`) {
		t.Errorf("a run with no shaping verdict has a shaping summary")
	}
	resulttest.Validate(t, b)
}
