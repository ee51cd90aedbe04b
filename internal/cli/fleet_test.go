package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// startController runs `fullpipe controller` on 127.0.0.1 (a free port)
// with its state in a temporary directory, and returns its URL, pin and
// admin token file once it listens.
func startController(t *testing.T) (url, pin, admin string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(bin, "controller", "--listen", "127.0.0.1:0", "--state-dir", dir, "--log-format", "json")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logs, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	found := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			var l struct{ Msg, Addr, Pin string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "controller listening" {
				found <- [2]string{l.Addr, l.Pin}
			}
		}
	}()
	select {
	case f := <-found:
		return "https://" + f[0], f[1], filepath.Join(dir, "admin.token")
	case <-time.After(10 * time.Second):
		t.Fatal("the controller did not log that it listens within 10 s")
	}
	return
}

// TestFleetCommands runs the fleet's verbs as an operator would, against
// a real controller process: enrol, list, issue a read token, refusals
// by role, by revocation and by a wrong pin (exit 3, one line), and a
// schedule refused before any call (exit 2).
func TestFleetCommands(t *testing.T) {
	url, pin, admin := startController(t)
	conn := []string{"--controller", url, "--pin", pin}
	fleetCmd := func(token string, args ...string) (int, string, string) {
		return runBin(t, append(append(append([]string{"fleet"}, args...), conn...), "--token-file", token)...)
	}
	code, out, errs := fleetCmd(admin, "agents", "enrol", "paris-1", "--note", "rack 4")
	if code != 0 || !strings.HasPrefix(out, "fp_") || errs != "" {
		t.Fatalf("enrol: exit %d, stdout %q, stderr %q; want the token on stdout", code, out, errs)
	}
	code, out, _ = fleetCmd(admin, "agents", "list", "-J")
	var as []fleet.Agent
	if code != 0 || json.Unmarshal([]byte(out), &as) != nil || len(as) != 1 || as[0].Name != "paris-1" || as[0].State != fleet.AgentNew {
		t.Fatalf("agents list -J: exit %d, %q; want paris-1, new", code, out)
	}
	if code, out, _ = fleetCmd(admin, "agents", "list"); code != 0 || !strings.Contains(out, "paris-1") || !strings.Contains(out, "new") {
		t.Errorf("agents list: exit %d, %q; want a table with paris-1, new", code, out)
	}
	code, out, _ = fleetCmd(admin, "tokens", "issue", "read", "-J")
	var read fleet.Issued
	if code != 0 || json.Unmarshal([]byte(out), &read) != nil || read.Role != fleet.RoleRead {
		t.Fatalf("tokens issue read: exit %d, %q", code, out)
	}
	readFile := filepath.Join(t.TempDir(), "read.token")
	if err := os.WriteFile(readFile, []byte(read.Secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := fleetCmd(readFile, "agents", "list"); code != 0 {
		t.Errorf("a read token listing agents: exit %d", code)
	}
	refused := func(what string, code int, out, errs string) {
		t.Helper()
		if code != ExitRefused || out != "" || strings.Count(errs, "\n") != 1 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 3 and one line", what, code, out, errs)
		}
	}
	code, out, errs = fleetCmd(readFile, "agents", "enrol", "lyon-1")
	refused("a read token enrolling", code, out, errs)
	if code, _, _ := fleetCmd(admin, "tokens", "revoke", read.ID); code != 0 {
		t.Errorf("tokens revoke: exit %d", code)
	}
	code, out, errs = fleetCmd(readFile, "agents", "list")
	refused("a revoked token", code, out, errs)
	code, out, errs = runBin(t, "fleet", "agents", "list", "--controller", url, "--pin", strings.Repeat("0", 64), "--token-file", admin)
	refused("a wrong pin", code, out, errs)
	code, out, errs = fleetCmd(admin, "schedules", "add", "--kind", "tcp", "--from", "paris-1", "--to", "lyon-1", "--config", `{"streams": 0.5}`)
	if code != ExitUsage || out != "" || !strings.Contains(errs, "tcp config") {
		t.Errorf("a bad config: exit %d, stdout %q, stderr %q; want exit 2 naming the config", code, out, errs)
	}

	// A schedule with thresholds, paused and resumed.
	code, out, errs = fleetCmd(admin, "schedules", "add", "--kind", "rtt", "--from", "paris-1", "--to", "lyon-1", "--repeat", "R/PT1H",
		"--start", "+1h", "--max-rtt", "50ms", "--max-loss", "1", "--min-throughput", "90M", "--fail-verdict", "-J")
	var sc fleet.Schedule
	want := fleet.Thresholds{MaxRTTMs: 50, MaxLossPct: 1, MinThroughputBps: 90e6, FailVerdict: true}
	if code != 0 || json.Unmarshal([]byte(out), &sc) != nil || sc.Thresholds == nil || *sc.Thresholds != want || !sc.Enabled {
		t.Fatalf("schedules add with thresholds: exit %d, %q, stderr %q; want enabled, thresholds %+v", code, out, errs, want)
	}
	for _, c := range []struct {
		verb    string
		enabled string
	}{{"pause", "false"}, {"resume", "true"}} {
		code, out, errs = fleetCmd(admin, "schedules", c.verb, sc.ID)
		if code != 0 || !strings.Contains(out, sc.ID) || !strings.Contains(out, c.enabled) {
			t.Errorf("schedules %s: exit %d, %q, stderr %q; want the schedule, enabled %s", c.verb, code, out, errs, c.enabled)
		}
	}
	if code, out, _ = fleetCmd(admin, "schedules", "show", sc.ID); code != 0 || !strings.Contains(out, `"max_rtt_ms":50`) {
		t.Errorf("schedules show: exit %d, %q; want its thresholds", code, out)
	}
	code, out, errs = fleetCmd(readFile, "schedules", "pause", sc.ID)
	refused("a revoked token pausing", code, out, errs)
}
