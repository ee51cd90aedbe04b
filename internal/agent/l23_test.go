package agent

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/testkit"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// TestFleetL23Kinds: the layer-2/3 companions scheduled like any other
// test between two agents on loopback: an RFC 2544 throughput search, a
// Y.1564 configuration test (loopback polices nothing: its policing step
// says so and the run still finishes) and, as root, a ping run to the
// destination's host. Each run finishes and uploads a complete document
// of its kind, valid against its schema.
func TestFleetL23Kinds(t *testing.T) {
	f := newTestFleet(t)
	f.pair(false)
	cases := []struct {
		kind  string
		cfg   any
		check func(result.Doc) bool
	}{
		{"rfc2544", result.RFC2544Config{LineRateBps: 10e6, FrameSizes: []int{512}, Tests: []string{"throughput"}, Trial: 200 * time.Millisecond, ResolutionPct: 10},
			func(d result.Doc) bool {
				r, ok := d.(*result.RFC2544)
				if !ok || r.Directions[vocab.Up] == nil || len(r.Directions[vocab.Up].Sizes) != 1 {
					return false
				}
				tp := r.Directions[vocab.Up].Sizes[0].Throughput
				return tp != nil && tp.ZeroLossFPS > 0
			}},
		{"y1564", json.RawMessage(`{"services": [{"name": "data", "cir_bps": 2000000, "frame_bytes": 512}], "steps_pct": [100], "step_time_ns": 1000000000, "skip_perf": true}`),
			func(d result.Doc) bool {
				// Both directions; each the CIR step and the policing step
				// (no EIR: no CIR+EIR step).
				r, ok := d.(*result.Y1564)
				return ok && len(r.Services) == 2 && len(r.Services[0].Steps) == 2 && len(r.Services[1].Steps) == 2
			}},
	}
	if os.Geteuid() == 0 {
		cases = append(cases, struct {
			kind  string
			cfg   any
			check func(result.Doc) bool
		}{"ping", result.PingConfig{Count: 5, Interval: 10 * time.Millisecond}, func(d result.Doc) bool {
			_, ok := d.(*result.Ping)
			return ok
		}})
	} else {
		t.Log("not root: the ping kind is left out (ICMP needs a raw socket or ping_group_range)")
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			cfg, _ := json.Marshal(c.cfg)
			run := f.runOnce(t, c.kind, cfg, 60*time.Second)
			if d := checkDoc(t, f.waitResult(run.ID, 5*time.Second).Doc); !c.check(d) {
				t.Errorf("document: %+v", d)
			}
			t.Logf("run %s: slot %v", run.ID, run.End.Sub(run.Start))
		})
	}
}

// runOnce schedules one test of kind with cfg from agent src to agent
// dst, waits for its one run to be booked and to end within wait, and
// returns the run, finished (else the test fails).
func (f *testFleet) runOnce(t *testing.T, kind string, cfg json.RawMessage, wait time.Duration) fleet.Run {
	t.Helper()
	sc, err := f.admin.CreateSchedule(f.ctx(), fleet.Schedule{Name: kind + " pair", Test: fleet.Test{Kind: kind, Config: cfg},
		From: fleet.Selector{Agents: []string{"src"}}, To: fleet.Selector{Agents: []string{"dst"}}})
	if err != nil {
		t.Fatal(err)
	}
	var runs []fleet.Run
	if !testkit.Poll(15*time.Second, func() bool {
		runs, err = f.db.Runs(f.ctx(), fleet.RunFilter{Schedule: sc.ID})
		return err == nil && len(runs) == 1
	}) {
		t.Fatalf("no run booked: %v %v", runs, err)
	}
	run := f.waitRun(runs[0].ID, wait, fleet.RunFinished, fleet.RunFailed)
	if run.State != fleet.RunFinished {
		t.Fatalf("run %s: %s (%s)", run.ID, run.State, run.Error)
	}
	return run
}
