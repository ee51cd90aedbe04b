package flow

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// pacedSlice is the scheduling slice a pacing thread asks for: the
// kernel's least (0.1 ms).
const pacedSlice = 100 * time.Microsecond

// lockPaced locks the calling goroutine to its OS thread for a sender
// that paces itself in nanosleep, and asks the kernel for a slice of
// pacedSlice for that thread (Linux 6.12 and later take a slice per
// task, any user may shorten its own; older kernels ignore it). The
// scheduler (EEVDF) lets a task it finds running finish its slice (about
// 3 ms) before one that wakes with the same weight, unless the woken
// one's slice is shorter. Measured on this 2-vCPU machine with a nice 0
// thread napping 200 µs at a time beside a busy loop on its CPU (5 s
// each; `bench/wakeup -from 0 -slice 100us` beside `taskset -c 0 sh -c
// 'while :; do :; done'`): with the default slice 1,250 of 7,408 wakes
// came more than 500 µs late (p99 3.2 ms), with this one 11 of 23,633
// (p99 29 µs), and as user nobody 6 of 23,574. Whether a whole train
// then keeps its pace beside a busy core is not shown yet (the lab's
// trains tests there are held up by the lab itself). The slice keeps
// the weight's share of the CPU: a starved sender (nice 19 beside a busy
// loop) is still starved. The returned func puts the default slice back
// and unlocks the thread.
func lockPaced() (unlock func()) {
	runtime.LockOSThread()
	old, err := unix.SchedGetAttr(0, 0)
	if err != nil || old.Policy != unix.SCHED_NORMAL {
		return runtime.UnlockOSThread
	}
	a := *old
	a.Flags &= unix.SCHED_FLAG_RESET_ON_FORK // not the clamps get reports
	a.Runtime = uint64(pacedSlice)
	if unix.SchedSetAttr(0, &a, 0) != nil {
		return runtime.UnlockOSThread
	}
	return func() {
		a.Runtime = 0 // the default slice again
		_ = unix.SchedSetAttr(0, &a, 0)
		runtime.UnlockOSThread()
	}
}
