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

func tcpTest(d time.Duration) fleet.Test {
	b, _ := json.Marshal(map[string]any{"duration_ns": d})
	return fleet.Test{Kind: "tcp", Config: b}
}

// checkDoc validates a stored result's document against its schema and
// decodes it.
func checkDoc(t *testing.T, doc []byte) result.Doc {
	t.Helper()
	if err := resulttest.Check(doc); err != nil {
		t.Fatalf("the stored document is not valid: %v\n%s", err, doc)
	}
	d, err := result.Decode(strings.NewReader(string(doc)))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// pair runs two agents of f on loopback, "src" and "dst" (dst's
// responder with TLS when tls).
func (f *testFleet) pair(tls bool) (src, dst *Agent, srcRec *recorder) {
	f.t.Helper()
	dst, _, _ = f.agent("dst", Config{TLS: tls})
	src, srcRec, _ = f.agent("src", Config{})
	for _, name := range []string{"src", "dst"} {
		if !testkit.Poll(10*time.Second, func() bool {
			a, err := f.db.Agent(context.Background(), name)
			return err == nil && !a.Registered.IsZero()
		}) {
			f.t.Fatalf("agent %s did not register", name)
		}
	}
	return src, dst, srcRec
}

// TestFleetTCP: end to end with a real controller: two agents enrolled
// and registered (the destination with a TLS responder, its pin
// registered), a schedule of a 1 s TCP test between them; the controller
// books the run, the source runs it against the destination's responder
// (proving the run's key, pinning its certificate), streams its
// progress and uploads a complete, valid document, stored once.
func TestFleetTCP(t *testing.T) {
	f := newTestFleet(t)
	_, dst, rec := f.pair(true)
	if a, _ := f.db.Agent(f.ctx(), "dst"); a.ResponderPin == "" || a.ResponderPin != dst.Pin() {
		t.Fatalf("registered pin %q, want %q", a.ResponderPin, dst.Pin())
	}
	sc, err := f.admin.CreateSchedule(f.ctx(), fleet.Schedule{Name: "tcp pair", Test: tcpTest(time.Second),
		From: fleet.Selector{Agents: []string{"src"}}, To: fleet.Selector{Agents: []string{"dst"}}})
	if err != nil {
		t.Fatal(err)
	}
	var runs []fleet.Run
	if !testkit.Poll(15*time.Second, func() bool {
		runs, err = f.db.Runs(context.Background(), fleet.RunFilter{Schedule: sc.ID})
		return err == nil && len(runs) == 1
	}) {
		t.Fatalf("no run booked: %v %v", runs, err)
	}
	run := f.waitRun(runs[0].ID, 30*time.Second, fleet.RunFinished, fleet.RunFailed)
	if run.State != fleet.RunFinished || run.Started.IsZero() {
		t.Fatalf("run %s: %s (%s), started %v", run.ID, run.State, run.Error, run.Started)
	}
	res := f.waitResult(run.ID, 5*time.Second)
	tcp, ok := checkDoc(t, res.Doc).(*result.TCP)
	if !ok || tcp.Summary.Partial || tcp.Summary.ThroughputBps <= 0 || tcp.Meta.Command[1] != "agent" {
		t.Fatalf("document: want a complete TCP document from the agent with a throughput")
	}
	t.Logf("run %s: slot %v, %.2f Gbit/s", run.ID, run.End.Sub(run.Start), tcp.Summary.ThroughputBps/1e9)
	if acked, stored := rec.acknowledged(run.ID); acked != 1 || stored != 1 {
		t.Errorf("uploads acknowledged %d, stored %d: want once each", acked, stored)
	}
	es, err := f.admin.RunEvents(f.ctx(), run.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[method.Kind]int{}
	for _, e := range es {
		var me method.Event
		if err := json.Unmarshal(e.Event, &me); err != nil {
			t.Fatal(err)
		}
		kinds[me.Kind]++
	}
	if kinds[method.Started] != 1 || kinds[method.Finished] != 1 || kinds[method.Sample] < 1 {
		t.Errorf("stored events by kind %v: want a start, samples and a finish", kinds)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	t.Logf("%d events stored, sent in %d batches", len(es), len(rec.batches[run.ID]))
	if n := len(rec.batches[run.ID]); n < 1 || n > 4 {
		t.Errorf("%d event batches for a 1 s run sent every 100 ms… want them batched (1 to 4)", n)
	}
}

// TestRunPartialAtSlotEnd: a 30 s TCP test booked in a 1.5 s slot is
// stopped at the slot's end: its document is partial and valid, and it
// is uploaded and stored, the run finished with the reason.
func TestRunPartialAtSlotEnd(t *testing.T) {
	f := newTestFleet(t)
	f.pair(false)
	run := f.book("src", "dst", tcpTest(30*time.Second), true, time.Now().Add(time.Second), 1500*time.Millisecond)
	res := f.waitResult(run.ID, 20*time.Second)
	late := time.Since(run.End)
	t.Logf("stored %v after the slot's end", late.Round(time.Millisecond))
	if late > 4*time.Second {
		t.Errorf("stored %v after the slot's end, want within the test's stop (≤ 3 s) and an upload", late)
	}
	if tcp, ok := checkDoc(t, res.Doc).(*result.TCP); !ok || !tcp.Summary.Partial {
		t.Errorf("want a partial TCP document")
	}
	if r := f.waitRun(run.ID, 5*time.Second, fleet.RunFinished); !strings.Contains(r.Error, "end of its slot") {
		t.Errorf("run error %q does not say the slot ended", r.Error)
	}
}

// TestRunCancelled: a run an operator cancels mid-way stops at the
// next heartbeat, and its partial document is still uploaded and kept.
func TestRunCancelled(t *testing.T) {
	f := newTestFleet(t)
	f.pair(false)
	run := f.book("src", "dst", tcpTest(30*time.Second), true, time.Now().Add(500*time.Millisecond), time.Minute)
	f.waitRun(run.ID, 10*time.Second, fleet.RunRunning)
	time.Sleep(time.Second) // real time: the real TCP test measures for a second, so its partial document has samples
	if _, err := f.admin.CancelRun(f.ctx(), run.ID); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	res := f.waitResult(run.ID, 10*time.Second)
	took := time.Since(begin)
	t.Logf("stored %v after the cancellation", took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Errorf("stored %v after the cancellation, want within a heartbeat and the test's stop (≤ 3 s)", took)
	}
	if tcp, ok := checkDoc(t, res.Doc).(*result.TCP); !ok || !tcp.Summary.Partial {
		t.Errorf("want a partial TCP document")
	}
	if r, _ := f.db.Run(f.ctx(), run.ID); r.State != fleet.RunCancelled {
		t.Errorf("run is %s, want it to stay cancelled", r.State)
	}
}

// TestRunStartRefused: a run cancelled after the source heard of it,
// while its heartbeats do not get through (a gate refuses them), is
// refused at its start (409): the source stops it at once and uploads
// nothing.
func TestRunStartRefused(t *testing.T) {
	f := newTestFleet(t)
	g := f.gate()
	f.agent("dst", Config{})
	src, rec, _ := f.gatedAgent(g, "src", Config{})
	// The cancel must reach the controller before the run's start, or
	// the start is accepted and the test's premise is gone: 5 s leave a
	// busy host room (CI beside a busy core once took 2 s to get here).
	run := f.book("src", "dst", tcpTest(30*time.Second), true, time.Now().Add(5*time.Second), time.Minute)
	if !testkit.Poll(10*time.Second, func() bool { src.mu.Lock(); defer src.mu.Unlock(); return src.runs[run.ID] != nil }) {
		t.Fatal("the source never took the run")
	}
	g.set(gateRefuse, "/heartbeat")
	if _, err := f.admin.CancelRun(f.ctx(), run.ID); err != nil {
		t.Fatal(err)
	}
	if time.Now().After(run.Start) {
		t.Fatalf("the run was cancelled at %v, after its start %v: this host is too slow for the test's premise", time.Now().Format(time.StampMilli), run.Start.Format(time.StampMilli))
	}
	if !testkit.Poll(10*time.Second, func() bool { src.mu.Lock(); defer src.mu.Unlock(); _, ended := src.ended[run.ID]; return ended }) {
		t.Fatal("the run did not end")
	}
	// Final: a run is remembered as ended only after its upload was
	// spooled (or, failing the spool, tried), and a spooled file stays
	// until after the recorder saw its upload.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(spoolFiles(t, src.spool.dir)) != 0 || len(rec.uploads) != 0 {
		t.Errorf("a cancelled run left a result: spool %v, uploads %+v", spoolFiles(t, src.spool.dir), rec.uploads)
	}
}

// TestRunBadConfig: a run whose config does not decode (a config the
// controller took before a newer agent renamed a key, say) is uploaded
// as failed with the reason.
func TestRunBadConfig(t *testing.T) {
	f := newTestFleet(t)
	f.pair(false)
	run := f.book("src", "dst", fleet.Test{Kind: "tcp", Config: json.RawMessage(`{"duraton_ns":1}`)}, true, time.Now().Add(500*time.Millisecond), time.Minute)
	r := f.waitRun(run.ID, 10*time.Second, fleet.RunFailed, fleet.RunFinished)
	if r.State != fleet.RunFailed || !strings.Contains(r.Error, "duraton_ns") {
		t.Errorf("run %s %q: want failed, naming the unknown key", r.State, r.Error)
	}
}

// TestResponderKeys: an agent's responder takes only the keys its
// controller gave it: none at first (refused), a booked run's key within
// its slot (accepted), another key (refused), and the run's key again
// once an operator cancelled the run (refused).
func TestResponderKeys(t *testing.T) {
	f := newTestFleet(t)
	_, dst, _ := f.pair(false)
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
	key := []byte("Test-run-key-0123456789abcdef")
	refused("no run", probe(key))
	// An rtt run (not exclusive) an hour long, from an agent never run:
	// only its key matters here.
	if _, err := f.admin.Enrol(f.ctx(), fleet.Enrolment{Name: "elsewhere"}); err != nil {
		t.Fatal(err)
	}
	run := f.book("elsewhere", "dst", fleet.Test{Kind: "rtt"}, false, time.Now(), time.Hour)
	if !testkit.Poll(5*time.Second, func() bool { return dst.ring.Has(run.ID) }) {
		t.Fatal("the key never reached the ring")
	}
	if err := probe(key); err != nil {
		t.Errorf("the run's key in its slot: %v", err)
	}
	refused("another key", probe([]byte("Qw8Ee7Rr6Tt5Yy4Uu3Ii2Oo1")))
	if _, err := f.admin.CancelRun(f.ctx(), run.ID); err != nil {
		t.Fatal(err)
	}
	if !testkit.Poll(5*time.Second, func() bool { return !dst.ring.Has(run.ID) }) {
		t.Fatal("the cancelled run's key stayed in the ring")
	}
	refused("cancelled run", probe(key))
}

// TestExclusiveOverlap: two exclusive runs executing at once (the
// controller's slots exclude it) are both counted, with a warning.
func TestExclusiveOverlap(t *testing.T) {
	var logs testkit.Buffer
	a := &Agent{}
	log := slog.New(slog.NewTextHandler(&logs, nil))
	r1, r2 := &run{Assignment: fleet.Assignment{Run: fleet.Run{ID: "x1", Exclusive: true}}}, &run{Assignment: fleet.Assignment{Run: fleet.Run{ID: "x2", Exclusive: true}}}
	a.beginExclusive(r1, log)
	if strings.Contains(logs.String(), "overlap") {
		t.Fatal("warned of one run")
	}
	a.beginExclusive(r2, log)
	if !strings.Contains(logs.String(), "exclusive runs overlap") || a.exclusive != 2 {
		t.Errorf("no warning of the overlap: %q", logs.String())
	}
	a.endExclusive(r1)
	a.endExclusive(r2)
	if a.exclusive != 0 {
		t.Errorf("%d exclusive runs left", a.exclusive)
	}
}

// TestSpoolFullNoRun: an agent whose spool is full (the controller
// refuses its uploads) starts no new run: the result could not be kept.
func TestSpoolFullNoRun(t *testing.T) {
	f := newTestFleet(t)
	g := f.gate()
	g.set(gateRefuse, "/result")
	if _, err := f.admin.Enrol(f.ctx(), fleet.Enrolment{Name: "peer"}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sp, err := openSpool(dir, 1, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	tok := f.enrol("src")
	old := f.futureRuns("src", "peer", 1)[0]
	if err := sp.put(old, failedUpload("old"), time.Now()); err != nil {
		t.Fatal(err)
	}
	f.agent("dst", Config{}) // a destination that registered: the controller hands out runs only to those
	run := f.book("src", "dst", fleet.Test{Kind: "rtt"}, false, time.Now().Add(time.Second), time.Minute)
	src, _ := startAgent(t, Config{Controller: f.gatedClient(g, tok), Name: "src", SpoolDir: dir, MaxSpoolFiles: 1})
	if !testkit.Poll(10*time.Second, func() bool { src.mu.Lock(); defer src.mu.Unlock(); _, ended := src.ended[run.ID]; return ended }) {
		t.Fatal("the run was not taken, or not ended")
	}
	if r, _ := f.db.Run(f.ctx(), run.ID); r.State != fleet.RunScheduled || !r.Started.IsZero() {
		t.Errorf("run %s, started %v: a run started while the spool was full", r.State, r.Started)
	}
	g.set(gatePass, "")
	f.waitRun(old, 10*time.Second, fleet.RunFailed)
}
