// Package cpuload measures how much CPU this process used and how long
// its threads waited for one, over an interval: the evidence that the
// tester's own host, not the network, held a test back.
//
// The figures come from /proc/self/task/*/schedstat (Linux, with
// CONFIG_SCHED_INFO): per thread, the time it ran and the time it was
// runnable but waiting on a run queue (the "run delay"), both in
// nanoseconds since the thread started. A thread that ends between two
// marks takes its share with it; Go's threads rarely end.
package cpuload

import (
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Mark is the process's cumulative counters at one moment, and those of
// the CPUs it may run on.
type Mark struct {
	At   time.Time
	Run  time.Duration // CPU time, all threads
	Wait time.Duration // time runnable but not running, all threads
	OK   bool          // false: schedstat is not readable here
	CPU  cpuTicks      // the CPUs in the process's affinity mask, summed
}

// cpuTicks is /proc/stat's time of a set of CPUs, in clock ticks.
type cpuTicks struct {
	busy, idle, steal uint64
	n                 int // CPUs summed
}

// Now reads the counters of every thread of this process.
func Now() Mark {
	m := Mark{At: time.Now(), CPU: readCPUs(affinity())}
	dir := "/proc/self/task"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return m
	}
	for _, e := range ents {
		b, err := os.ReadFile(dir + "/" + e.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended meanwhile
		}
		run, wait, ok := parse(string(b))
		if ok {
			m.Run += run
			m.Wait += wait
			m.OK = true
		}
	}
	return m
}

// parse reads "run_ns wait_ns timeslices".
func parse(s string) (run, wait time.Duration, ok bool) {
	f := strings.Fields(s)
	if len(f) < 2 {
		return 0, 0, false
	}
	r, err1 := strconv.ParseInt(f[0], 10, 64)
	w, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || r < 0 || w < 0 {
		return 0, 0, false
	}
	return time.Duration(r), time.Duration(w), true
}

// Load is a process's CPU use over an interval, in microseconds, and how
// busy the CPUs it may run on were. The process's percentages are of the
// interval's wall time: CPU may exceed 100 with more than one thread
// busy, and so may Wait with more than one waiting (for each other, too:
// threads of one process on one CPU wait in turn). The CPUs' are of their
// time: busy (anything but idle and iowait, steal included) and steal
// (taken by a hypervisor), over all of them; /proc/stat counts in ticks
// (10 ms), so over short intervals these are coarse.
type Load struct {
	ElapsedUs   int64   `json:"elapsed_us"`
	CPUUs       int64   `json:"cpu_us"`  // CPU time used, all threads
	WaitUs      int64   `json:"wait_us"` // time threads were runnable but waited for a CPU
	CPUPct      float64 `json:"cpu_pct"`
	WaitPct     float64 `json:"wait_pct"`
	CPUs        int     `json:"cpus"`          // CPUs this process may run on
	CPUsBusyPct float64 `json:"cpus_busy_pct"` // how busy they were, by anyone
	StealPct    float64 `json:"steal_pct"`     // of their time, taken by a hypervisor
}

// Since is the load from m to now; nil when schedstat is not readable.
func (m Mark) Since() *Load { return Between(m, Now()) }

// Between is the load from a to b; nil when either is unreadable or b is
// not after a.
func Between(a, b Mark) *Load {
	el := b.At.Sub(a.At)
	if !a.OK || !b.OK || el <= 0 {
		return nil
	}
	l := &Load{ElapsedUs: el.Microseconds(), CPUUs: max(b.Run-a.Run, 0).Microseconds(), WaitUs: max(b.Wait-a.Wait, 0).Microseconds(), CPUs: b.CPU.n}
	l.CPUPct = float64(l.CPUUs) / float64(l.ElapsedUs) * 100
	l.WaitPct = float64(l.WaitUs) / float64(l.ElapsedUs) * 100
	if b.CPU.n == a.CPU.n && b.CPU.busy >= a.CPU.busy && b.CPU.idle >= a.CPU.idle && b.CPU.steal >= a.CPU.steal {
		busy, idle, steal := b.CPU.busy-a.CPU.busy, b.CPU.idle-a.CPU.idle, b.CPU.steal-a.CPU.steal
		if all := busy + idle; all > 0 {
			l.CPUsBusyPct = float64(busy) / float64(all) * 100
			l.StealPct = float64(steal) / float64(all) * 100
		}
	}
	return l
}

// affinity is the set of CPUs this process may run on (its main
// thread's: taskset sets every thread's); nil if unknown.
func affinity() *unix.CPUSet {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(os.Getpid(), &set); err != nil {
		return nil
	}
	return &set
}

// readCPUs sums /proc/stat's lines of the CPUs in set (all when nil).
func readCPUs(set *unix.CPUSet) cpuTicks {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTicks{}
	}
	return parseStat(string(b), set)
}

// parseStat sums the "cpuN user nice system idle iowait irq softirq steal
// ..." lines of the CPUs in set: idle and iowait are idle, the rest busy.
func parseStat(s string, set *unix.CPUSet) cpuTicks {
	var t cpuTicks
	for line := range strings.Lines(s) {
		f := strings.Fields(line)
		if len(f) < 9 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(f[0][3:])
		if err != nil || set != nil && (n >= 1024 || !set.IsSet(n)) {
			continue
		}
		var v [8]uint64
		for i := range v {
			v[i], _ = strconv.ParseUint(f[i+1], 10, 64)
		}
		t.idle += v[3] + v[4]
		t.busy += v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
		t.steal += v[7]
		t.n++
	}
	return t
}
