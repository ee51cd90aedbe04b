package agent

// The agent as a process of its own: the test binary re-runs itself
// with childEnv set as an agent talking to the test's controller over
// HTTPS, so that it can be killed with SIGKILL like a real one.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/fleet/client"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/testkit"
)

const childEnv = "FULLPIPE_AGENT_CHILD" // the child's childConfig as JSON

func TestMain(m *testing.M) {
	if arg := os.Getenv(childEnv); arg != "" {
		os.Exit(childMain(arg))
	}
	os.Exit(m.Run())
}

// childConfig is what an agent child runs with.
type childConfig struct {
	URL, Pin, Token, Name, SpoolDir string
}

// childMain runs an agent until its stdin closes (or it is killed),
// logging to stderr.
func childMain(arg string) int {
	var cc childConfig
	if err := json.Unmarshal([]byte(arg), &cc); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	c, err := client.New(cc.URL, cc.Token, client.Options{Pin: cc.Pin, Timeout: 2 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	a, err := New(Config{Controller: c, Name: cc.Name, SpoolDir: cc.SpoolDir, Listen: "127.0.0.1:0",
		Backoff: Backoff{Min: 50 * time.Millisecond, Max: 200 * time.Millisecond}, EventEvery: 200 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); cancel() }()
	if err := a.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// agentProc is an agent child.
type agentProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	exit  chan error
	log   *testkit.Buffer // its stderr
}

// startAgentProc runs an agent child with cc; at the test's end it is
// asked to stop (stdin closed), then killed after 10 s.
func startAgentProc(t *testing.T, cc childConfig, log *testkit.Buffer) *agentProc {
	t.Helper()
	b, _ := json.Marshal(cc)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(b))
	cmd.Stderr = log
	p := &agentProc{cmd: cmd, exit: make(chan error, 1), log: log}
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exit <- cmd.Wait() }()
	t.Cleanup(func() {
		p.stdin.Close()
		select {
		case <-p.exit:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-p.exit
			t.Error("the agent process did not stop within 10 s of its stdin closing")
		}
	})
	return p
}

// kill sends SIGKILL and waits for the process to end.
func (p *agentProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exit:
		p.exit <- err // for the cleanup
		if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("the agent process ended with %v, want killed by SIGKILL", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the agent process outlived SIGKILL by 5 s")
	}
}

// TestKill9AfterRun: an agent process finishes a run while its
// controller is down, spools the result, and is killed with SIGKILL
// before it could upload it. Started again (the controller back on the
// same address and store), it uploads the result, which is stored
// exactly once, and its spool is left empty.
func TestKill9AfterRun(t *testing.T) {
	f := newTestFleet(t)
	f.agent("dst", Config{})
	spool := t.TempDir()
	cc := childConfig{URL: "https://" + f.addr, Pin: f.pin, Token: f.enrol("src"), Name: "src", SpoolDir: spool}
	var log1, log2 testkit.Buffer
	first := startAgentProc(t, cc, &log1)
	if !testkit.Poll(15*time.Second, func() bool {
		a, err := f.db.Agent(context.Background(), "src")
		return err == nil && !a.Registered.IsZero()
	}) {
		t.Fatalf("the agent process did not register:\n%s", log1.String())
	}
	run := f.book("src", "dst", tcpTest(2*time.Second), true, time.Now().Add(time.Second), 30*time.Second)
	f.waitRun(run.ID, 15*time.Second, fleet.RunRunning)
	f.halt() // the controller goes away mid-run
	file := filepath.Join(spool, "spool", fileName(run.ID))
	if !testkit.Poll(15*time.Second, func() bool { _, err := os.Stat(file); return err == nil }) {
		t.Fatalf("the run's result was not spooled:\n%s", log1.String())
	}
	first.kill(t)
	if strings.Contains(log1.String(), "result uploaded") {
		t.Fatal("the first process uploaded: the controller was not down")
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("the spooled result did not survive SIGKILL: %v", err)
	}
	f.start() // the controller is back, on the same address, store and certificate
	restart := time.Now()
	startAgentProc(t, cc, &log2)
	res := f.waitResult(run.ID, 20*time.Second)
	t.Logf("the restarted process's upload stored %v after its start", time.Since(restart).Round(time.Millisecond))
	if tcp, ok := checkDoc(t, res.Doc).(*result.TCP); !ok || tcp.Summary.Partial {
		t.Errorf("want the complete TCP document of the run")
	}
	if r := f.waitRun(run.ID, 5*time.Second, fleet.RunFinished); r.Error != "" {
		t.Errorf("run finished with error %q", r.Error)
	}
	if !testkit.Poll(5*time.Second, func() bool { return len(spoolFiles(t, filepath.Join(spool, "spool"))) == 0 }) {
		t.Errorf("the spool still holds %v", spoolFiles(t, filepath.Join(spool, "spool")))
	}
	results, err := f.db.Results(f.ctx(), fleet.ResultFilter{Source: "src"})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(log2.String(), "result uploaded"); len(results) != 1 || n != 1 {
		t.Errorf("%d results stored, %d uploads acknowledged: want exactly one", len(results), n)
	}
}
