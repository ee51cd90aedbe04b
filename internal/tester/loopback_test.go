package tester

// Loopback integration tests: a real responder (serve) on 127.0.0.1 and the
// real tester against it, so every byte crosses the kernel's TCP and UDP
// stacks. Loopback has no propagation delay and no link: what limits it is
// CPU (about 30 Gbit/s per stream here, kernel-notes) and the socket
// buffers. The tolerances below follow from that and say so.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/flow"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/serve"
	"github.com/fullpipe/fullpipe/internal/testkit"
	"github.com/fullpipe/fullpipe/internal/vocab"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// startServer runs a responder on a random loopback port for the test.
func startServer(t *testing.T, cfg serve.Config) (*serve.Server, string) {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	srv, err := serve.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("responder did not stop within 5 s")
		}
	})
	return srv, srv.Addr().String()
}

// testCtx bounds one test's calls so a hang fails instead of blocking the
// package until go test's own 10-minute timeout.
func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// relEqual reports whether a and b agree to within a relative tol; used
// for figures computed twice from the same integers, where only float
// rounding may differ.
func relEqual(a, b, tol float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b))
}

// dataHelloLen is what the client writes on a data connection before the
// payload: the data preamble and the DataHello frame. An upload stream's
// TCP_INFO bytes_sent counts it; the receiver's payload counter does not.
// The cookie is always 32 hex digits, so a zero cookie has the same length.
func dataHelloLen(t *testing.T, stream int) uint64 {
	t.Helper()
	var b bytes.Buffer
	if err := wire.WritePreamble(&b, wire.MagicData); err != nil {
		t.Fatal(err)
	}
	if err := wire.Encode(&b, wire.TypeData, wire.DataHello{Stream: stream, ClientSends: true}); err != nil {
		t.Fatal(err)
	}
	return uint64(b.Len())
}

// checkSenderAccounting checks the law that ties a stream's two ends
// together once it has ended cleanly (sender drained, receiver at EOF):
// every byte the receiver counted was first sent exactly once, so
// bytes_sent − bytes_retrans from the sender's TCP_INFO equals the
// receiver's byte count, plus the data hello on upload streams. It fails
// if merge pairs a sender's TCP_INFO with another stream's receiver, or if
// the last TCP_INFO was taken before the last bytes were acknowledged.
func checkSenderAccounting(t *testing.T, streams []result.TCPStream) {
	t.Helper()
	for _, st := range streams {
		if !st.HasTCPInfo {
			t.Errorf("%s stream %d: no TCP_INFO from its sender (%s)", st.Direction, st.Stream, st.Sender)
			continue
		}
		want := uint64(st.Bytes)
		if st.Direction == vocab.Up {
			want += dataHelloLen(t, st.Stream)
		}
		if got := st.BytesSent - st.BytesRetrans; got != want {
			t.Errorf("%s stream %d: bytes_sent %d − bytes_retrans %d = %d, want %d (received %d)",
				st.Direction, st.Stream, st.BytesSent, st.BytesRetrans, got, want, st.Bytes)
		}
	}
}

