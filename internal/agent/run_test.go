package agent

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/method"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/result/resulttest"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/testkit"
	"github.com/fullpipe/fullpipe/internal/wire"
)

var runSecret = []byte("Kd9x2LmQ7vRt4WbN8cYp1ZsE")

// pair runs two agents on loopback, src and dst (dst's responder with
// TLS when tls), and orders a run of test from src to dst in the slot
// [now+startIn, now+startIn+slot).
func pair(t *testing.T, f *fakeFleet, tls bool, runID string, test fleet.Test, startIn, slot time.Duration) (src, dst *Agent) {
	t.Helper()
	dst, _ = startAgent(t, Config{Controller: f.ctl("dst"), Name: "dst", SpoolDir: t.TempDir(), TLS: tls})
	src, _ = startAgent(t, Config{Controller: f.ctl("src"), Name: "src", SpoolDir: t.TempDir()})
	start := time.Now().Add(startIn)
	run := fleet.Run{ID: runID, Source: "src", Dest: "dst", Test: test, Exclusive: true, Start: start, End: start.Add(slot), State: fleet.RunScheduled}
	f.setOrders("dst", fleet.Orders{Accept: []fleet.Accept{{RunID: runID, Source: "src", Key: runSecret, Start: run.Start, End: run.End}}})
	f.setOrders("src", fleet.Orders{Runs: []fleet.Assignment{{Run: run, Target: dst.Addr().String(), TargetPin: dst.Pin(), Secret: runSecret}}})
	return src, dst
}

