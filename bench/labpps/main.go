// Command labpps measures the lab forwarder in packets per second: for
// each IP packet size it brings up a lab path (rate, Ethernet framing,
// one-way delay), sends paced UDP at the path's line rate from the
// client namespace to a receiver in the server namespace, and at the
// same time a few hundred small probes per second the other way, then
// prints what arrived against the line-rate arithmetic, the one-way
// delays, the forwarder's lateness and its overload counters. With
// -cpuprofile it writes a CPU profile of this process (the forwarder)
// per size. It is a benchmark, not a test; it needs root.
//
//	go build -o /tmp/labpps ./bench/labpps && sudo /tmp/labpps -sizes 46,110,494,1500
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fullpipe/fullpipe/internal/lab"
)

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "send" || os.Args[1] == "recv") {
		f := send
		if os.Args[1] == "recv" {
			f = recv
		}
		if err := f(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, os.Args[1]+":", err)
			os.Exit(1)
		}
		return
	}
	if err := bench(); err != nil {
		fmt.Fprintln(os.Stderr, "labpps:", err)
		os.Exit(1)
	}
}

type opts struct {
	sizes   []int
	rate    float64
	delay   time.Duration
	secs    float64
	load    float64 // fraction of line rate offered
	probes  float64
	pps     float64 // offered packets/s; 0 = load × line rate
	gso     int     // datagrams per GSO send
	profile string
}

func parse() (opts, error) {
	var o opts
	sizes := flag.String("sizes", "46,110,494,1500", "IP packet sizes (bytes), comma-separated")
	flag.Float64Var(&o.rate, "rate", 100e6, "bottleneck rate, bit/s (Ethernet framing: IP + 38 bytes)")
	flag.DurationVar(&o.delay, "delay", 2*time.Millisecond, "one-way delay")
	flag.Float64Var(&o.secs, "secs", 5, "seconds per size")
	flag.Float64Var(&o.load, "load", 1, "offered load as a fraction of line rate")
	flag.IntVar(&o.gso, "gso", 1, "datagrams per UDP GSO send of the generator (1 = none)")
	flag.Float64Var(&o.pps, "pps", 0, "offered packets/s (overrides -load; with -rate 0, an unlimited path)")
	flag.Float64Var(&o.probes, "probes", 300, "probes per second the other way (46-byte IP packets)")
	flag.StringVar(&o.profile, "cpuprofile", "", "write a CPU profile per size to PREFIX-SIZE.pprof")
	flag.Parse()
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 44 || n > 1500 {
			return o, fmt.Errorf("size %q: want 44..1500 IP bytes", s)
		}
		o.sizes = append(o.sizes, n)
	}
	return o, nil
}

func bench() error {
	o, err := parse()
	if err != nil {
		return err
	}
	fmt.Println("ip_B  line_pps  sent_pps recv_pps  got_% fwd_rdrop stalls fwd_wdrop late_% path_drop sock_drop fwd_cpu" +
		" late_p50 late_p99 owd_p50 probe_p50 probe_want probe_lost lab_limited(up,down)")
	for _, size := range o.sizes {
		if err := one(o, size); err != nil {
			return fmt.Errorf("%d B: %w", size, err)
		}
	}
	return nil
}

