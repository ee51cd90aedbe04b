package fleetlab

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/agent"
	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/lab"
	"github.com/fullpipe/fullpipe/internal/lab/labtest"
	"github.com/fullpipe/fullpipe/internal/testkit"
)

// TestFleetMesh schedules two meshes of the three agents, both ways,
// through `fullpipe fleet`, and checks every stored result against its
// path's truth: an rtt mesh (each minimum RTT within 1 ms of the
// configured round trip), then a tcp mesh (each goodput within 5 % of
// the bottleneck's ideal) during which the controller is killed -9 in
// the middle of a run, the run's source agent finishes it with nowhere
// to upload, is killed -9 too, and both restart: that run's result must
// arrive, once.
func TestFleetMesh(t *testing.T) {
	f := newFixture(t)

	// The rtt phase judges minima, which only a lab late for every probe
	// could move, the tcp phase rates over 10 s: lab.RateBudget for both.
	// A phase the lab did not hold is scheduled again.
	var runs []fleet.Run
	var res map[string]fleet.Result
	labtest.Held(t, f.s, lab.RateBudget, func(int) {
		rtt := f.schedule(t, "rtt", `{"count":20,"interval_ns":50000000}`)
		runs = f.waitRuns(t, rtt, 6, 90*time.Second)
		res = f.results(t, "rtt")
	})
	for _, r := range runs {
		got, ok := res[r.ID]
		if r.State != fleet.RunFinished || !ok {
			t.Errorf("rtt %s→%s: %s, result stored %v (nothing was killed in this phase)", r.Source, r.Dest, r.State, ok)
			continue
		}
		// The minimum RTT is never below the configured round trip (the
		// emulator holds each packet at least its delay) and above it by
		// the forwarder's own latency (0.3-0.4 ms through the TUN
		// forwarder, kernel-notes.md) and a 64 B probe's serialisation
		// over four access links (under 0.1 ms at 20 Mbit/s and up): the
		// issue's 1 ms bound holds that with room.
		truth, _ := f.s.Truth(f.s.Index(r.Source), f.s.Index(r.Dest))
		want := float64(truth) / 1e6
		t.Logf("rtt %s→%s: min %.3f ms, truth %.3f ms", r.Source, r.Dest, got.Figures.RTTMs, want)
		if got.Figures.RTTMs < want || got.Figures.RTTMs > want+1 {
			t.Errorf("rtt %s→%s: min %.3f ms, want the truth %.3f ms + [0, 1 ms)", r.Source, r.Dest, got.Figures.RTTMs, want)
		}
	}

	var victim, source string
	labtest.Held(t, f.s, lab.RateBudget, func(int) {
		tcp := f.schedule(t, "tcp", `{"duration_ns":10000000000}`)
		victim, source = f.killMidRun(t, tcp)
		runs = f.waitRuns(t, tcp, 6, 5*time.Minute)
		res = f.results(t, "tcp")
	})
	measured := 0
	for _, r := range runs {
		got, ok := res[r.ID]
		if (r.State == fleet.RunFinished) != ok {
			t.Errorf("tcp %s→%s: %s but result stored %v", r.Source, r.Dest, r.State, ok)
		}
		if !ok {
			t.Logf("tcp %s→%s: %s %s (no result)", r.Source, r.Dest, r.State, r.Error)
			continue
		}
		// The bottleneck is the slower of the source's uplink and the
		// destination's downlink; a 10 s flow through a queue of over a
		// BDP keeps it busy but for its slow start (a few RTTs of 16-30
		// ms, about 1-2 % of the run): the 5 % bound covers that.
		_, rate := f.s.Truth(f.s.Index(r.Source), f.s.Index(r.Dest))
		want := goodput(rate)
		t.Logf("tcp %s→%s: %.2f Mbit/s, ideal %.2f Mbit/s, partial %v", r.Source, r.Dest, got.Figures.ThroughputBps/1e6, want/1e6, got.Figures.Partial)
		if got.Figures.Partial {
			t.Errorf("tcp %s→%s: partial (%s)", r.Source, r.Dest, r.Error)
			continue
		}
		measured++
		if !within(got.Figures.ThroughputBps, want, 0.05) {
			t.Errorf("tcp %s→%s: %.2f Mbit/s, want %.2f ± 5 %%", r.Source, r.Dest, got.Figures.ThroughputBps/1e6, want/1e6)
		}
	}
	if _, ok := res[victim]; !ok {
		t.Errorf("the run in flight when the controller and its source (%s) were killed has no result: %s", source, runsText(runs))
	}
	// Every run's slot begins after both restarts (a tcp slot is about
	// 18 s; the controller is down from 3 s to about 12 s into the first),
	// and agents retry their heartbeats at least once a period: each
	// source and destination hears of its run in time.
	if measured != 6 {
		t.Errorf("%d of 6 tcp paths measured: %s", measured, runsText(runs))
	}
	if left, _ := filepath.Glob(filepath.Join(f.dir, "spool-"+source, "spool", "*")); len(left) > 0 {
		t.Errorf("%s's spool still holds %v after the controller came back", source, left)
	}
}

// killMidRun waits for a run of sched to be running, kills the
// controller 3 s into it, waits for the run's source to spool its
// result (it cannot upload), kills that agent, and restarts both. It
// returns the run's ID and its source.
func (f *fixture) killMidRun(t *testing.T, sched string) (string, string) {
	t.Helper()
	var running []fleet.Run
	ok := pollEvery(90*time.Second, 250*time.Millisecond, func() bool {
		return f.fleetCLI(t, &running, "runs", "list", "--schedule", sched, "--state", "running") == nil && len(running) > 0
	})
	if !ok {
		t.Fatal("no tcp run started within 90 s")
	}
	r := running[0]
	time.Sleep(3 * time.Second) // real time: the run is a real transfer between two processes; the controller dies in its middle
	f.ctl.kill()
	t.Logf("killed the controller 3 s into run %s (%s→%s)", r.ID, r.Source, r.Dest)
	i := f.s.Index(r.Source)
	// The run's own spooled file, not any entry: the spool writes a
	// temporary file first, which a restarted agent rightly deletes.
	spooled := agent.SpoolFile(filepath.Join(f.dir, "spool-"+r.Source), r.ID)
	if !testkit.Poll(30*time.Second, func() bool { _, err := os.Stat(spooled); return err == nil }) {
		t.Fatalf("%s did not spool run %s (%s) within 30 s of the controller's death", r.Source, r.ID, spooled)
	}
	f.agents[i].kill()
	t.Logf("killed agent %s with its result spooled", r.Source)
	f.startController(t)
	f.startAgent(t, i)
	return r.ID, r.Source
}
