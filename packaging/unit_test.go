// Package packaging holds files for installing fullpipe (the systemd unit)
// and the tests that keep them honest.
package packaging

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// unitOptions reads a systemd unit into section → key → values (a key may
// repeat), skipping comments.
func unitOptions(t *testing.T, path string) map[string]map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			out[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s: not KEY=VALUE inside a section: %q", path, line)
			}
			out[section][k] = append(out[section][k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestServiceSandbox: the shipped unit keeps the sandbox docs/serve.md
// promises: no capabilities, a dynamic user, a read-only system, IP
// sockets only, the service syscall set, bounded memory, tasks and files,
// results in the state directory.
func TestServiceSandbox(t *testing.T) {
	svc := unitOptions(t, "fullpipe-serve.service")["Service"]
	want := map[string]string{
		"DynamicUser":             "yes",
		"NoNewPrivileges":         "yes",
		"CapabilityBoundingSet":   "",
		"AmbientCapabilities":     "",
		"ProtectSystem":           "strict",
		"ProtectHome":             "yes",
		"PrivateTmp":              "yes",
		"PrivateDevices":          "yes",
		"RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
		"SystemCallFilter":        "@system-service",
		"SystemCallArchitectures": "native",
		"StateDirectory":          "fullpipe",
		"ProtectKernelModules":    "yes",
		"ProtectKernelTunables":   "yes",
		"RestrictNamespaces":      "yes",
		"MemoryDenyWriteExecute":  "yes",
		"LockPersonality":         "yes",
		"RestrictSUIDSGID":        "yes",
		"ProtectControlGroups":    "yes",
		"MemoryMax":               "1G",
		"TasksMax":                "512",
		"LimitNOFILE":             "65536",
	}
	for k, v := range want {
		got, ok := svc[k]
		if !ok {
			t.Errorf("Service.%s missing, want %q", k, v)
			continue
		}
		found := false
		for _, g := range got {
			found = found || g == v
		}
		if !found {
			t.Errorf("Service.%s = %q, want %q among them", k, got, v)
		}
	}
	execStart := strings.Join(svc["ExecStart"], " ")
	for _, arg := range []string{" serve ", "--results-dir ${STATE_DIRECTORY}", "--log-format json", "--max-conns 16384"} {
		if !strings.Contains(execStart, arg) {
			t.Errorf("ExecStart %q lacks %q", execStart, arg)
		}
	}
}

// TestServiceVerifies runs `systemd-analyze verify` on the unit, with
// ExecStart pointed at an executable that exists here (verify checks it).
func TestServiceVerifies(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed; TestServiceSandbox still checks the options")
	}
	b, err := os.ReadFile("fullpipe-serve.service")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(t.TempDir(), "fullpipe-serve.service")
	if err := os.WriteFile(unit, []byte(strings.ReplaceAll(string(b), "/usr/local/bin/fullpipe", self)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", unit).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
