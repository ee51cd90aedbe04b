package fleetlab

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/certs"
	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/lab"
	"github.com/fullpipe/fullpipe/internal/testkit"
)

// fixture is a running fleet in a sites lab: site 0 holds the
// controller (and the operator's CLI), sites 1.. one agent each.
type fixture struct {
	s               *lab.Sites
	dir             string
	url, pin, admin string
	ctl             *proc
	agents          []*proc
	ctlArgs         []string
	agentArgs       [][]string
}

const heartbeat = "1s" // the controller's: agents learn their runs within 2 s

// sites are the spokes: a controller's site with an unlimited link, and
// three agents' sites with their own rate, delay and drop-tail queue
// (each queue ≥ 1 BDP of any path through it).
func sites() lab.SitesConfig {
	link := func(rate int64, delay time.Duration) lab.Direction {
		return lab.Direction{RateBps: rate, Delay: delay, QueueBytes: 200_000}
	}
	return lab.SitesConfig{Name: "fleet", Seed: 11, Sites: []lab.Site{
		{Name: "ctl"},
		{Name: "a", Up: link(50e6, 5*time.Millisecond), Down: link(50e6, 5*time.Millisecond)},
		{Name: "b", Up: link(20e6, 10*time.Millisecond), Down: link(20e6, 10*time.Millisecond)},
		{Name: "c", Up: link(30e6, 3*time.Millisecond), Down: link(30e6, 3*time.Millisecond)},
	}}
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the fleet's lab proof runs in network namespaces over TUN (CI runs it as root)")
	}
	_ = lab.CleanupSites("fleet")
	s, err := lab.UpSites(sites())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	f := &fixture{s: s, dir: t.TempDir()}
	t.Cleanup(func() { f.dumpLogs(t) })
	addr := s.Addr(0).String() + ":6350"
	f.url = "https://" + addr
	f.ctlArgs = []string{"controller", "--listen", addr, "--state-dir", filepath.Join(f.dir, "ctl"), "--heartbeat", heartbeat, "--log-format", "json"}
	f.startController(t)
	f.admin = filepath.Join(f.dir, "ctl", "admin.token")
	if f.pin, err = certs.PinFile(filepath.Join(f.dir, "ctl", "tls.crt")); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(s.Config.Sites); i++ {
		f.startAgent(t, i)
	}
	f.waitAgentsUp(t)
	return f
}

// startController starts (or restarts) the controller and waits until
// it has written its admin token and certificate.
func (f *fixture) startController(t *testing.T) {
	t.Helper()
	f.ctl = start(t, f.s, 0, f.dir, "controller", f.ctlArgs...)
	ok := testkit.Poll(10*time.Second, func() bool {
		_, e1 := os.Stat(filepath.Join(f.dir, "ctl", "admin.token"))
		_, e2 := os.Stat(filepath.Join(f.dir, "ctl", "tls.crt"))
		return e1 == nil && e2 == nil && f.ctl.alive()
	})
	if !ok {
		t.Fatalf("the controller did not start: see %s", filepath.Join(f.dir, "controller.log"))
	}
}