// TestFixedTransferBytes: a --bytes transfer over 3 streams delivers
// exactly the bytes asked for at the receiver, each stream its share, in
// both directions; the sender's counters cover them and efficiency is
// RFC 6349's formula over the summary's own counters.
func TestFixedTransferBytes(t *testing.T) {
	_, addr := startServer(t, serve.Config{})
	const total, streams = 50_000_000, 3
	for _, tc := range []struct {
		name    string
		reverse bool
		dir     vocab.Direction
	}{
		{"upload", false, vocab.Up},
		{"reverse", true, vocab.Down},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := RunTCP(testCtx(t, 20*time.Second), Target{Addr: addr},
				result.TCPConfig{Streams: streams, Bytes: total, Interval: time.Second, Reverse: tc.reverse}, nil)
			if err != nil {
				t.Fatal(err)
			}
			s := res.Summary
			if s.Partial {
				t.Fatalf("partial: %s", s.PartialReason)
			}
			// Receiver-measured, so exact: TCP delivers every byte once.
			if s.Bytes != total {
				t.Errorf("received %d bytes, want exactly %d", s.Bytes, total)
			}
			if s.BytesSent < total {
				t.Errorf("sender's bytes_sent %d < %d delivered", s.BytesSent, total)
			}
			if !(s.EfficiencyPct > 0 && s.EfficiencyPct <= 100) {
				t.Errorf("efficiency %v %%, want in (0, 100]", s.EfficiencyPct)
			}
			if want := result.Efficiency(s.BytesSent, s.BytesRetrans); s.EfficiencyPct != want {
				t.Errorf("efficiency %v %%, want Efficiency(%d, %d) = %v", s.EfficiencyPct, s.BytesSent, s.BytesRetrans, want)
			}
			if len(s.Directions) != 1 || s.Directions[tc.dir] == nil || s.Directions[tc.dir].Bytes != total {
				t.Errorf("directions %v, want only %q with %d bytes", s.Directions, tc.dir, total)
			}
			if len(s.Streams) != streams {
				t.Fatalf("%d streams in the summary, want %d", len(s.Streams), streams)
			}
			for _, st := range s.Streams {
				if want := flow.Share(total, streams, st.Stream); st.Bytes != want || st.Direction != tc.dir {
					t.Errorf("stream %d (%s): %d bytes, want its share %d (%s)", st.Stream, st.Direction, st.Bytes, want, tc.dir)
				}
			}
			checkSenderAccounting(t, s.Streams)
			var sum int64
			for _, iv := range res.Intervals {
				sum += iv.Bytes
			}
			if sum != total {
				t.Errorf("intervals add up to %d bytes, want %d", sum, total)
			}
			if s.IntervalS <= 0 || !relEqual(s.ThroughputBps, total*8/s.IntervalS, 1e-9) {
				t.Errorf("throughput %v bit/s over %v s, want %d × 8 / span", s.ThroughputBps, s.IntervalS, total)
			}
		})
	}
}

