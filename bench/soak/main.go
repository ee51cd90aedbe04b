// Command soak is a benchmark, not a test: well-behaved testers loop over
// short tcp/udp/rtt/mtu tests against a `fullpipe serve` child on
// loopback while an abuse mix runs (idle and half-open connections,
// oversized and garbage frames, UDP floods from many source ports,
// clients that stop reading). It reports legitimate tests completed and
// refused, the responder's peak RSS and fd count, its crashes and
// recovered panics, and the time it takes to return to idle. Every loop
// ends at the run's deadline; every network call has a deadline.
//
// A STAMP reflector runs beside the responder (serve --stamp), and a
// second one beside it; packets forged to come from the second try to
// start a reflection loop between them (loop.go).
//
// Run it through bench/soak.sh.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	bin := flag.String("bin", "", "fullpipe binary")
	minutes := flag.Float64("minutes", 3, "how long the legitimate clients and the abuse run")
	clients := flag.Int("clients", 20, "well-behaved clients")
	flag.Parse()
	if *bin == "" || *minutes <= 0 || *minutes > 60 || *clients < 1 || *clients > 200 {
		fmt.Fprintln(os.Stderr, "usage: soak -bin PATH [-minutes 3 (≤ 60)] [-clients 20 (≤ 200)]")
		os.Exit(2)
	}
	if err := run(*bin, time.Duration(*minutes*float64(time.Minute)), *clients); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

const addr = "127.0.0.1:16350"

func run(bin string, d time.Duration, clients int) error {
	r, err := startResponder(bin)
	if err != nil {
		return err
	}
	defer r.kill()
	idleFDs := r.fds()
	mon := &monitor{r: r}
	mctx, stopMon := context.WithCancel(context.Background())
	mon.done.Add(1)
	go mon.run(mctx)

	end := time.Now().Add(d)
	ctx, cancel := context.WithDeadline(context.Background(), end)
	defer cancel()
	var wg sync.WaitGroup
	legit := &tally{}
	for i := range clients {
		wg.Add(1)
		go func() { defer wg.Done(); legitLoop(ctx, i, legit) }()
	}
	abuse := &abuseCounts{}
	loop := &loopCounts{}
	for _, a := range append(abuses, abuseLoop(bin, loop)) {
		wg.Add(1)
		go func() { defer wg.Done(); a(ctx, abuse) }()
	}
	fmt.Printf("soak: %v, %d clients, responder %s (pid %d), %d fds idle\n", d, clients, addr, r.cmd.Process.Pid, idleFDs)
	wg.Wait()
	clientsDone := time.Since(end)
	idle := r.waitIdle(idleFDs, time.Minute)
	if idle >= 0 {
		idle += clientsDone // from the end of the run, when the abuse stopped
	}
	stopMon()
	mon.wait()
	report(legit, abuse, mon, r, idleFDs, idle, clientsDone)
	reportLoop(loop)
	return nil
}

// responder is the `fullpipe serve` child.
type responder struct {
	cmd    *exec.Cmd
	stderr *lineCounter
	exited chan error
}

