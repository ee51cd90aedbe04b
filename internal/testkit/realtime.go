package testkit

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// The lab stands for network hardware, which does not wait for a core,
// and a lab test proves what a measurement reads of the path the lab
// emulated: the forwarder, the sender and the receiver must each run
// when they wake. Beside other work on the machine (a build, a busy
// loop: the README's test command on a user's machine) the kernel's
// fair scheduler shares the cores by weight, and a busy loop keeps its
// core through a lab test's wake-ups. Measured on this 2-vCPU machine
// beside `sh -c 'while :; do :; done'` (CI runs 40, 44, and again by
// hand): TestRFC6349PolicedShaped's sender was held 227-909 µs in every
// one of 5 tries (HOST-LIMITED), TestRFC6349TinyBucket's lab did not
// hold its trains; a cgroup of the largest CPU weight (cpu.shares
// 262,144) changed nothing (held 572-680 µs). Run at real-time priority
// (SCHED_RR, the lowest), both held on their first try and read their
// truth (policer 103.7 Mbit/s for 102.5, 120.9 for 120).
//
// Real-time threads run before every ordinary one, so what the tests
// make of their own to load the machine (TestRFC6349HostStarved's busy
// loop and its starved tester) must run as ordinary tasks (Ordinary),
// and so must builds. The kernel keeps 5 % of each core for ordinary
// tasks (sched_rt_runtime_us), so a real-time thread that spun for
// good would slow the machine, not stop it; the lab's writer, the one
// thread that spins, sets itself back to the ordinary policy (favour).

// Realtime moves every thread of this process to SCHED_RR at the lowest
// real-time priority; threads the Go runtime starts later and the
// processes it starts inherit it. It needs root (CAP_SYS_NICE); without
// it, or when the kernel refuses, it returns the error and changes
// nothing more: the tests then run as ordinary tasks, as before.
func Realtime() error {
	p := unix.SchedAttr{Policy: unix.SCHED_RR, Priority: 1}
	for range 2 { // a thread started meanwhile by one not yet moved
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if err := unix.SchedSetAttr(tid, &p, 0); err != nil {
				return err
			}
		}
	}
	realtime = true
	return nil
}

var realtime bool

// Ordinary is argv run as an ordinary task (SCHED_OTHER) when this
// process is real-time (Realtime), else argv: for the load a test makes
// on purpose, and for builds.
func Ordinary(argv ...string) []string {
	if !realtime {
		return argv
	}
	return append([]string{"chrt", "--other", "0"}, argv...)
}