// TestBidirIntervals: a 2 s bidirectional test with 2 streams each way and
// 500 ms intervals. Every interval lists every stream of both directions
// with the sender's TCP_INFO (so the responder's samples came back and
// were paired with ours), intervals add up to the summary, and each
// throughput is its bytes over its own span.
func TestBidirIntervals(t *testing.T) {
	_, addr := startServer(t, serve.Config{})
	const streams = 2
	const interval, duration = 500 * time.Millisecond, 2 * time.Second
	var progressed []result.TCPInterval
	res, err := RunTCP(testCtx(t, 30*time.Second), Target{Addr: addr},
		result.TCPConfig{Streams: streams, Duration: duration, Interval: interval, Bidir: true},
		func(iv result.TCPInterval) { progressed = append(progressed, iv) })
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	ivs := res.Intervals

	// 2 s / 500 ms = 4 full intervals, plus a short final stretch when
	// bytes still in the socket buffers arrive after the last tick (a few
	// ms at these rates). One fewer if the responder's workers finished
	// just before its own 2 s tick; more only if a tick came late.
	if len(ivs) < 3 || len(ivs) > 5 {
		t.Errorf("%d intervals for %v at %v, want 3 to 5", len(ivs), duration, interval)
	}
	if len(progressed) != len(ivs) {
		t.Errorf("progress saw %d intervals, the result holds %d", len(progressed), len(ivs))
	}
	type key struct {
		dir    vocab.Direction
		stream int
	}
	var sum int64
	prevEnd := 0.0
	for i, iv := range ivs {
		if iv.StartS != prevEnd || iv.EndS <= iv.StartS {
			t.Errorf("interval %d spans %v–%v s, want to start at %v and end after it", i, iv.StartS, iv.EndS, prevEnd)
		}
		prevEnd = iv.EndS
		// Ticks are on the tester's clock, so every interval but the last
		// is exactly one period. The last may be the final stretch, from
		// the last tick to the last byte received: at most a period plus
		// the socket buffers' drain time (ms), so 100 ms is ample.
		if span := iv.EndS - iv.StartS; i < len(ivs)-1 && !relEqual(span, interval.Seconds(), 1e-9) {
			t.Errorf("interval %d lasts %v s, want %v", i, span, interval.Seconds())
		} else if span > (interval + 100*time.Millisecond).Seconds() {
			t.Errorf("last interval lasts %v s, want at most a period plus the drain", span)
		}
		seen := map[key]bool{}
		var streamSum int64
		for _, st := range iv.Streams {
			seen[key{st.Direction, st.Stream}] = true
			streamSum += st.Bytes
			if !st.HasTCPInfo {
				t.Errorf("interval %d, %s stream %d: no TCP_INFO from the sender (%s)", i, st.Direction, st.Stream, st.Sender)
			}
			if wantSender := map[vocab.Direction]string{vocab.Up: "client", vocab.Down: "server"}[st.Direction]; st.Sender != wantSender {
				t.Errorf("interval %d, %s stream %d: sender %q, want %q", i, st.Direction, st.Stream, st.Sender, wantSender)
			}
			// Every stream is busy for the whole of each interval that
			// ends before the senders stop; a stream that moved nothing
			// for 500 ms on loopback is stalled, not slow.
			if iv.EndS <= duration.Seconds()-interval.Seconds() && st.Bytes <= 0 {
				t.Errorf("interval %d, %s stream %d moved %d bytes", i, st.Direction, st.Stream, st.Bytes)
			}
		}
		for _, dir := range vocab.Both {
			for n := range streams {
				if !seen[key{dir, n}] {
					t.Errorf("interval %d has no entry for %s stream %d (has %d entries)", i, dir, n, len(iv.Streams))
				}
			}
		}
		if len(iv.Streams) != 2*streams {
			t.Errorf("interval %d has %d stream entries, want %d", i, len(iv.Streams), 2*streams)
		}
		if streamSum != iv.Bytes {
			t.Errorf("interval %d: streams add up to %d bytes, the interval says %d", i, streamSum, iv.Bytes)
		}
		if !relEqual(iv.ThroughputBps, float64(iv.Bytes)*8/(iv.EndS-iv.StartS), 1e-9) {
			t.Errorf("interval %d: %v bit/s, want %d B × 8 / %v s", i, iv.ThroughputBps, iv.Bytes, iv.EndS-iv.StartS)
		}
		sum += iv.Bytes
	}

	// The intervals telescope over cumulative counters and the final
	// stretch runs to the last byte received, so they cover the summary.
	// The only bytes they may miss are those of a final stretch shorter
	// than the offset between the two ends' clocks (about one control RTT,
	// tens of µs: at ~20 Gbit/s about 100 kB of ~10 GB), hence 1 %.
	if sum > s.Bytes || float64(s.Bytes-sum) > 0.01*float64(s.Bytes) {
		t.Errorf("intervals add up to %d bytes, summary %d: want ≤ and within 1 %%", sum, s.Bytes)
	}

	var dirBytes int64
	var dirBps float64
	for _, dir := range vocab.Both {
		d := s.Directions[dir]
		if d == nil {
			t.Fatalf("summary has no %q direction: %v", dir, s.Directions)
		}
		// Each receiver counts from its first to its last byte: the 2 s
		// the sender runs, less the first byte's latency (µs), plus the
		// time to drain the socket buffers after the sender stops (a few
		// MB at tens of Gbit/s: ms). 1.8–2.5 s leaves room for a loaded
		// 2-core machine; outside it the clocks or spans are wrong.
		if d.IntervalS < 1.8 || d.IntervalS > 2.5 {
			t.Errorf("%s: receiver span %v s, want about %v", dir, d.IntervalS, duration.Seconds())
		}
		if d.Bytes <= 0 || !relEqual(d.ThroughputBps, float64(d.Bytes)*8/d.IntervalS, 1e-9) {
			t.Errorf("%s: %v bit/s, want %d B × 8 / %v s", dir, d.ThroughputBps, d.Bytes, d.IntervalS)
		}
		if d.EfficiencyPct != result.Efficiency(d.BytesSent, d.BytesRetrans) {
			t.Errorf("%s: efficiency %v, want Efficiency(%d, %d)", dir, d.EfficiencyPct, d.BytesSent, d.BytesRetrans)
		}
		dirBytes += d.Bytes
		dirBps += d.ThroughputBps
	}
	if s.Bytes != dirBytes || !relEqual(s.ThroughputBps, dirBps, 1e-9) {
		t.Errorf("summary %d B at %v bit/s, directions add up to %d B at %v bit/s", s.Bytes, s.ThroughputBps, dirBytes, dirBps)
	}
	// Loopback carries about 30 Gbit/s per stream on this hardware
	// (kernel-notes); a floor 30 times lower only catches a data path that
	// stalls or sleeps, never a slow machine.
	if s.ThroughputBps < 1e9 {
		t.Errorf("throughput %.3g bit/s on loopback, want ≥ 1 Gbit/s", s.ThroughputBps)
	}
	if len(s.Streams) != 2*streams {
		t.Errorf("%d streams in the summary, want %d", len(s.Streams), 2*streams)
	}
	checkSenderAccounting(t, s.Streams)

	// min_rtt is the least RTT sample, the mean averages smoothed RTTs
	// (each at least the least sample). On loopback an RTT is kernel
	// processing and CPU scheduling only: µs idle, a few ms when four
	// senders share two cores (we saw srtt up to 7 ms). 50 ms would mean
	// a stalled receiver, not a busy one.
	if s.RTTMinUs <= 0 || s.RTTMinUs > s.RTTMeanUs {
		t.Errorf("rtt_min_us %d, rtt_mean_us %d: want 0 < min ≤ mean", s.RTTMinUs, s.RTTMeanUs)
	}
	if s.RTTMeanUs > 50_000 {
		t.Errorf("rtt_mean_us %d on loopback, want < 50 ms", s.RTTMeanUs)
	}
}

