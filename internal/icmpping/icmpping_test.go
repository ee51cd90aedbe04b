package icmpping

import (
	"context"
	"net/netip"
	"os"
	"testing"
	"time"
)

var loopback = netip.MustParseAddr("127.0.0.1")

// Echo to the loopback: every probe answered, RTTs positive and short,
// each timed by the kernel's stamp.
func TestEchoLoopback(t *testing.T) {
	r, err := Start(context.Background(), Config{Dst: loopback, Probe: Echo, Count: 50, Interval: time.Millisecond, Size: 56, Wait: time.Second}, nil)
	if err != nil {
		if os.Geteuid() != 0 {
			t.Skipf("no ICMP socket for this user: %v", err)
		}
		t.Fatal(err)
	}
	t.Logf("socket %s, stamped %d", r.Socket, r.Stamped)
	for i, f := range r.Fates {
		if !f.Answered || f.RTT <= 0 || f.RTT > 100*time.Millisecond {
			t.Fatalf("probe %d: %+v", i, f)
		}
		if i > 0 && f.Sent <= r.Fates[i-1].Sent {
			t.Fatalf("probe %d sent at %v, before %v", i, f.Sent, r.Fates[i-1].Sent)
		}
	}
	if r.Stamped != 50 || r.Duplicates != 0 {
		t.Errorf("stamped %d, duplicates %d", r.Stamped, r.Duplicates)
	}
	// Each probe is due 1 ms after the previous one's due time, from the
	// run's start; Sent counts from that start, so none is early.
	if last := r.Fates[49].Sent; last < 49*time.Millisecond || last > 200*time.Millisecond {
		t.Errorf("the 50th probe, due at 49 ms, went at %v", last)
	}
}

// UDP to a closed port of the loopback: every probe draws a port
// unreachable (the loopback is exempt from Linux's ICMP rate limit).
func TestUnreachLoopback(t *testing.T) {
	r, err := Start(context.Background(), Config{Dst: loopback, Probe: Unreach, Port: closedPort(t), Count: 30, Interval: time.Millisecond, Size: 32, Wait: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range r.Fates {
		if f.Answered {
			n++
		}
	}
	if n != 30 || r.SendErrors != 0 || r.Unmatched != 0 {
		t.Errorf("answered %d of 30, send errors %d, unmatched %d, other %d", n, r.SendErrors, r.Unmatched, r.OtherICMP)
	}
}

// closedPort is a UDP port nothing listens on, as far as a bind can
// tell.
func closedPort(t *testing.T) int {
	t.Helper()
	return 33434 + os.Getpid()%1000
}

func TestStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	r, err := Start(ctx, Config{Dst: loopback, Probe: Unreach, Port: closedPort(t), Count: 1000, Interval: 10 * time.Millisecond, Size: 32, Wait: time.Second}, nil)
	if err == nil || r == nil {
		t.Fatalf("got %v, %v; want a partial run and ctx's error", r, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("stopped after %v", d)
	}
}

func TestConfigRefused(t *testing.T) {
	good := Config{Dst: loopback, Probe: Echo, Count: 1, Interval: time.Millisecond, Size: 12, Wait: time.Second}
	for name, f := range map[string]func(*Config){
		"no host": func(c *Config) { c.Dst = netip.Addr{} }, "probe": func(c *Config) { c.Probe = "tcp" },
		"count": func(c *Config) { c.Count = MaxCount + 1 }, "interval": func(c *Config) { c.Interval = time.Microsecond },
		"size": func(c *Config) { c.Size = 11 }, "port": func(c *Config) { c.Probe = Unreach },
		"wait": func(c *Config) { c.Wait = 0 },
	} {
		c := good
		f(&c)
		if _, err := Start(context.Background(), c, nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The same over IPv6: echo and unreach to ::1.
func TestIPv6Loopback(t *testing.T) {
	v6 := netip.MustParseAddr("::1")
	for _, c := range []Config{
		{Dst: v6, Probe: Echo, Count: 20, Interval: time.Millisecond, Size: 56, Wait: time.Second},
		{Dst: v6, Probe: Unreach, Port: closedPort(t), Count: 20, Interval: time.Millisecond, Size: 56, Wait: time.Second},
	} {
		r, err := Start(context.Background(), c, nil)
		if err != nil {
			if os.Geteuid() != 0 && c.Probe == Echo {
				t.Skipf("no ICMPv6 socket for this user: %v", err)
			}
			t.Fatalf("%s: %v", c.Probe, err)
		}
		n := 0
		for _, f := range r.Fates {
			if f.Answered && f.RTT > 0 {
				n++
			}
		}
		if n != 20 || !r.IPv6 || r.Stamped != 20 {
			t.Errorf("%s over IPv6 (%s socket): %d of 20 answered, %d stamped", c.Probe, r.Socket, n, r.Stamped)
		}
	}
	if _, err := Start(context.Background(), Config{Dst: v6, Probe: Echo, Count: 1, Interval: time.Millisecond, Size: MaxSize, Wait: time.Second}, nil); err == nil {
		t.Error("an IPv6 probe of 1472 bytes accepted")
	}
}