// checkDoc validates an upload's document against its schema and
// decodes it.
func checkDoc(t *testing.T, u fleet.Upload) result.Doc {
	t.Helper()
	if err := resulttest.Check(u.Doc); err != nil {
		t.Fatalf("the uploaded document is not valid: %v\n%s", err, u.Doc)
	}
	d, err := result.Decode(strings.NewReader(string(u.Doc)))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestRunTCP: a 1 s TCP run ordered from one agent to another's
// responder (TLS, pinned; the run's key) starts at its slot, reports its
// start, streams its samples and uploads a complete, valid document;
// the destination registered its pin, and its key ring held the run's
// key.
func TestRunTCP(t *testing.T) {
	f := newFakeFleet()
	_, dst := pair(t, f, true, "run-tcp", fleet.Test{Kind: "tcp", Config: json.RawMessage(`{"duration_ns":1000000000}`)}, 300*time.Millisecond, 20*time.Second)
	u := f.waitUpload(t, "run-tcp", 20*time.Second)
	if u.State != fleet.RunFinished || u.Error != "" {
		t.Fatalf("upload %s, %q; want finished without error", u.State, u.Error)
	}
	d := checkDoc(t, u)
	tcp, ok := d.(*result.TCP)
	if !ok || tcp.Summary.Partial || tcp.Meta.Command[1] != "agent" {
		t.Fatalf("document %T %+v: want a complete TCP document from the agent", d, d)
	}
	if tcp.Summary.ThroughputBps <= 0 {
		t.Errorf("no throughput upwards: %+v", tcp.Summary)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.starts["run-tcp"] != 1 {
		t.Errorf("start reported %d times, want once", f.starts["run-tcp"])
	}
	if pin := f.regs["dst"].ResponderPin; pin == "" || pin != dst.Pin() {
		t.Errorf("registered pin %q, want %q", pin, dst.Pin())
	}
	kinds := map[method.Kind]int{}
	for i, e := range f.events["run-tcp"] {
		var me method.Event
		if err := json.Unmarshal(e.Event, &me); err != nil {
			t.Fatal(err)
		}
		kinds[me.Kind]++
		if e.Seq != i+1 {
			t.Errorf("event %d has seq %d", i, e.Seq)
		}
	}
	if kinds[method.Started] != 1 || kinds[method.Finished] != 1 || kinds[method.Sample] < 1 {
		t.Errorf("events by kind %v: want a start, samples and a finish", kinds)
	}
}

// TestRunPartialAtSlotEnd: a 30 s TCP test in a 1.5 s slot is stopped at
// the slot's end: its document is partial, valid, and uploaded as
// finished with the reason.
func TestRunPartialAtSlotEnd(t *testing.T) {
	f := newFakeFleet()
	pair(t, f, false, "run-short", fleet.Test{Kind: "tcp", Config: json.RawMessage(`{"duration_ns":30000000000}`)}, 200*time.Millisecond, 1500*time.Millisecond)
	begin := time.Now()
	u := f.waitUpload(t, "run-short", 20*time.Second)
	if took := time.Since(begin); took > 6*time.Second {
		t.Errorf("uploaded %v after the order, want within the 1.7 s slot and the test's stop (≤ 3 s)", took)
	}
	if !strings.Contains(u.Error, "end of its slot") {
		t.Errorf("error %q does not say the slot ended", u.Error)
	}
	d := checkDoc(t, u)
	if tcp, ok := d.(*result.TCP); !ok || !tcp.Summary.Partial {
		t.Errorf("document %T: want a partial TCP document", d)
	}
}

// TestRunCancelled: a run the controller cancels mid-way stops, and its
// partial document is still uploaded, saying so.
func TestRunCancelled(t *testing.T) {
	f := newFakeFleet()
	pair(t, f, false, "run-cancel", fleet.Test{Kind: "tcp", Config: json.RawMessage(`{"duration_ns":30000000000}`)}, 100*time.Millisecond, time.Minute)
	if !testkit.Poll(10*time.Second, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.starts["run-cancel"] == 1 }) {
		t.Fatal("the run did not start")
	}
	time.Sleep(time.Second)
	f.mu.Lock()
	o := f.orders["src"]
	o.Cancelled = []string{"run-cancel"}
	f.orders["src"] = o
	f.mu.Unlock()
	u := f.waitUpload(t, "run-cancel", 10*time.Second)
	if !strings.Contains(u.Error, "cancelled by the controller") {
		t.Errorf("error %q does not say the controller cancelled it", u.Error)
	}
	if tcp, ok := checkDoc(t, u).(*result.TCP); !ok || !tcp.Summary.Partial {
		t.Errorf("want a partial TCP document")
	}
}

// TestRunBadConfig: a run whose config does not decode is uploaded as
// failed with the reason, without being started.
func TestRunBadConfig(t *testing.T) {
	f := newFakeFleet()
	pair(t, f, false, "run-bad", fleet.Test{Kind: "tcp", Config: json.RawMessage(`{"duraton_ns":1}`)}, 0, time.Minute)
	u := f.waitUpload(t, "run-bad", 10*time.Second)
	if u.State != fleet.RunFailed || !strings.Contains(u.Error, "duraton_ns") || u.Doc != nil {
		t.Errorf("upload %+v: want failed, naming the unknown key", u)
	}
}

// TestResponderKeys: an agent's responder takes only the keys its orders
// gave it: none at first (refused), the run's key within its slot
// (accepted), another key (refused), and the run's key again once the
// controller cancelled the run (refused).
func TestResponderKeys(t *testing.T) {
	f := newFakeFleet()
	dst, _ := startAgent(t, Config{Controller: f.ctl("dst"), Name: "dst", SpoolDir: t.TempDir()})
	addr := dst.Addr().String()
	probe := func(key []byte) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := tester.RunRTT(ctx, tester.Target{Addr: addr, Secret: key}, result.RTTConfig{Count: 1, Interval: 10 * time.Millisecond, Size: 64}, nil)
		return err
	}
	refused := func(what string, err error) {
		t.Helper()
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != wire.CodeAuth {
			t.Errorf("%s: err = %v, want refused (auth)", what, err)
		}
	}
	refused("no run", probe(runSecret))
	now := time.Now()
	f.setOrders("dst", fleet.Orders{Accept: []fleet.Accept{{RunID: "r1", Source: "src", Key: runSecret, Start: now, End: now.Add(time.Minute)}}})
	if !testkit.Poll(5*time.Second, func() bool { return dst.ring.Has("r1") }) {
		t.Fatal("the key never reached the ring")
	}
	if err := probe(runSecret); err != nil {
		t.Errorf("the run's key in its slot: %v", err)
	}
	refused("another key", probe([]byte("Qw8Ee7Rr6Tt5Yy4Uu3Ii2Oo1")))
	f.setOrders("dst", fleet.Orders{Cancelled: []string{"r1"}})
	if !testkit.Poll(5*time.Second, func() bool { return !dst.ring.Has("r1") }) {
		t.Fatal("the cancelled run's key stayed in the ring")
	}
	refused("cancelled run", probe(runSecret))
}