// jsonPath walks decoded JSON by object keys; "[]" steps into every element
// of an array, and the check applies to each.
func jsonPath(t *testing.T, v any, path string, check func(any) error) {
	t.Helper()
	var walk func(v any, parts []string, at string)
	walk = func(v any, parts []string, at string) {
		if len(parts) == 0 {
			if err := check(v); err != nil {
				t.Errorf("%s: %v", at, err)
			}
			return
		}
		p := parts[0]
		if p == "[]" {
			arr, ok := v.([]any)
			if !ok || len(arr) == 0 {
				t.Errorf("%s: want a non-empty array, got %T %v", at, v, v)
				return
			}
			for i, e := range arr {
				walk(e, parts[1:], at+"["+strconv.Itoa(i)+"]")
			}
			return
		}
		obj, ok := v.(map[string]any)
		if !ok {
			t.Errorf("%s: want an object, got %T", at, v)
			return
		}
		child, ok := obj[p]
		if !ok {
			t.Errorf("%s: no key %q", at, p)
			return
		}
		walk(child, parts[1:], strings.TrimPrefix(at+"."+p, "."))
	}
	walk(v, strings.Split(path, "."), "")
}

func isNumber(v any) error {
	if _, ok := v.(float64); !ok {
		return errors.New("not a number")
	}
	return nil
}

func isPositive(v any) error {
	if f, ok := v.(float64); !ok || f <= 0 {
		return errors.New("not a positive number")
	}
	return nil
}

func isString(v any) error {
	if _, ok := v.(string); !ok {
		return errors.New("not a string")
	}
	return nil
}

func isNonEmptyString(v any) error {
	if s, ok := v.(string); !ok || s == "" {
		return errors.New("not a non-empty string")
	}
	return nil
}

