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

// TestWaitIsMeasured: two threads pinned to one CPU, both spinning for
// 400 ms, share it: together they run about 400 ms and wait about 400 ms
// (each is runnable the whole time and runs half of it). Without the
// contention a single spinning thread waits next to nothing.
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
	if alone.CPUPct < 70 || alone.WaitPct > 30 {
		t.Errorf("one spinning thread: CPU %.0f %%, wait %.0f %%; want about 100 and 0", alone.CPUPct, alone.WaitPct)
	}
	// Each of the two runs about half the time and waits the other half:
	// summed, about 100 % CPU (one CPU) and 100 % wait.
	if two.CPUPct < 70 || two.CPUPct > 130 || two.WaitPct < 60 {
		t.Errorf("two threads on one CPU: CPU %.0f %%, wait %.0f %%; want about 100 and 100", two.CPUPct, two.WaitPct)
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
