package cli

import (
	"strings"
	"testing"

	"github.com/fullpipe/fullpipe/internal/lab"
)

// TestPrintLabStatsLabLimited: `fullpipe lab stats` says when the lab's
// forwarder was the limit, with its own counters, apart from the path's
// drops; a direction that kept up says nothing of it.
func TestPrintLabStatsLabLimited(t *testing.T) {
	var b strings.Builder
	printLabStats(&b, &lab.Stats{Name: "x",
		Up:   lab.DirectionStats{ReadDrops: 3, LatePackets: 7, LabLimited: true, WriterWakesLate: 4, WriterLockWaits: 1},
		Down: lab.DirectionStats{}})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "LAB-LIMITED") || !strings.Contains(lines[1], "3 reads dropped") ||
		!strings.Contains(lines[1], "7 packets > 1ms late") || strings.Contains(lines[2], "LAB-LIMITED") ||
		!strings.Contains(lines[1], "its writer held more than 500µs 4 times waking, 0 writing, 1 waiting for a reader") {
		t.Errorf("lab stats:\n%s", b.String())
	}
}
