// Package labtest runs measurements across a lab from tests of other
// packages under the lab's contract: a measurement counts only when the
// lab held its path over it (lab.Holder). The lab package's own tests
// have the same helper inside (they cannot import this package).
package labtest

import (
	"context"
	"fmt"
	"testing"

	"github.com/fullpipe/fullpipe/internal/lab"
)

// Held runs measure until the lab held its path over a run of it for
// budget b (lab.Holder: at most 3 runs, 5 s apart), logs the lab's
// account of that run and returns it. A test that never gets a held run
// fails with the lab's own figures; it judges physics only after Held
// returns. measure may fail the test itself for what is not the lab's.
func Held(t testing.TB, m lab.Marker, b lab.Budget, measure func(try int)) lab.Account {
	t.Helper()
	logf := func(f string, args ...any) {
		t.Logf(f, args...)
		lab.NoteHeld(t.Name() + ": " + fmt.Sprintf(f, args...))
	}
	a, err := lab.Holder{Lab: m, Budget: b, Logf: logf}.Run(context.Background(), func(try int) error { measure(try); return nil })
	if err != nil {
		lab.NoteHeld(t.Name() + ": never held")
		t.Fatal(err)
	}
	logf("held: %s", a.Summary(b))
	return a
}
