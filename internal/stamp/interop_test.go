package stamp

import (
	"context"
	"encoding/hex"
	"net"
	"os"
	"strconv"
	"testing"
	"time"
)

// loopbackAddr refuses any address but a loopback one: the house rule
// for test traffic.
func loopbackAddr(t *testing.T, env string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		t.Skipf("set %s=127.0.0.1:PORT to run against an independent STAMP implementation", env)
	}
	host, _, err := net.SplitHostPort(v)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		t.Fatalf("%s=%q: only a loopback address is allowed", env, v)
	}
	return v
}

// interopKey is STAMP_INTEROP_KEY (hex): authenticated mode when set.
func interopKey(t *testing.T) []byte {
	t.Helper()
	k, err := hex.DecodeString(os.Getenv("STAMP_INTEROP_KEY"))
	if err != nil {
		t.Fatalf("STAMP_INTEROP_KEY: %v", err)
	}
	return k
}

// TestInteropSender runs our Sender against an independent reflector
// already listening at STAMP_INTEROP_REFLECTOR (loopback only), in
// stateful mode if STAMP_INTEROP_STATEFUL=1, authenticated with
// STAMP_INTEROP_KEY.
func TestInteropSender(t *testing.T) {
	target := loopbackAddr(t, "STAMP_INTEROP_REFLECTOR")
	stateful := os.Getenv("STAMP_INTEROP_STATEFUL") == "1"
	for _, f := range []Format{NTP, PTP} {
		s, err := NewSender(SenderConfig{Target: target, Count: 20, Interval: 5 * time.Millisecond, Wait: 500 * time.Millisecond, Format: f, Stateful: stateful, Key: interopKey(t)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := s.Run(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v: sent %d received %d unknown %d; RTT %+v; residence %+v; forward %+v", f, res.Sent, res.Received, res.Unknown, res.RTT, res.Residence, res.Forward)
		if res.Received != res.Sent || res.Unknown != 0 || res.RTT.MinUs < -1 || res.RTT.MaxUs > 1e6 {
			t.Errorf("%v: %+v", f, res)
		}
		for i, r := range res.Records {
			if stateful && r.ReflectorSeq != uint32(i) {
				t.Errorf("record %d: reflector sequence %d", i, r.ReflectorSeq)
			}
		}
	}
}

// TestInteropReflector serves our Reflector at STAMP_INTEROP_LISTEN
// (loopback only) for STAMP_INTEROP_SECONDS (default 10, at most 120)
// while an independent sender is pointed at it, then logs its counters.
func TestInteropReflector(t *testing.T) {
	addr := loopbackAddr(t, "STAMP_INTEROP_LISTEN")
	secs, _ := strconv.Atoi(os.Getenv("STAMP_INTEROP_SECONDS"))
	if secs <= 0 {
		secs = 10
	}
	secs = min(secs, 120)
	r, err := NewReflector(ReflectorConfig{Addr: addr, Stateful: os.Getenv("STAMP_INTEROP_STATEFUL") == "1", Key: interopKey(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second)
	defer cancel()
	if err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	s := r.Stats()
	t.Logf("served %d s: %+v", secs, s)
	// A TWAMP-Light sender's packets under 41 octets are not answered
	// (Short): the rest must be.
	if s.Reflected == 0 || s.Reflected+s.Short != s.Received {
		t.Errorf("%+v", s)
	}
}
