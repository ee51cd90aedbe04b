package agent

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// A scheduled stamp test reaches the agent with a key_file (an older
// controller's) or a key name that is a path: the run fails before
// anything is read or the controller is told (issue 22: key_file
// /dev/zero ran an agent out of memory). A key name is read from the
// agent's key dir only.
func TestExecuteSTAMPKey(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 2048), 0o600); err != nil {
		t.Fatal(err)
	}
	a := &Agent{cfg: Config{STAMPKeyDir: dir}}
	for _, c := range []struct{ name, config, want string }{
		{"key_file /dev/zero", `{"key_file": "/dev/zero"}`, "key_file"},
		{"key a path", `{"key": "/dev/zero"}`, "never a path"},
		{"key over the cap", `{"key": "big"}`, "more than 1024 bytes"},
		{"key missing", `{"key": "absent"}`, "no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRun(t.Context(), fleet.Assignment{Run: fleet.Run{ID: "s1", Test: fleet.Test{Kind: "stamp", Config: json.RawMessage(c.config)}}})
			up, keep := a.execute(r, slog.New(slog.DiscardHandler))
			if !keep || up.State != fleet.RunFailed || !strings.Contains(up.Error, c.want) {
				t.Errorf("upload %s %q (keep %v): want failed, saying %q", up.State, up.Error, keep, c.want)
			}
		})
	}
}
