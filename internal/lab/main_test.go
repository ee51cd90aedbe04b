package lab

import (
	"fmt"
	"os"
	"testing"

	"github.com/fullpipe/fullpipe/internal/testkit"
)

// TestMain runs the lab tests at real-time priority when root (the lab,
// the testers it starts, what they start), so that other work on the
// machine does not take the cores from the emulated path
// (testkit.Realtime says why, with the figures).
func TestMain(m *testing.M) {
	if os.Geteuid() == 0 {
		if err := testkit.Realtime(); err != nil {
			fmt.Fprintf(os.Stderr, "lab tests: not real-time (%v): other work on this machine may hold the lab\n", err)
		}
	}
	os.Exit(m.Run())
}
