package web

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/fleet/check"
)

// The schedule form refuses a stamp config that names a path, beside the
// config box, the field inside it named (issue 22).
func TestFormSTAMPKeyFile(t *testing.T) {
	f := form{Kind: "stamp", Config: `{"key_file": "/dev/zero"}`}
	s := fleet.Schedule{Name: "n", Test: fleet.Test{Kind: f.Kind, Config: json.RawMessage(f.Config)},
		From: fleet.Selector{Agents: []string{"a"}}, To: fleet.Selector{Agents: []string{"b"}}, Repeat: "R/PT1H"}
	_, err := check.Schedule(&s, time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC))
	errs := f.fieldErrors(err)
	if msg := errs["config"]; !strings.HasPrefix(msg, "key_file: ") || !strings.Contains(msg, "--stamp-key-dir") {
		t.Errorf("form errors %v: want the config's key_file named, and --stamp-key-dir", errs)
	}
}
