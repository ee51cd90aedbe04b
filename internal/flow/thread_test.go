package flow

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLockPaced: while paced, the thread's slice is pacedSlice; after,
// the kernel's default again (what the thread had before), and its nice
// is untouched throughout.
func TestLockPaced(t *testing.T) {
	runtime.LockOSThread() // the same thread before, during and after
	defer runtime.UnlockOSThread()
	before, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Skipf("sched_getattr: %v", err)
	}
	unlock := lockPaced()
	during, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	after, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(during.Runtime) != pacedSlice {
		if during.Runtime == before.Runtime {
			t.Skipf("this kernel reports no per-task slice (%d ns before and during): Linux 6.12 or later", before.Runtime)
		}
		t.Errorf("slice while paced %v, want %v", time.Duration(during.Runtime), pacedSlice)
	}
	if after.Runtime != before.Runtime {
		t.Errorf("slice after %v, want the %v it had before", time.Duration(after.Runtime), time.Duration(before.Runtime))
	}
	if during.Nice != before.Nice || after.Nice != before.Nice {
		t.Errorf("nice %d, %d, %d before, during, after: want it untouched", before.Nice, during.Nice, after.Nice)
	}
}
