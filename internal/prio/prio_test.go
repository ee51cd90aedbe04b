package prio

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPromptRelax: Prompt gives the calling thread the short slice at
// its nice, Relax the kernel's default back, also without privilege.
func TestPromptRelax(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Skipf("no sched_getattr: %v", err)
	}
	if err := Prompt(0); err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	a, _ := unix.SchedGetAttr(0, 0)
	t.Logf("slice before %d ns, prompted %d ns, nice %d → %d", before.Runtime, a.Runtime, before.Nice, a.Nice)
	if a.Runtime == 0 {
		t.Skip("this kernel reports no slice (before Linux 6.12)")
	}
	if a.Runtime != uint64(Slice) || a.Nice != before.Nice {
		t.Errorf("prompted: slice %d ns nice %d, want %d ns at nice %d", a.Runtime, a.Nice, Slice, before.Nice)
	}
	if err := Relax(0); err != nil {
		t.Fatalf("Relax: %v", err)
	}
	if a, _ = unix.SchedGetAttr(0, 0); a.Runtime != before.Runtime || a.Nice != before.Nice {
		t.Errorf("relaxed: slice %d ns nice %d, want %d ns at nice %d", a.Runtime, a.Nice, before.Runtime, before.Nice)
	}
}