// one runs one size on a fresh lab.
func one(o opts, size int) error {
	d := lab.Direction{RateBps: int64(o.rate), Delay: o.delay}
	l, err := lab.Up(lab.Config{Name: "fppps", Seed: 1, Framing: lab.FramingEthernet, Up: d, Down: d})
	if err != nil {
		return err
	}
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	defer func() { cancel(); <-done }()
	time.Sleep(200 * time.Millisecond)
	if o.profile != "" {
		f, err := os.Create(fmt.Sprintf("%s-%d.pprof", o.profile, size))
		if err != nil {
			return err
		}
		defer f.Close()
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	line := o.rate / float64((size+38)*8)
	offer := line * o.load
	if o.pps > 0 {
		offer = o.pps
	}
	if o.rate == 0 {
		line = offer // an unlimited path: judged against what was offered
	}
	secs := fmt.Sprint(o.secs)
	rx := start(l.Server.NetNS, "recv", "-l", l.Server.Addr.String()+":9000", "-secs", fmt.Sprint(o.secs+10))
	prx := start(l.Client.NetNS, "recv", "-l", l.Client.Addr.String()+":9001", "-secs", fmt.Sprint(o.secs+10))
	time.Sleep(300 * time.Millisecond)
	up0 := l.Snapshot().Up.LateHist
	cpu0, wall0 := cpuTime(), time.Now()
	tx := start(l.Client.NetNS, "send", "-to", l.Server.Addr.String()+":9000", "-size", fmt.Sprint(size-28),
		"-pps", fmt.Sprint(offer), "-secs", secs, "-gso", fmt.Sprint(o.gso))
	ptx := start(l.Server.NetNS, "send", "-to", l.Client.Addr.String()+":9001", "-size", "18",
		"-pps", fmt.Sprint(o.probes), "-secs", secs)
	var sr, psr sendReport
	var rr, prr recvReport
	for _, w := range []struct {
		c *child
		v any
	}{{tx, &sr}, {ptx, &psr}, {rx, &rr}, {prx, &prr}} {
		if err := w.c.wait(w.v); err != nil {
			return err
		}
	}
	up1 := l.Snapshot().Up.LateHist
	cpu := float64(cpuTime()-cpu0) / float64(time.Since(wall0))
	fmt.Fprintf(os.Stderr, "%d B: sock drops %d (probes %d); client fp0 %s; server fp0 %s\n", size, rr.SockDrops, prr.SockDrops,
		devStats(l.Client.NetNS), devStats(l.Server.NetNS))
	st := l.Snapshot()
	lu := quantBuckets(diff(up1, up0))
	want := float64(o.delay)/1e6 + float64((46+38)*8)/o.rate*1e3
	u := st.Up
	var path uint64
	for _, n := range u.Drops {
		path += n
	}
	fmt.Printf("%-5d %9.0f %9.0f %8.0f %6.2f %9d %6d %9d %6.2f %9d %9d %7.2f %8.3f %8.3f %7.3f %9.3f %10.3f %10d %v,%v\n",
		size, line, sr.PPS, rr.PPS, 100*float64(rr.Received)/float64(max(sr.Sent, 1)), u.ReadDrops, u.ReadStalls, u.WriteDrops,
		100*float64(u.LatePackets)/float64(max(u.TxPackets, 1)), path, rr.SockDrops, cpu, lu[0], lu[1], rr.OWDP50Ms,
		prr.OWDP50Ms, want, psr.Sent-prr.Received, u.LabLimited, st.Down.LabLimited)
	return nil
}

// diff subtracts two lateness histograms; the stats trim trailing empty
// buckets, so the earlier one may be shorter.
func diff(a, b []uint64) []uint64 {
	out := make([]uint64, len(a))
	for i := range a {
		out[i] = a[i]
		if i < len(b) {
			out[i] -= b[i]
		}
	}
	return out
}

// quantBuckets gives p50, p99 and max of a lateness histogram, in ms.
func quantBuckets(h []uint64) [3]float64 {
	var n uint64
	for _, c := range h {
		n += c
	}
	var out [3]float64
	var acc uint64
	for i, c := range h {
		ms := float64(i+1) * float64(lab.LateBucket) / 1e6
		if acc < n/2 && acc+c >= n/2 {
			out[0] = ms
		}
		if acc < n*99/100 && acc+c >= n*99/100 {
			out[1] = ms
		}
		if c > 0 {
			out[2] = ms
		}
		acc += c
	}
	return out
}

// child is an endpoint process in a namespace; its stdout is one JSON
// report.
type child struct {
	cmd *exec.Cmd
	out strings.Builder
	err error
}

func start(ns string, args ...string) *child {
	self, _ := os.Executable()
	c := &child{cmd: exec.Command("ip", append([]string{"netns", "exec", ns, self}, args...)...)}
	c.cmd.Stdout = &c.out
	c.cmd.Stderr = os.Stderr
	c.err = c.cmd.Start()
	return c
}

func (c *child) wait(v any) error {
	if c.err != nil {
		return c.err
	}
	if err := c.cmd.Wait(); err != nil {
		return fmt.Errorf("%v: %w", c.cmd.Args[4:], err)
	}
	return json.Unmarshal([]byte(c.out.String()), v)
}

// devStats is the TUN device's kernel counters in ns: what the kernel
// dropped on the way to the forwarder (tx) or from it (rx).
func devStats(ns string) string {
	out, err := exec.Command("ip", "-n", ns, "-s", "-j", "link", "show", lab.TUNName).Output()
	if err != nil {
		return err.Error()
	}
	var v []struct {
		Stats64 map[string]map[string]uint64 `json:"stats64"`
	}
	if json.Unmarshal(out, &v) != nil || len(v) == 0 {
		return string(out)
	}
	rx, tx := v[0].Stats64["rx"], v[0].Stats64["tx"]
	snmp, _ := exec.Command("ip", "netns", "exec", ns, "sh", "-c", "grep ^Udp: /proc/net/snmp | tail -1").Output()
	return fmt.Sprintf("rx %d dropped %d, tx %d dropped %d; %s", rx["packets"], rx["dropped"], tx["packets"], tx["dropped"],
		strings.TrimSpace(string(snmp)))
}

// cpuTime is this process's CPU time (the forwarder; the endpoints are
// child processes and not counted).
func cpuTime() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
