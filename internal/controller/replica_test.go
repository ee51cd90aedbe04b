package controller

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/fleet/client"
	"github.com/fullpipe/fullpipe/internal/kinds"
	"github.com/fullpipe/fullpipe/internal/store"
	"github.com/fullpipe/fullpipe/internal/testkit/pgtest"
)

// The test binary is also a controller replica: TestMain runs one when
// replicaEnv names its database, instead of the tests.
const (
	replicaEnv      = "FULLPIPE_TEST_REPLICA_DSN"
	replicaStateEnv = "FULLPIPE_TEST_REPLICA_STATE"
	replicaLogEnv   = "FULLPIPE_TEST_REPLICA_LOG"
)

func TestMain(m *testing.M) {
	if dsn := os.Getenv(replicaEnv); dsn != "" {
		os.Exit(runReplica(dsn))
	}
	if spec := os.Getenv(attackEnv); spec != "" {
		os.Exit(runAttacker(spec))
	}
	os.Exit(m.Run())
}

// replicaHello is the line a replica prints when it serves.
type replicaHello struct {
	URL, Pin, Holder string
}

// runReplica serves a controller on dsn until SIGTERM: the scheduler's
// lease at its defaults (10 s, renewed every 3 s), 1 s heartbeats,
// occurrences booked 30 s ahead.
func runReplica(dsn string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	logf, err := os.Create(os.Getenv(replicaLogEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer logf.Close()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Close()
	c, err := New(Config{Listen: "127.0.0.1:0", Store: st, StateDir: os.Getenv(replicaStateEnv),
		HeartbeatInterval: time.Second, Lookahead: 30 * time.Second,
		Log: slog.New(slog.NewJSONHandler(logf, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	json.NewEncoder(os.Stdout).Encode(replicaHello{URL: c.URL(), Pin: c.Pin(), Holder: c.cfg.Holder})
	if err := c.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// replica is a controller in a process of its own.
type replica struct {
	cmd   *exec.Cmd
	hello replicaHello
	state string // its StateDir
	log   string // its log file
}

// startReplica runs the test binary as a controller on dsn, killed when
// the test ends (and, by Pdeathsig, when the test binary dies).
func startReplica(t *testing.T, dsn string) *replica {
	t.Helper()
	r := &replica{state: t.TempDir()}
	r.log = filepath.Join(r.state, "controller.log")
	r.cmd = exec.Command(os.Args[0])
	r.cmd.Env = append(os.Environ(), replicaEnv+"="+dsn, replicaStateEnv+"="+r.state, replicaLogEnv+"="+r.log)
	r.cmd.Stderr = os.Stderr
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		r.cmd.Wait()
		if t.Failed() {
			b, err := os.ReadFile(r.log)
			t.Logf("replica %s log (%v):\n%s", r.hello.Holder, err, tail(string(b), 40))
		}
	})
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		if s.Scan() {
			line <- s.Text()
		}
		close(line)
	}()
	select {
	case l, ok := <-line:
		if !ok || json.Unmarshal([]byte(l), &r.hello) != nil {
			t.Fatalf("replica did not start: %q", l)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("replica did not start within 30 s")
	}
	return r
}

// client is a client of the replica with token.
func (r *replica) client(t *testing.T, token string) *client.Client {
	t.Helper()
	cl, err := client.New(r.hello.URL, token, client.Options{Pin: r.hello.Pin, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// scheduling says whether the replica's /healthz says it holds the
// scheduler's lease; false when it does not answer.
func (r *replica) scheduling(t *testing.T) bool {
	cl := r.client(t, "")
	b, err := cl.Raw(ctx(t), "/healthz")
	var h Health
	return err == nil && json.Unmarshal(b, &h) == nil && h.Scheduler
}

// adminToken is the bootstrap admin token the first replica wrote.
func (r *replica) adminToken(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.state, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// fleetAgents are two agents' clients on each replica.
type fleetAgents map[string][2]*client.Client

// enrolPair enrols and registers agents a and b (a through the second
// replica) and keeps them heartbeating every second, to whichever
// replica answers, until the test ends.
func enrolPair(t *testing.T, admin *client.Client, rs [2]*replica) fleetAgents {
	t.Helper()
	ag := fleetAgents{}
	for i, name := range []string{"a", "b"} {
		is, err := admin.Enrol(ctx(t), fleet.Enrolment{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		ag[name] = [2]*client.Client{rs[0].client(t, is.Secret), rs[1].client(t, is.Secret)}
		_, err = ag[name][1-i].Register(ctx(t), fleet.Registration{Name: name, Version: "test", Capabilities: kinds.Names(),
			Addresses: []string{"127.0.0.1:5201"}})
		if err != nil {
			t.Fatal(err)
		}
	}
	hctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for hctx.Err() == nil {
			for _, cs := range ag {
				if _, err := cs[0].Heartbeat(hctx, fleet.Heartbeat{}); err != nil {
					cs[1].Heartbeat(hctx, fleet.Heartbeat{})
				}
			}
			select {
			case <-hctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ag
}

// whichActive waits until exactly one replica schedules, checks it stays
// so for 2 s (sampled every 100 ms), and returns its index.
func whichActive(t *testing.T, rs [2]*replica) int {
	t.Helper()
	active := -1
	poll(20*time.Second, func() bool {
		s0, s1 := rs[0].scheduling(t), rs[1].scheduling(t)
		if s0 && s1 {
			t.Fatal("both replicas schedule")
		}
		active = map[bool]int{true: 0, false: 1}[s0]
		return s0 || s1
	})
	for range 20 {
		if s0, s1 := rs[0].scheduling(t), rs[1].scheduling(t); s0 == s1 || s0 != (active == 0) {
			t.Fatalf("scheduling replicas changed or doubled: %v %v (active was %d)", s0, s1, active)
		}
		time.Sleep(100 * time.Millisecond) // real time: samples two controller processes' lease on a real PostgreSQL across their real renewals
	}
	return active
}

// TestScaleOut: two controller processes on one PostgreSQL. Exactly one
// schedules; the same upload sent to both at once is stored once;
// kill -9 of the active one mid-way through uploads loses no
// acknowledged result (the rest are retried on the other); the other
// takes the scheduler over within the lease's TTL plus a renewal; no
// occurrence is booked twice across the handover.
func TestScaleOut(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two controller processes for about 30 s")
	}
	dsn := pgtest.Start(t)
	rs := [2]*replica{startReplica(t, dsn), nil}
	rs[1] = startReplica(t, dsn)
	if _, err := os.Stat(filepath.Join(rs[1].state, "admin.token")); err == nil {
		t.Error("the second replica issued a second bootstrap admin token")
	}
	admin := rs[0].client(t, rs[0].adminToken(t))
	ag := enrolPair(t, admin, rs)
	active := whichActive(t, rs)
	standby := 1 - active
	sc := fleet.Schedule{Name: "rtt both ways", Test: fleet.Test{Kind: "rtt"}, Repeat: "R/PT2S",
		From: fleet.Selector{Agents: []string{"a"}}, To: fleet.Selector{Agents: []string{"b"}}, Both: true}
	sc, err := rs[standby].client(t, rs[0].adminToken(t)).CreateSchedule(ctx(t), sc)
	if err != nil {
		t.Fatal(err)
	}
	runs := waitBooked(t, admin, sc.ID, 12)
	if n := booked(t, rs[standby].client(t, rs[0].adminToken(t))); n != "0" {
		t.Errorf("the standby replica booked %v runs", n)
	}
	uploadToBoth(t, ag, runs[0])
	took := killMidUpload(t, rs, active, ag, runs[1:11])
	t.Logf("takeover after kill -9 of the active replica: %v", took)
	if took > 14*time.Second {
		t.Errorf("takeover took %v, want within the lease's 10 s TTL plus a 3 s renewal", took)
	}
	time.Sleep(4 * time.Second) // real time: the new scheduler, another process on a real PostgreSQL, books on (two more R/PT2S occurrences)
	checkOnce(t, rs[standby].client(t, rs[0].adminToken(t)), sc)
}

// waitBooked waits for n runs of the schedule and returns them, oldest
// slot first.
func waitBooked(t *testing.T, cl *client.Client, schedule string, n int) []fleet.Run {
	t.Helper()
	var runs []fleet.Run
	if !poll(20*time.Second, func() bool {
		runs, _ = cl.Runs(ctx(t), fleet.RunFilter{Schedule: schedule, Limit: 1000})
		return len(runs) >= n
	}) {
		t.Fatalf("%d runs booked within 20 s, want %d", len(runs), n)
	}
	slicesReverse(runs)
	return runs
}

func slicesReverse[T any](s []T) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// rttDoc is a real rtt document.
func rttDoc(t *testing.T) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile("../result/testdata/rtt.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// uploadToBoth sends one run's upload to both replicas at once: both
// answer 200, exactly one stored it.
func uploadToBoth(t *testing.T, ag fleetAgents, run fleet.Run) {
	t.Helper()
	up := fleet.Upload{State: fleet.RunFinished, Doc: rttDoc(t)}
	type answer struct {
		stored bool
		err    error
	}
	ch := make(chan answer, 2)
	for i := range 2 {
		go func() {
			s, err := ag[run.Source][i].Upload(ctx(t), run.ID, up)
			ch <- answer{s, err}
		}()
	}
	n := 0
	for range 2 {
		a := <-ch
		if a.err != nil {
			t.Fatalf("upload to both: %v", a.err)
		}
		if a.stored {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the same upload to both replicas was stored %d times, want once", n)
	}
}

// killMidUpload uploads runs' results through the active replica and
// kill -9s it after the third is acknowledged; what was not
// acknowledged is retried on the other. Every run then has its result,
// stored once. It returns how long the other took to schedule after the
// kill.
func killMidUpload(t *testing.T, rs [2]*replica, active int, ag fleetAgents, runs []fleet.Run) time.Duration {
	t.Helper()
	up := fleet.Upload{State: fleet.RunFinished, Doc: rttDoc(t)}
	var killed time.Time
	acked := 0
	for i, run := range runs {
		stored, err := ag[run.Source][active].Upload(ctx(t), run.ID, up)
		if err == nil {
			acked++
			if !stored {
				t.Errorf("run %s: a first upload not stored", run.ID)
			}
		} else if _, err := ag[run.Source][1-active].Upload(ctx(t), run.ID, up); err != nil {
			t.Fatalf("run %s: retry on the other replica: %v", run.ID, err)
		}
		if i == 2 {
			if err := rs[active].cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = time.Now()
		}
	}
	var took time.Duration
	if !poll(30*time.Second, func() bool { took = time.Since(killed); return rs[1-active].scheduling(t) }) {
		t.Fatal("the other replica did not take the scheduler over within 30 s")
	}
	t.Logf("%d uploads acknowledged by the replica killed after the third, %d by the other", acked, len(runs)-acked)
	cl := rs[1-active].client(t, rs[0].adminToken(t))
	for _, run := range runs {
		res, err := cl.Result(ctx(t), run.ID)
		got, err2 := cl.Run(ctx(t), run.ID)
		if err != nil || err2 != nil || res.RunID != run.ID || got.State != fleet.RunFinished {
			t.Errorf("run %s after the kill: result %v, state %s %v", run.ID, err, got.State, err2)
		}
	}
	return took
}

// checkOnce: every occurrence claimed so far has its two runs, each
// once, across the kill -9 and the handover: two runs per occurrence,
// and no (source, dest, occurrence) twice. Runs of the occurrence not
// yet claimed when the schedule was read (booked, the claim next) are
// not counted.
func checkOnce(t *testing.T, cl *client.Client, sc fleet.Schedule) {
	t.Helper()
	now, err := cl.Schedule(ctx(t), sc.ID)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := cl.Runs(ctx(t), fleet.RunFilter{Schedule: sc.ID, Limit: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	n := 0
	for _, r := range runs {
		if !r.Occurrence.Before(now.NextDue) {
			continue // booked after the schedule was read, not yet claimed
		}
		k := r.Source + "→" + r.Dest + "@" + r.Occurrence.Format(time.RFC3339Nano)
		if seen[k] {
			t.Errorf("run %s booked twice", k)
		}
		seen[k] = true
		n++
	}
	occurrences := int(now.NextDue.Sub(sc.NextDue) / (2 * time.Second))
	t.Logf("%d occurrences claimed, %d of their runs booked", occurrences, n)
	if n != 2*occurrences {
		t.Errorf("%d runs for %d occurrences of a pair both ways: want %d", n, occurrences, 2*occurrences)
	}
}

// booked is the replica's fullpipe_runs_booked_total.
func booked(t *testing.T, cl *client.Client) string {
	t.Helper()
	m, err := cl.Raw(ctx(t), "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(m), "\n") {
		if v, ok := strings.CutPrefix(l, "fullpipe_runs_booked_total "); ok {
			return v
		}
	}
	t.Fatal("no fullpipe_runs_booked_total in /metrics")
	return ""
}