// TestTCPResultJSON: the JSON of a TCP result carries the keys
// docs/json.md promises, with values of the right kind, and decodes back
// to the same figures.
func TestTCPResultJSON(t *testing.T) {
	_, addr := startServer(t, serve.Config{})
	cfg := result.TCPConfig{Streams: 2, Duration: time.Second, Interval: 250 * time.Millisecond}
	res, err := RunTCP(testCtx(t, 20*time.Second), Target{Addr: addr}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for path, check := range map[string]func(any) error{
		"summary.throughput_bps":        isPositive,
		"summary.bytes":                 isPositive,
		"summary.bytes_sent":            isPositive,
		"summary.bytes_retrans":         isNumber,
		"summary.efficiency_pct":        isPositive,
		"summary.rtt_min_us":            isPositive,
		"summary.rtt_mean_us":           isPositive,
		"summary.directions.up.bytes":   isPositive,
		"summary.streams.[].bytes":      isPositive,
		"intervals.[].start_s":          isNumber,
		"intervals.[].end_s":            isPositive,
		"intervals.[].streams.[]":       func(any) error { return nil },
		"intervals.[].streams.[].bytes": isNumber,
		"intervals.[].streams.[].direction": func(v any) error {
			if v != string(vocab.Up) {
				return errors.New("not \"up\" in an upload test")
			}
			return nil
		},
		"schema": func(v any) error {
			if v != float64(result.Schema) {
				return errors.New("not result.Schema")
			}
			return nil
		},
		"command.[]": isString,
		"config.streams": func(v any) error {
			if v != float64(cfg.Streams) {
				return errors.New("not the requested stream count")
			}
			return nil
		},
		"config.duration_ns": isPositive,
		"client.kernel":      isNonEmptyString,
		"client.cc":          isNonEmptyString,
		"server.cc":          isNonEmptyString,
		"server.kernel":      isString,
		"test": func(v any) error {
			if v != "tcp" {
				return errors.New(`not "tcp"`)
			}
			return nil
		},
	} {
		jsonPath(t, doc, path, check)
	}

	// The encoding is lossless for the figures: Go writes floats in their
	// shortest exact form, so a reader gets back exactly what was measured.
	var back result.TCP
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Summary, res.Summary) || !reflect.DeepEqual(back.Intervals, res.Intervals) {
		t.Errorf("JSON round trip changed the figures:\n got %+v\nwant %+v", back.Summary, res.Summary)
	}
}

