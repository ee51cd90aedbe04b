package method

import (
	"os"
	"testing"

	"github.com/fullpipe/fullpipe/internal/jsondoc"
	"github.com/fullpipe/fullpipe/internal/result"
)

func readDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestJSONDocumented: every key of the RFC 6349 result is in docs/json.md.
func TestJSONDocumented(t *testing.T) {
	for _, m := range jsondoc.Missing(readDoc(t), false, result.RFC6349{}) {
		t.Errorf("%s is not documented in docs/json.md", m)
	}
}

// TestSweepJSONDocumented: every key of the sweep results is in the
// sweep sections of docs/json.md (not merely somewhere in the file); the
// common keys of the embedded result.Meta are documented above them.
func TestSweepJSONDocumented(t *testing.T) {
	section := jsondoc.Section(readDoc(t), "## `sweep window`", "## Example")
	if section == "" {
		t.Fatal("docs/json.md has no sweep window section")
	}
	for _, m := range jsondoc.Missing(section, true, result.WindowSweep{}, result.WindowSweepConfig{}, result.MsgLenSweep{}, result.MsgLenSweepConfig{}) {
		t.Errorf("%s is not documented in the sweep sections of docs/json.md", m)
	}
}
