package cli

import (
	"strings"
	"testing"

	"github.com/fullpipe/fullpipe/internal/kinds"
)

// TestCommandPerKind: every kind of the table has a command at its
// document's test name ("sweep window" is `fullpipe sweep window`), so a
// kind added to the table without a command fails here.
func TestCommandPerKind(t *testing.T) {
	for _, k := range kinds.All() {
		specs, found := table(), false
		for _, word := range strings.Fields(k.Test) {
			found = false
			for _, s := range specs {
				if s.name == word {
					specs, found = s.sub, true
					break
				}
			}
			if !found {
				break
			}
		}
		if !found {
			t.Errorf("no command `fullpipe %s` for the kind %s", k.Test, k.File)
		}
	}
}