// TestUDPBothWays: a 20 Mbit/s stream of 1000-byte datagrams for 2 s, up
// and down. The sender is paced by sequence number from the stream's
// start (seq × 400 µs), so it sends 5000 datagrams at exactly the target
// rate unless writes fail; 2 % is the brief's margin, 100 datagrams.
// Loopback itself does not drop; a receiver socket overflows only if its
// reader stalls for longer than its buffer holds (the responder's default
// 208 KiB buffer is ~90 datagrams, 36 ms at 2500 datagrams/s), so up to
// 1 % loss (a further 20 ms stall) is tolerated as machine noise.
//
// The same at 18-byte datagrams (RFC 2544's 64-byte frame: the compact
// header) at 360 kbit/s: the same 2500 datagrams/s.
func TestUDPBothWays(t *testing.T) {
	_, addr := startServer(t, serve.Config{})
	const duration = 2 * time.Second
	for _, tc := range []struct {
		name       string
		reverse    bool
		dir        vocab.Direction
		rate, size int
	}{
		{"up", false, vocab.Up, 20_000_000, 1000},
		{"down", true, vocab.Down, 20_000_000, 1000},
		{"up-compact", false, vocab.Up, 360_000, wire.CompactLen},
		{"down-compact", true, vocab.Down, 360_000, wire.CompactLen},
	} {
		rate, size := float64(tc.rate), uint64(tc.size)
		wantPkts := uint64(rate * duration.Seconds() / 8 / float64(size))
		t.Run(tc.name, func(t *testing.T) {
			res, err := RunUDP(testCtx(t, 20*time.Second), Target{Addr: addr},
				result.UDPConfig{RateBps: int64(tc.rate), Size: tc.size, Duration: duration, Reverse: tc.reverse, Interval: 500 * time.Millisecond, Drain: 200 * time.Millisecond}, nil)
			if err != nil {
				t.Fatal(err)
			}
			s := res.Summary
			t.Logf("sent %d, received %d, lost %d, sender %.4g bit/s, receiver %.4g bit/s, jitter %.1f µs",
				s.SentPackets, s.RecvPackets, s.Lost, s.SenderRateBps, s.ReceiverRateBps, s.JitterUs)
			if s.Direction != tc.dir || s.Partial {
				t.Errorf("direction %q partial %v, want %q and complete", s.Direction, s.Partial, tc.dir)
			}
			if s.SentBytes != s.SentPackets*size || s.RecvBytes != s.RecvPackets*size {
				t.Errorf("bytes sent %d for %d datagrams, received %d for %d: want %d B each", s.SentBytes, s.SentPackets, s.RecvBytes, s.RecvPackets, size)
			}
			if math.Abs(s.SenderRateBps-rate) > 0.02*rate {
				t.Errorf("sender rate %.0f bit/s, want %.0f ± 2 %%", s.SenderRateBps, rate)
			}
			if d := math.Abs(float64(s.SentPackets) - float64(wantPkts)); d > 0.02*float64(wantPkts) {
				t.Errorf("sent %d datagrams, want %d ± 2 %%", s.SentPackets, wantPkts)
			}
			if s.RecvPackets > s.SentPackets || s.Duplicates != 0 {
				t.Errorf("received %d (%d duplicates) of %d sent: loopback neither duplicates nor invents", s.RecvPackets, s.Duplicates, s.SentPackets)
			}
			if s.RecvPackets+s.Lost != s.SentPackets {
				t.Errorf("received %d + lost %d ≠ sent %d", s.RecvPackets, s.Lost, s.SentPackets)
			}
			if s.LossPct > 1 || !relEqual(s.LossPct, float64(s.Lost)/float64(s.SentPackets)*100, 1e-9) {
				t.Errorf("loss %v %% (%d of %d), want ≤ 1 %% on loopback", s.LossPct, s.Lost, s.SentPackets)
			}
			// The receiver's rate is over the arrivals' own span, so it is
			// the sender's rate unless arrivals bunch at either end.
			if math.Abs(s.ReceiverRateBps-rate) > 0.02*rate {
				t.Errorf("receiver rate %.0f bit/s, want %.0f ± 2 %%", s.ReceiverRateBps, rate)
			}
			// Jitter (RFC 3550) on loopback is the variation of the
			// receiver's wake-up delay: tens of µs, a timer overshoot of
			// ~1 ms at worst (kernel-notes). 10 ms is broken arithmetic.
			if math.IsNaN(s.JitterUs) || math.IsInf(s.JitterUs, 0) || s.JitterUs < 0 || s.JitterUs > 10_000 {
				t.Errorf("jitter %v µs, want finite, ≥ 0 and < 10 ms", s.JitterUs)
			}
			if n := len(res.Intervals); n < 3 || n > 5 {
				t.Errorf("%d intervals for 2 s at 500 ms, want 3 to 5", n)
			}
			var ivPkts uint64
			for _, iv := range res.Intervals {
				ivPkts += iv.Packets
			}
			if ivPkts > s.RecvPackets {
				t.Errorf("intervals count %d datagrams, the summary %d", ivPkts, s.RecvPackets)
			}
		})
	}
}