// TestRunStartRefused: a run whose start the controller refuses (it was
// cancelled in between) is stopped at once and nothing is uploaded.
func TestRunStartRefused(t *testing.T) {
	f := newFakeFleet()
	f.noStart["run-no"] = true
	src, _ := pair(t, f, false, "run-no", fleet.Test{Kind: "tcp", Config: json.RawMessage(`{"duration_ns":30000000000}`)}, 0, time.Minute)
	if !testkit.Poll(10*time.Second, func() bool { src.mu.Lock(); defer src.mu.Unlock(); _, ended := src.ended["run-no"]; return ended }) {
		t.Fatal("the refused run did not end")
	}
	src.nudge()
	time.Sleep(300 * time.Millisecond)
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.stored["run-no"]; ok || len(spoolFiles(t, src.spool.dir)) != 0 {
		t.Errorf("a run whose start was refused left a result")
	}
}

// TestSpoolFullNoRun: an agent whose spool is full (the controller has
// not taken its uploads) starts no new run: the result could not be
// kept.
func TestSpoolFullNoRun(t *testing.T) {
	f := newFakeFleet()
	dir := t.TempDir()
	sp, err := openSpool(dir, 1, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.put("old", fleet.Upload{State: fleet.RunFailed, Error: "old"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	f.noUpload = true // the old upload stays
	now := time.Now()
	f.setOrders("src", fleet.Orders{Runs: []fleet.Assignment{{Run: fleet.Run{ID: "new", Test: fleet.Test{Kind: "rtt"}, Start: now, End: now.Add(time.Minute)}, Target: "127.0.0.1:1", Secret: runSecret}}})
	src, _ := startAgent(t, Config{Controller: f.ctl("src"), Name: "src", SpoolDir: dir, MaxSpoolFiles: 1})
	if !testkit.Poll(10*time.Second, func() bool { src.mu.Lock(); defer src.mu.Unlock(); _, ended := src.ended["new"]; return ended }) {
		t.Fatal("the run was not taken")
	}
	f.mu.Lock()
	f.noUpload = false
	f.mu.Unlock()
	f.waitUpload(t, "old", 10*time.Second)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.starts["new"] != 0 {
		t.Error("a run started while the spool was full")
	}
}

// TestExclusiveOverlap: two exclusive runs whose slots overlap (the
// controller should never book them) both run, with a warning.
func TestExclusiveOverlap(t *testing.T) {
	f := newFakeFleet()
	var logs testkit.Buffer
	dst, _ := startAgent(t, Config{Controller: f.ctl("dst"), Name: "dst", SpoolDir: t.TempDir()})
	src, _ := startAgent(t, Config{Controller: f.ctl("src"), Name: "src", SpoolDir: t.TempDir(), Log: slog.New(slog.NewTextHandler(&logs, nil))})
	now := time.Now().Add(200 * time.Millisecond)
	var as []fleet.Assignment
	var acc []fleet.Accept
	for _, id := range []string{"x1", "x2"} {
		r := fleet.Run{ID: id, Source: "src", Dest: "dst", Test: fleet.Test{Kind: "tcp", Config: json.RawMessage(`{"duration_ns":1000000000}`)}, Exclusive: true, Start: now, End: now.Add(20 * time.Second)}
		as = append(as, fleet.Assignment{Run: r, Target: dst.Addr().String(), Secret: runSecret})
		acc = append(acc, fleet.Accept{RunID: id, Source: "src", Key: runSecret, Start: r.Start, End: r.End})
	}
	f.setOrders("dst", fleet.Orders{Accept: acc})
	f.setOrders("src", fleet.Orders{Runs: as})
	for _, id := range []string{"x1", "x2"} {
		if u := f.waitUpload(t, id, 20*time.Second); u.State != fleet.RunFinished {
			t.Errorf("run %s: %s %s", id, u.State, u.Error)
		}
	}
	_ = src
	if !strings.Contains(logs.String(), "exclusive runs overlap") {
		t.Error("no warning of the overlap")
	}
}
