package tester

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/serve"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// TestTrainBothWays: a train of 300 datagrams of 1000 bytes each way over
// loopback against a real responder (in this process) arrives whole: the
// responder reads the up train from its kernel's stamps, this host the
// down train; nothing dropped locally, and the reading's bytes count the
// overhead asked for.
func TestTrainBothWays(t *testing.T) {
	_, addr := startServer(t, serve.Config{})
	for _, tc := range []struct {
		reverse bool
		size    int
	}{{false, 1000}, {true, 1000}, {false, wire.CompactLen}, {true, wire.CompactLen}} {
		reverse := tc.reverse
		name := map[bool]string{false: "up", true: "down"}[reverse]
		t.Run(fmt.Sprintf("%s-%d", name, tc.size), func(t *testing.T) {
			cfg := result.TrainConfig{Packets: 300, Size: tc.size, Overhead: 66, Reverse: reverse, Drain: 200 * time.Millisecond}
			res, err := RunTrain(testCtx(t, 20*time.Second), Target{Addr: addr}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := res.Reading
			t.Logf("%s: %+v, local drops %d, stamps %s", res.Direction, r, res.LocalDrops, res.Stamps)
			if string(res.Direction) != name || res.Stamps != "kernel" || res.LocalDrops != 0 {
				t.Errorf("direction %q stamps %q local drops %d; want %q, kernel, 0", res.Direction, res.Stamps, res.LocalDrops, name)
			}
			if want := 300 * (tc.size + 66); r.Sent != 300 || r.Got != 300 || r.HeadPackets != 300 || r.Bytes != want {
				t.Errorf("sent %d got %d head %d bytes %d; want 300 whole, %d B", r.Sent, r.Got, r.HeadPackets, r.Bytes, want)
			}
			if r.HeadBps <= 0 || r.SendBps <= 0 {
				t.Errorf("rates head %.0f send %.0f bit/s, want both measured", r.HeadBps, r.SendBps)
			}
		})
	}
}

// TestTrainLimit: a train above the responder's --max-train-bytes is
// refused before anything is sent (by the client, from the limits the
// responder announced), with the flag named.
func TestTrainLimit(t *testing.T) {
	_, addr := startServer(t, serve.Config{MaxTrainBytes: 100_000})
	_, err := RunTrain(testCtx(t, 10*time.Second), Target{Addr: addr}, result.TrainConfig{Packets: 200, Size: 1000})
	var ns *NotSentError
	if !errors.As(err, &ns) || ns.Err.Code != wire.CodeLimit || !strings.Contains(ns.Err.Message, "--max-train-bytes") {
		t.Fatalf("got %v, want a limit error naming --max-train-bytes", err)
	}
}

// TestTrainHoldsReachReading: the up train's sender reports a write that
// returned 3 ms after its stamp (datagram 20's, held here in the
// writer), the responder's reading has it (sender_held_ns), and the gap
// it ended is in no busy rate.
func TestTrainHoldsReachReading(t *testing.T) {
	_, addr := startServer(t, serve.Config{})
	const hold = 3 * time.Millisecond
	orig := trainWriter
	t.Cleanup(func() { trainWriter = orig })
	trainWriter = func(c *net.UDPConn) func([]byte) error {
		w := orig(c)
		return func(b []byte) error {
			if h, err := wire.ParseUDP(b); err == nil && h.Seq == 20 {
				time.Sleep(hold) // real time: SendTrain times its writes on the real clock, which is what it reports
			}
			return w(b)
		}
	}
	cfg := result.TrainConfig{Packets: 64, Size: 1000, Overhead: 66, Drain: 200 * time.Millisecond}
	res, err := RunTrain(testCtx(t, 20*time.Second), Target{Addr: addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Reading; r.SenderHeld < hold || r.Got != 64 {
		t.Errorf("reading %+v: want all 64 and sender_held_ns at least %v", r, hold)
	}
}
