// Command wakeup measures how soon this host runs a thread that was
// woken, the figure that decides whether the lab can hold a path here
// (docs/lab.md, Capacity): a timer wake-up on the thread's own CPU
// (nanosleep of -sleep, the way the lab's writer waits for a departure),
// and a wake-up sent from another CPU (a pipe write every -gap to a
// thread blocked in read on CPU -to, the way a reader wakes the writer
// or a packet wakes an endpoint). The sleeper can ask for a nice value
// and a scheduling slice (Linux 6.12 and later) as the lab's writer and
// the testers' pacing threads do. Run it quiet, then beside a busy loop
// (`sh -c 'while :; do :; done'`) to see what a busy core does to each.
// It is a benchmark, not a test; nice below 0 needs root.
//
//	go build -o /tmp/wakeup ./bench/wakeup && /tmp/wakeup -n 5000
//	/tmp/wakeup -nice -10 -slice 100us -from 0 -to 0
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	n := flag.Int("n", 5000, "wake-ups per measurement")
	sleep := flag.Duration("sleep", 200*time.Microsecond, "the timer measurement's nanosleep")
	gap := flag.Duration("gap", time.Millisecond, "the cross-CPU measurement's time between wake-ups (the sleeper goes idle between)")
	from := flag.Int("from", 0, "CPU of the waker (cross-CPU) and of the timer sleeper")
	to := flag.Int("to", 1, "CPU of the woken thread (cross-CPU)")
	nice := flag.Int("nice", 0, "the sleeper's nice value")
	slice := flag.Duration("slice", 0, "the sleeper's scheduling slice (0: the kernel's default)")
	late := flag.Duration("late", 500*time.Microsecond, "a wake-up later than this is counted")
	flag.Parse()
	if *to >= runtime.NumCPU() || *from >= runtime.NumCPU() {
		fmt.Fprintf(os.Stderr, "wakeup: this host has %d CPUs\n", runtime.NumCPU())
		os.Exit(2)
	}
	fmt.Printf("host: %d CPUs; sleeper nice %d, slice %v\n", runtime.NumCPU(), *nice, *slice)
	a := unix.SchedAttr{Policy: unix.SCHED_NORMAL, Nice: int32(*nice), Runtime: uint64(*slice)}
	report("timer wake-up, own CPU", timer(*n, *from, *sleep, &a), *late)
	report("pipe wake-up from another CPU", cross(*n, *from, *to, *gap, &a), *late)
}

// sleeper gives the calling thread a's nice and slice.
func sleeper(a *unix.SchedAttr) {
	if err := unix.SchedSetAttr(0, a, 0); err != nil {
		fmt.Fprintf(os.Stderr, "wakeup: sleeper's nice or slice: %v\n", err)
	}
}

// pin locks the calling goroutine to its thread and the thread to cpu.
func pin(cpu int) {
	runtime.LockOSThread()
	var s unix.CPUSet
	s.Set(cpu)
	if err := unix.SchedSetaffinity(0, &s); err != nil {
		fmt.Fprintf(os.Stderr, "wakeup: pin to CPU %d: %v\n", cpu, err)
		os.Exit(1)
	}
}

// timer is how late each of n nanosleeps of d returned, on cpu.
func timer(n, cpu int, d time.Duration, a *unix.SchedAttr) []time.Duration {
	out := make(chan []time.Duration)
	go func() {
		pin(cpu)
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
		sleeper(a)
		lat := make([]time.Duration, 0, n)
		ts := unix.NsecToTimespec(int64(d))
		for range n {
			t0 := time.Now()
			_ = unix.Nanosleep(&ts, nil)
			lat = append(lat, time.Since(t0)-d)
		}
		out <- lat
	}()
	return <-out
}

// cross is how long each of n pipe writes on CPU from took to run the
// reader blocked on CPU to.
func cross(n, from, to int, gap time.Duration, a *unix.SchedAttr) []time.Duration {
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		fmt.Fprintln(os.Stderr, "wakeup:", err)
		os.Exit(1)
	}
	start := time.Now()
	out := make(chan []time.Duration)
	go func() {
		pin(to)
		sleeper(a)
		defer unix.Close(p[0])
		lat := make([]time.Duration, 0, n)
		b := make([]byte, 8)
		for {
			if k, _ := unix.Read(p[0], b); k != 8 {
				break
			}
			lat = append(lat, time.Since(start)-time.Duration(binary.LittleEndian.Uint64(b)))
		}
		out <- lat
	}()
	go func() {
		pin(from)
		b := make([]byte, 8)
		ts := unix.NsecToTimespec(int64(gap))
		for range n {
			_ = unix.Nanosleep(&ts, nil)
			binary.LittleEndian.PutUint64(b, uint64(time.Since(start)))
			_, _ = unix.Write(p[1], b)
		}
		unix.Close(p[1])
	}()
	return <-out
}

// report prints a measurement's quantiles and how many were late.
func report(what string, lat []time.Duration, late time.Duration) {
	if len(lat) == 0 {
		fmt.Printf("%s: nothing measured\n", what)
		return
	}
	slices.Sort(lat)
	q := func(f float64) time.Duration { return lat[min(len(lat)-1, int(f*float64(len(lat))))] }
	over := len(lat) - sort.Search(len(lat), func(i int) bool { return lat[i] > late })
	fmt.Printf("%s: %d wake-ups, late by p50 %v, p90 %v, p99 %v, max %v; %d (%.2f %%) later than %v\n",
		what, len(lat), q(0.5).Round(time.Microsecond), q(0.9).Round(time.Microsecond), q(0.99).Round(time.Microsecond),
		lat[len(lat)-1].Round(time.Microsecond), over, 100*float64(over)/float64(len(lat)), late)
}
