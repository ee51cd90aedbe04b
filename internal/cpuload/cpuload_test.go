package cpuload

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in        string
		run, wait time.Duration
		ok        bool
	}{
		{"1000112724 999217014 257\n", 1000112724, 999217014, true},
		{"0 0 1", 0, 0, true},
		{"12", 0, 0, false},
		{"x 1 2", 0, 0, false},
		{"-1 1 2", 0, 0, false},
		{"", 0, 0, false},
	} {
		run, wait, ok := parse(c.in)
		if run != c.run || wait != c.wait || ok != c.ok {
			t.Errorf("parse(%q) = %v, %v, %v; want %v, %v, %v", c.in, run, wait, ok, c.run, c.wait, c.ok)
		}
	}
}

// spin keeps the calling thread on the CPU for d.
func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// TestWaitIsMeasured: a thread that spins is runnable the whole time, so
// its CPU time and its wait add up to the time it spun, whatever else
// the machine runs: one thread pinned to a CPU for 400 ms, about 400 ms
// in all; two pinned to the same CPU, about 800 ms, of which the one CPU
// gave them at most 400 ms, so they waited at least as long again as the
// one did. (A quiet machine gives one thread next to no wait; a busy one,
// which the test must bear, some: another process on that CPU once took
// 35 % of it.)
func TestWaitIsMeasured(t *testing.T) {
	if !Now().OK {
		t.Skip("no /proc/self/task/*/schedstat on this kernel")
	}
	const d = 400 * time.Millisecond
	run := func(threads int) *Load {
		var spun, ready sync.WaitGroup
		ready.Add(threads)
		spun.Add(threads)
		start, release := make(chan struct{}), make(chan struct{})
		for range threads {
			go func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var was, one unix.CPUSet
				if err := unix.SchedGetaffinity(0, &was); err != nil {
					t.Error(err)
				}
				one.Set(0)
				if err := unix.SchedSetaffinity(0, &one); err != nil {
					t.Error(err)
				}
				defer unix.SchedSetaffinity(0, &was) // the thread goes back to the pool as it came
				ready.Done()
				<-start
				spin(d)
				spun.Done()
				<-release // the thread's counters stay readable until measured
			}()
		}
		ready.Wait()
		m := Now()
		close(start)
		spun.Wait()
		l := m.Since()
		close(release)
		return l
	}
	alone := run(1)
	two := run(2)
	t.Logf("one thread: %+v", *alone)
	t.Logf("two threads on one CPU: %+v", *two)
	if sum := alone.CPUPct + alone.WaitPct; sum < 85 || sum > 120 || alone.CPUPct < 20 {
		t.Errorf("one spinning thread: CPU %.0f %% + wait %.0f %% = %.0f %%; want about 100 (runnable throughout)", alone.CPUPct, alone.WaitPct, sum)
	}
	// Together runnable for 2 × the time, on one CPU: at most 100 % of CPU
	// between them (a little over for the edges), the rest waited.
	if sum := two.CPUPct + two.WaitPct; sum < 170 || sum > 240 || two.CPUPct > 130 || two.WaitPct < alone.WaitPct+50 {
		t.Errorf("two threads on one CPU: CPU %.0f %% + wait %.0f %% = %.0f %%; want about 200, CPU at most about 100, wait 50 points above one thread's %.0f %%",
			two.CPUPct, two.WaitPct, sum, alone.WaitPct)
	}
	if two.CPUs < 1 {
		t.Errorf("usable CPUs %d", two.CPUs)
	}
}

func TestBetweenRefusesNonsense(t *testing.T) {
	a := Mark{At: time.Now(), OK: true}
	if Between(a, a) != nil {
		t.Error("an empty interval has no load")
	}
	if Between(Mark{At: a.At}, Mark{At: a.At.Add(time.Second), OK: true}) != nil {
		t.Error("an unreadable mark has no load")
	}
	l := Between(a, Mark{At: a.At.Add(time.Second), Run: 500 * time.Millisecond, Wait: 250 * time.Millisecond, OK: true})
	if l == nil || l.CPUPct != 50 || l.WaitPct != 25 || l.ElapsedUs != 1e6 {
		t.Errorf("Between = %+v, want 50 %% CPU, 25 %% wait over 1 s", l)
	}
}

func TestParseStat(t *testing.T) {
	const stat = `cpu  531104 299 272793 1089733 1536 0 22558 3864 0 0
cpu0 100 1 50 800 10 0 20 5 0 0
cpu1 200 0 100 600 0 0 40 60 0 0
intr 145855422 0 0
`
	all := parseStat(stat, nil)
	if all.n != 2 || all.idle != 1410 || all.busy != 176+400 || all.steal != 65 {
		t.Errorf("all CPUs: %+v, want 2 CPUs, idle 1410, busy 576, steal 65", all)
	}
	var one unix.CPUSet
	one.Set(1)
	c1 := parseStat(stat, &one)
	if c1.n != 1 || c1.idle != 600 || c1.busy != 400 || c1.steal != 60 {
		t.Errorf("cpu1: %+v, want idle 600, busy 400, steal 60", c1)
	}
}

// TestCPUsBusy: a thread spinning on CPU 0 makes CPU 0 busy, as /proc/stat
// sees it, nearly all of the interval.
func TestCPUsBusy(t *testing.T) {
	var was, one unix.CPUSet
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		t.Fatal(err)
	}
	one.Set(0)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		t.Fatal(err)
	}
	defer unix.SchedSetaffinity(0, &was)
	a := Mark{At: time.Now(), OK: true, CPU: readCPUs(&one)}
	spin(300 * time.Millisecond)
	b := Mark{At: time.Now(), OK: true, CPU: readCPUs(&one)}
	l := Between(a, b)
	t.Logf("%+v", *l)
	if l.CPUsBusyPct < 90 {
		t.Errorf("CPU 0 busy %.0f %% while a thread spun on it, want ≥ 90", l.CPUsBusyPct)
	}
}
