package agent

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/stamp"
)

// TestFleetSTAMP: a scheduled stamp test between two agents on loopback.
// The destination's host runs a reflector (what `agent --stamp` starts
// beside its responder) on a port of its own; the source runs the
// session to the destination's host at that port and uploads a complete
// stamp document.
func TestFleetSTAMP(t *testing.T) {
	f := newTestFleet(t)
	f.pair(false)
	r, err := stamp.NewReflector(stamp.ReflectorConfig{Addr: "127.0.0.1:0", Stateful: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	cfg, _ := json.Marshal(result.STAMPConfig{Port: r.Addr().Port, Count: 20, Interval: 10 * time.Millisecond, Stateful: true})
	run := f.runOnce(t, "stamp", cfg, 30*time.Second)
	d, ok := checkDoc(t, f.waitResult(run.ID, 5*time.Second).Doc).(*result.STAMP)
	if !ok || d.Summary.Received != 20 || !d.Summary.LossByDirection || d.Summary.Partial {
		t.Fatalf("document: want a complete stamp document with 20 replies, got %+v", d)
	}
	if got := r.Stats().Reflected; got != 20 {
		t.Errorf("the reflector reflected %d, want 20", got)
	}
	t.Logf("run %s: slot %v, rtt min %.0f µs", run.ID, run.End.Sub(run.Start), d.Summary.RTT.MinUs)
}