// startAgent enrols site i's agent (the first time) and starts it.
func (f *fixture) startAgent(t *testing.T, i int) {
	t.Helper()
	name := f.s.Config.Sites[i].Name
	for len(f.agents) <= i {
		f.agents = append(f.agents, nil)
		f.agentArgs = append(f.agentArgs, nil)
	}
	if f.agentArgs[i] == nil {
		var iss fleet.Issued
		if err := f.fleetCLI(t, &iss, "agents", "enrol", name); err != nil {
			t.Fatal(err)
		}
		tok := filepath.Join(f.dir, name+".token")
		if err := os.WriteFile(tok, []byte(iss.Secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		f.agentArgs[i] = []string{"agent", "--controller", f.url, "--pin", f.pin, "--token-file", tok, "--name", name,
			"--site", name, "--label", "fleet=lab", "--listen", f.s.Addr(i).String() + ":6349", "--spool", filepath.Join(f.dir, "spool-"+name), "--log-format", "json"}
	}
	f.agents[i] = start(t, f.s, i, f.dir, "agent-"+name, f.agentArgs[i]...)
}

func (f *fixture) waitAgentsUp(t *testing.T) {
	t.Helper()
	var as []fleet.Agent
	ok := pollEvery(20*time.Second, 500*time.Millisecond, func() bool {
		if err := f.fleetCLI(t, &as, "agents", "list"); err != nil {
			return false
		}
		up := 0
		for _, a := range as {
			if a.State == fleet.AgentUp {
				up++
			}
		}
		return up == len(f.s.Config.Sites)-1
	})
	if !ok {
		t.Fatalf("agents not all up within 20 s: %+v (logs in %s)", as, f.dir)
	}
}

// schedule adds a one-off mesh of every agent with every other, both
// ways, of kind with config, and returns its ID.
func (f *fixture) schedule(t *testing.T, kind, config string) string {
	t.Helper()
	var s fleet.Schedule
	if err := f.fleetCLI(t, &s, "schedules", "add", "--name", kind+"-mesh", "--kind", kind, "--config", config,
		"--from-label", "fleet=lab", "--to-label", "fleet=lab", "--both"); err != nil {
		t.Fatal(err)
	}
	return s.ID
}

// ended says whether a run's life is over.
func ended(r fleet.Run) bool {
	return slices.Contains([]fleet.RunState{fleet.RunFinished, fleet.RunFailed, fleet.RunMissed, fleet.RunCancelled}, r.State)
}

// waitRuns waits until the schedule has n runs, all ended, polling the
// controller through the CLI (errors while it is down are waited out).
func (f *fixture) waitRuns(t *testing.T, sched string, n int, within time.Duration) []fleet.Run {
	t.Helper()
	var runs []fleet.Run
	ok := pollEvery(within, time.Second, func() bool {
		var rs []fleet.Run
		if f.fleetCLI(t, &rs, "runs", "list", "--schedule", sched) != nil {
			return false
		}
		runs = rs
		return len(rs) == n && !slices.ContainsFunc(rs, func(r fleet.Run) bool { return !ended(r) })
	})
	if !ok {
		t.Fatalf("schedule %s: runs not all ended within %v: %s", sched, within, runsText(runs))
	}
	return runs
}

func runsText(rs []fleet.Run) string {
	s := ""
	for _, r := range rs {
		s += fmt.Sprintf("\n  %s %s→%s %s [%s, %s) %s", r.ID, r.Source, r.Dest, r.State, r.Start.Format("15:04:05.0"), r.End.Format("15:04:05.0"), r.Error)
	}
	return s
}

// results are the stored results of runs, by run ID.
func (f *fixture) results(t *testing.T, kind string) map[string]fleet.Result {
	t.Helper()
	var rs []fleet.Result
	if err := f.fleetCLI(t, &rs, "results", "list", "--kind", kind, "--limit", "1000"); err != nil {
		t.Fatal(err)
	}
	out := map[string]fleet.Result{}
	for _, r := range rs {
		if _, dup := out[r.RunID]; dup {
			t.Errorf("run %s has two results stored", r.RunID)
		}
		out[r.RunID] = r
	}
	return out
}

// goodput is a TCP flow's ideal goodput over Ethernet framing at the
// bottleneck's rate: 1448 payload bytes per 1538 on the wire.
func goodput(rateBps int64) float64 { return float64(rateBps) * 1448 / 1538 }

// within says whether got is within frac of want.
func within(got, want, frac float64) bool { return math.Abs(got-want) <= frac*want }

// dumpLogs prints, when the test failed (or FULLPIPE_FLEETLAB_LOGS is
// set), each process's lines about runs and its warnings and errors
// (the logs go with the test's directory).
func (f *fixture) dumpLogs(t *testing.T) {
	if !t.Failed() && os.Getenv("FULLPIPE_FLEETLAB_LOGS") == "" {
		return
	}
	logs, _ := filepath.Glob(filepath.Join(f.dir, "*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		var keep []string
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `"msg":"run`) || strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, `"level":"ERROR"`) || strings.Contains(line, `"msg":"result`) {
				keep = append(keep, line)
			}
		}
		if len(keep) > 80 {
			keep = keep[len(keep)-80:]
		}
		t.Logf("%s:\n%s", filepath.Base(l), strings.Join(keep, "\n"))
	}
}

// pollEvery is testkit.Poll for conditions that run the CLI: each call
// starts a process, and polling every 10 ms would load the CPU the lab's
// forwarder needs while the tests it times run.
func pollEvery(d, every time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); time.Sleep(every) { // real time: the controller and agents are other processes
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}
