package controller

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/fleet/client"
)

// tcpDoc is a real tcp document (the result package's test data).
func tcpDoc(t *testing.T) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile("../result/testdata/tcp.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pairSchedule is a tcp test from a to b, once, now.
func pairSchedule(a, b string) fleet.Schedule {
	return fleet.Schedule{Name: a + "→" + b, Test: fleet.Test{Kind: "tcp", Config: json.RawMessage(`{"duration_ns": 1000000000}`)},
		From: fleet.Selector{Agents: []string{a}}, To: fleet.Selector{Agents: []string{b}}}
}

// waitOrders heartbeats as cl until its orders hold a run (as source) or
// an accept (as destination), for at most 15 s.
func waitOrders(t *testing.T, cl *client.Client, want func(fleet.Orders) bool) fleet.Orders {
	t.Helper()
	var o fleet.Orders
	ok := poll(15*time.Second, func() bool {
		var err error
		if o, err = cl.Heartbeat(ctx(t), fleet.Heartbeat{}); err != nil {
			t.Fatal(err)
		}
		return want(o)
	})
	if !ok {
		t.Fatalf("no orders as wanted within 15 s: last %+v", o)
	}
	return o
}

// TestLifecycle: enrol, register, schedule a pair, the heartbeat brings
// the run (and the destination its key), start, upload, the same upload
// again, a different one, the result listed, the metrics show it.
func TestLifecycle(t *testing.T) {
	e := start(t, Config{})
	a, b := e.agent("a", nil), e.agent("b", nil)
	sc, err := e.admin.CreateSchedule(ctx(t), pairSchedule("a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	if sc.ID == "" || !sc.Enabled || sc.NextDue.IsZero() {
		t.Fatalf("schedule as stored: %+v", sc)
	}
	o := waitOrders(t, a, func(o fleet.Orders) bool { return len(o.Runs) > 0 })
	asg := o.Runs[0]
	if asg.Source != "a" || asg.Dest != "b" || asg.Target != "127.0.0.1:5201" || asg.TargetPin != strings.Repeat("ab", 32) || len(asg.Secret) != 32 {
		t.Fatalf("assignment: %+v", asg)
	}
	if o.Interval != time.Second || o.Now.IsZero() {
		t.Errorf("orders' interval %v, now %v", o.Interval, o.Now)
	}
	ob := waitOrders(t, b, func(o fleet.Orders) bool { return len(o.Accept) > 0 })
	if acc := ob.Accept[0]; acc.RunID != asg.ID || acc.Source != "a" || string(acc.Key) != string(asg.Secret) || !acc.Start.Equal(asg.Start) {
		t.Fatalf("accept %+v for assignment %+v", acc, asg)
	}
	wantStatus(t, "start by the destination", b.Start(ctx(t), asg.ID), http.StatusForbidden)
	if err := a.Start(ctx(t), asg.ID); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "start twice", a.Start(ctx(t), asg.ID), http.StatusConflict)
	events := []fleet.Event{{Seq: 1, Time: time.Now(), Event: json.RawMessage(`{"kind":"step_started","step":"tcp"}`)},
		{Seq: 2, Time: time.Now(), Event: json.RawMessage(`{"kind":"line","step":"tcp","text":"1 Gbit/s"}`)}}
	for range 2 { // the second time, deduplicated
		if err := a.Events(ctx(t), asg.ID, events); err != nil {
			t.Fatal(err)
		}
	}
	up := fleet.Upload{State: fleet.RunFinished, Doc: tcpDoc(t)}
	if stored, err := a.Upload(ctx(t), asg.ID, up); err != nil || !stored {
		t.Fatalf("upload: stored %v, %v", stored, err)
	}
	if stored, err := a.Upload(ctx(t), asg.ID, up); err != nil || stored {
		t.Fatalf("the same upload again: stored %v, %v; want false, nil", stored, err)
	}
	other := fleet.Upload{State: fleet.RunFinished, Doc: json.RawMessage(strings.Replace(string(tcpDoc(t)), `"schema"`, `"extra": 1, "schema"`, 1))}
	_, err = a.Upload(ctx(t), asg.ID, other)
	wantStatus(t, "a different upload", err, http.StatusConflict)
	if !errors.Is(err, fleet.ErrConflict) {
		t.Errorf("a different upload: %v does not match fleet.ErrConflict", err)
	}
	_, err = a.Upload(ctx(t), asg.ID, fleet.Upload{State: fleet.RunFailed, Error: "boom"})
	wantStatus(t, "a failure after the result", err, http.StatusConflict)
	checkFinished(t, e, asg.ID, len(events))
}

// checkFinished: the run is finished, its result and events listed, the
// metrics show it.
func checkFinished(t *testing.T, e *env, runID string, events int) {
	t.Helper()
	run, err := e.admin.Run(ctx(t), runID)
	if err != nil || run.State != fleet.RunFinished || run.Started.IsZero() || run.Finished.IsZero() {
		t.Fatalf("run after upload: %+v, %v", run, err)
	}
	rs, err := e.admin.Results(ctx(t), fleet.ResultFilter{Source: "a"}, false)
	if err != nil || len(rs) != 1 || rs[0].RunID != runID || rs[0].Doc != nil && string(rs[0].Doc) != "null" {
		t.Fatalf("results: %+v, %v", rs, err)
	}
	if f := rs[0].Figures; f.ThroughputBps <= 0 || f.RTTMs <= 0 {
		t.Errorf("figures from the tcp document: %+v", f)
	}
	full, err := e.admin.Result(ctx(t), runID)
	if err != nil || len(full.Doc) == 0 || full.Kind != "tcp" {
		t.Fatalf("result: %+v, %v", full, err)
	}
	es, err := e.admin.RunEvents(ctx(t), runID, 0)
	if err != nil || len(es) != events {
		t.Fatalf("events: %d (%v), want %d: sent twice, stored once", len(es), err, events)
	}
	m, err := e.admin.Raw(ctx(t), "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`fullpipe_runs_ended_total{outcome="finished"} 1`,
		`fullpipe_runs{state="finished"} 1`,
		`fullpipe_agents{state="up"} 2`,
		`fullpipe_pair_throughput_bits_per_second{dest="b",kind="tcp",source="a"}`,
		`fullpipe_pair_rtt_seconds{dest="b",kind="tcp",source="a"}`,
		`fullpipe_scheduler_active 1`,
	} {
		if !strings.Contains(string(m), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
