package fleetlab

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/lab"
	"github.com/fullpipe/fullpipe/internal/testkit"
)

var bin string

func TestMain(m *testing.M) { testkit.MainWithBinary(m, &bin) }

// proc is one fullpipe process in a site's namespace.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
}

// start runs `fullpipe ARGS` in site i's namespace (ip netns exec execs
// it, so the process is fullpipe itself), logging to DIR/NAME.log; it
// dies with the test binary (Pdeathsig).
func start(t *testing.T, s *lab.Sites, i int, dir, name string, args ...string) *proc {
	t.Helper()
	log, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", s.NetNS(i), bin}, args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, cmd: cmd, log: log, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.kill(); log.Close() })
	return p
}

// kill is kill -9, and waits for the process to be gone.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
}

// alive says whether the process still runs.
func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// fleetCLI runs `fullpipe fleet ARGS --json` in site i against the
// controller and decodes its output into out (nil: ignore it).
func (f *fixture) fleetCLI(t *testing.T, out any, args ...string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	full := append([]string{"netns", "exec", f.s.NetNS(0), bin, "fleet"}, args...)
	full = append(full, "--controller", f.url, "--pin", f.pin, "--token-file", f.admin, "--json")
	cmd := exec.CommandContext(ctx, "ip", full...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("fleet %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("fleet %s: %v in %q", strings.Join(args, " "), err, b)
		}
	}
	return nil
}