// TestRTTSeries: 20 probes 10 ms apart all come back, each reported once
// to onReply with the responder's hold taken out, and the order
// statistics are ordered. A loopback round trip
// is two syscalls and the responder's wake-up: tens of µs, so 10 ms (the
// probe spacing) would be a stuck responder.
func TestRTTSeries(t *testing.T) {
	_, addr := startServer(t, serve.Config{})
	const count = 20
	seen := map[uint64]time.Duration{}
	var dup bool
	start := time.Now()
	res, err := RunRTT(testCtx(t, 20*time.Second), Target{Addr: addr}, result.RTTConfig{Count: count, Interval: 10 * time.Millisecond, Size: 64},
		func(seq uint64, rtt time.Duration) {
			if _, ok := seen[seq]; ok {
				dup = true
			}
			seen[seq] = rtt
		})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.Sent != count || s.Received != count || s.LossPct != 0 || s.Partial {
		t.Fatalf("sent %d received %d loss %v partial %v, want %d back", s.Sent, s.Received, s.LossPct, s.Partial, count)
	}
	if !(s.MinUs > 0 && s.MinUs <= s.P50Us && s.P50Us <= s.P99Us && s.P99Us <= s.MaxUs && s.MinUs <= s.MeanUs && s.MeanUs <= s.MaxUs) {
		t.Errorf("order statistics out of order: %+v", s.RTTStats)
	}
	if s.MaxUs >= 10_000 {
		t.Errorf("max RTT %v µs on loopback, want < 10 ms", s.MaxUs)
	}
	// The responder says how long it held each probe (wire.EchoHeld):
	// from its kernel's stamp to the reply, more than 0 and, unless it
	// is stuck, less than the probe spacing.
	if s.ResponderHolds != count || s.ResponderHoldMaxUs <= 0 || s.ResponderHoldMaxUs >= 10_000 {
		t.Errorf("%d replies with the responder's hold (longest %.1f µs), want all %d", s.ResponderHolds, s.ResponderHoldMaxUs, count)
	}
	if s.SizeBytes != 64 || res.Config.Interval != 10*time.Millisecond {
		t.Errorf("size %d B, interval %v: want the config's 64 B, 10 ms", s.SizeBytes, res.Config.Interval)
	}
	// onReply runs on the prober's reader; RunRTT has collected all
	// replies before it returns, so the map is complete and quiet now.
	if dup || len(seen) != count {
		t.Errorf("onReply saw %d sequence numbers (duplicate: %v), want %d", len(seen), dup, count)
	}
	for seq := range uint64(count) {
		if rtt, ok := seen[seq]; !ok || rtt <= 0 || rtt >= 10*time.Millisecond {
			t.Errorf("probe %d: rtt %v (seen %v)", seq, rtt, ok)
		}
	}
	// 20 probes on a 10 ms schedule take 190 ms; then the replies are in
	// within a loopback RTT and the stop exchange is one more round trip.
	if took > 2*time.Second {
		t.Errorf("took %v for %d probes 10 ms apart", took, count)
	}
}

// TestAuth: a responder with a secret refuses a tester without one and a
// tester with the wrong one, each with a message that names the fix, and
// still serves one with the right secret afterwards.
func TestAuth(t *testing.T) {
	secret := []byte("q8Vd0uFZk1mJ3xR7tWcPzA==")
	srv, addr := startServer(t, serve.Config{Secret: secret})
	quick := result.TCPConfig{Streams: 1, Bytes: 1_000_000, Interval: time.Second}

	t.Run("no secret", func(t *testing.T) {
		_, err := RunTCP(testCtx(t, 15*time.Second), Target{Addr: addr}, quick, nil)
		if err == nil {
			t.Fatal("a responder with a secret accepted a tester without one")
		}
		if msg := err.Error(); !strings.Contains(msg, "secret") || strings.Contains(msg, "\n") {
			t.Errorf("error %q: want one line that mentions the secret", msg)
		}
		if errors.Is(err, result.ErrPartial) {
			t.Errorf("refused before the test, yet marked partial: %v", err)
		}
	})
	t.Run("wrong secret", func(t *testing.T) {
		_, err := RunTCP(testCtx(t, 15*time.Second), Target{Addr: addr, Secret: []byte("Zm9vYmFyYmF6cXV4cXV1eA==")}, quick, nil)
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != wire.CodeAuth {
			t.Fatalf("err = %v, want a wire.Error with code %q", err, wire.CodeAuth)
		}
		if msg := err.Error(); !strings.Contains(msg, "secret") || strings.Contains(msg, "\n") {
			t.Errorf("error %q: want one line that mentions the secret", msg)
		}
	})
	t.Run("right secret", func(t *testing.T) {
		res, err := RunTCP(testCtx(t, 15*time.Second), Target{Addr: addr, Secret: secret}, quick, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary.Bytes != quick.Bytes {
			t.Errorf("received %d bytes, want %d", res.Summary.Bytes, quick.Bytes)
		}
		rtt, err := RunRTT(testCtx(t, 15*time.Second), Target{Addr: addr, Secret: secret}, result.RTTConfig{Count: 3, Interval: 10 * time.Millisecond, Size: 64}, nil)
		if err != nil || rtt.Summary.Received != 3 {
			t.Fatalf("RTT with the right secret: %v, %+v", err, rtt)
		}
	})
	if !testkit.Poll(2*time.Second, func() bool { return srv.Sessions() == 0 }) {
		t.Errorf("responder still holds %d sessions after refusals and finished tests", srv.Sessions())
	}
}
