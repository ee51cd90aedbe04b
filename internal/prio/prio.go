// Package prio asks the kernel to run a thread promptly when it wakes:
// a short scheduling slice, and for the lab's forwarder a higher
// priority.
//
// Linux's fair scheduler (EEVDF) lets the task it finds running finish
// its slice (0.75-3 ms by default) before a task that wakes beside it
// runs, unless the woken task asked for a shorter slice than the running
// one (Linux 6.12 and later: a slice per task, sched_setattr's
// sched_runtime). A thread that sends a train of packets a few µs apart,
// or forwards the lab's packets on their schedule, and waits that long
// for a core beside a busy loop, sends or forwards its packets
// milliseconds late. A short slice costs nothing in share: the thread
// runs as often as its weight allows, in shorter turns.
package prio

import (
	"time"

	"golang.org/x/sys/unix"
)

// Slice is the slice asked for: the kernel's least (0.1 ms).
const Slice = 100 * time.Microsecond

// Prompt gives thread tid (0: the calling thread) the short Slice,
// keeping its nice. Unprivileged threads may ask it; a kernel older than
// 6.12 ignores the slice.
func Prompt(tid int) error {
	return keepNice(tid, Slice)
}

// Relax gives thread tid back the kernel's default slice, keeping its
// nice: a thread of Go's pool that Prompt raised for one task.
func Relax(tid int) error {
	return keepNice(tid, 0)
}

// keepNice sets tid's slice (0: the default) at its nice, if it runs
// under a fair policy (a real-time thread has no slice to ask).
func keepNice(tid int, slice time.Duration) error {
	a, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return err
	}
	if a.Policy != unix.SCHED_NORMAL && a.Policy != unix.SCHED_BATCH {
		return nil
	}
	a.Runtime = uint64(slice)
	a.Flags = 0
	return unix.SchedSetAttr(tid, a, 0)
}

// Favour gives thread tid the short Slice at nice, or, where the kernel
// refuses the pair (without the privilege to lower nice, or before
// sched_setattr), nice alone; it returns the last error.
func Favour(tid int, nice int32) error {
	if set(tid, nice, Slice) == nil {
		return nil
	}
	return unix.Setpriority(unix.PRIO_PROCESS, tid, int(nice))
}

func set(tid int, nice int32, slice time.Duration) error {
	a := unix.SchedAttr{Policy: unix.SCHED_NORMAL, Nice: nice, Runtime: uint64(slice)}
	return unix.SchedSetAttr(tid, &a, 0)
}