func startResponder(bin string) (*responder, error) {
	cmd := exec.Command(bin, "serve", "-q", "-l", addr, "--max-sessions", "32", "--max-duration", "1m", "--stamp", "--stamp-listen", stampA)
	lc := &lineCounter{}
	cmd.Stderr = lc
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := &responder{cmd: cmd, stderr: lc, exited: make(chan error, 1)}
	go func() { r.exited <- cmd.Wait() }()
	for deadline := time.Now().Add(5 * time.Second); ; {
		if r.fds() >= 5 { // stdio, epoll, listeners
			if c, err := dial("127.0.0.1", time.Second); err == nil {
				c.Close()
				return r, nil
			}
		}
		if time.Now().After(deadline) {
			r.kill()
			return nil, fmt.Errorf("responder did not listen on %s within 5 s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *responder) alive() bool {
	select {
	case err := <-r.exited:
		r.exited <- err
		return false
	default:
		return true
	}
}

func (r *responder) kill() {
	if r.alive() {
		_ = r.cmd.Process.Kill()
	}
	<-r.exited
	r.exited <- nil
}

// fds is the responder's open file descriptors (0 once it exited).
func (r *responder) fds() int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", r.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	return len(ents)
}

// waitIdle waits until the responder's fds are back to idle (its
// sessions and connections gone) and returns how long it took, or -1.
func (r *responder) waitIdle(idle int, limit time.Duration) time.Duration {
	start := time.Now()
	for time.Since(start) < limit {
		if n := r.fds(); n <= idle && n > 0 {
			return time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return -1
}

// lineCounter counts the responder's stderr lines: with -q only errors,
// among them recovered panics.
type lineCounter struct {
	mu            sync.Mutex
	lines, panics int
	first         []string
}

func (l *lineCounter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		l.lines++
		if strings.Contains(line, "recovered from a panic") {
			l.panics++
		}
		if len(l.first) < 5 {
			l.first = append(l.first, line)
		}
	}
	return len(b), nil
}

// monitor samples the responder's RSS and fds every 200 ms.
type monitor struct {
	r         *responder
	peakRSSkB atomic.Int64
	peakFDs   atomic.Int64
	done      sync.WaitGroup // run
}

// run samples until ctx ends; the caller adds it to done.
func (m *monitor) run(ctx context.Context) {
	defer m.done.Done()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		if rss := rssKB(m.r.cmd.Process.Pid); rss > m.peakRSSkB.Load() {
			m.peakRSSkB.Store(rss)
		}
		if n := int64(m.r.fds()); n > m.peakFDs.Load() {
			m.peakFDs.Store(n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (m *monitor) wait() { m.done.Wait() }

func rssKB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		var v int64
		if _, err := fmt.Sscanf(l, "VmRSS: %d kB", &v); err == nil {
			return v
		}
	}
	return 0
}

func report(legit *tally, abuse *abuseCounts, mon *monitor, r *responder, idleFDs int, idle, clientsDone time.Duration) {
	fmt.Println("legitimate tests (kind: completed / refused busy-or-limit / failed):")
	for _, k := range kinds {
		c := legit.get(k)
		fmt.Printf("  %-4s %5d / %4d / %4d\n", k, c[0], c[1], c[2])
	}
	tot := legit.total()
	fmt.Printf("  all  %5d / %4d / %4d\n", tot[0], tot[1], tot[2])
	for _, e := range legit.sampleErrors() {
		fmt.Println("  e.g.", e)
	}
	fmt.Printf("abuse: %d idle/half-open connections, %d garbage/oversized frames, %d UDP datagrams from %d source ports, %d sessions that stopped reading\n",
		abuse.conns.Load(), abuse.frames.Load(), abuse.datagrams.Load(), floodPorts, abuse.stalled.Load())
	crashes := 0
	if !r.alive() {
		crashes = 1
	}
	r.stderr.mu.Lock()
	fmt.Printf("responder: peak RSS %.1f MB, peak fds %d (idle %d), crashes %d, recovered panics %d, error lines %d (besides its banner)\n",
		float64(mon.peakRSSkB.Load())/1024, mon.peakFDs.Load(), idleFDs, crashes, r.stderr.panics, r.stderr.lines-1)
	for _, l := range r.stderr.first {
		fmt.Println("  stderr:", l)
	}
	r.stderr.mu.Unlock()
	if idle >= 0 {
		fmt.Printf("return to idle: %v after the end of the run (the abuse stopped; the last legitimate test ended %v after it), fds back to %d\n",
			idle.Round(10*time.Millisecond), clientsDone.Round(10*time.Millisecond), idleFDs)
	} else {
		fmt.Printf("return to idle: not within a minute of the last client (fds %d, idle %d)\n", r.fds(), idleFDs)
	}
}

func reportLoop(l *loopCounts) {
	switch {
	case l.skipped != "":
		fmt.Println("reflector loop: not run:", l.skipped)
	case l.stopError != "":
		fmt.Println("reflector loop: the second reflector ended badly:", l.stopError)
	default:
		fmt.Printf("reflector loop: %d packets forged to the responder's reflector from a second one's address; the second reflected %d and dropped %d as reflected (a loop would reflect without end)\n",
			l.forged, l.reflected, l.looped)
	}
}
