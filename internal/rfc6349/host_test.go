package rfc6349

import (
	"strings"
	"testing"

	"github.com/fullpipe/fullpipe/internal/cpuload"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// TestSenderHostLimited: the host is named only on evidence that it could
// have held the step back, each rule at its edge.
func TestSenderHostLimited(t *testing.T) {
	idle := &cpuload.Load{ElapsedUs: 2e6, CPUUs: 5e5, WaitUs: 4e5, CPUPct: 25, WaitPct: 20, CPUs: 1, CPUsBusyPct: 40}
	starved := &cpuload.Load{ElapsedUs: 2e6, CPUUs: 3e4, WaitUs: 3e6, CPUPct: 1.5, WaitPct: 150, CPUs: 1, CPUsBusyPct: 100}
	for _, c := range []struct {
		name string
		h    SenderHost
		want string // a fragment of the reason; "" = not limited
	}{
		// Threads waiting for each other on a CPU with idle time left: not starved.
		{"own threads queue", SenderHost{CPU: idle}, ""},
		{"starved", SenderHost{Side: "tester", CPU: starved}, "other work had the CPU"},
		{"wait just under the allowed shortfall", SenderHost{CPU: &cpuload.Load{ElapsedUs: 1e6, WaitPct: 4.9, CPUsBusyPct: 100, CPUs: 1}}, ""},
		{"wait at the allowed shortfall", SenderHost{CPU: &cpuload.Load{ElapsedUs: 1e6, WaitPct: 5, CPUsBusyPct: 95, CPUs: 1}}, "waited for a CPU 5 %"},
		{"CPUs not full", SenderHost{CPU: &cpuload.Load{ElapsedUs: 1e6, WaitPct: 50, CPUsBusyPct: 94, CPUs: 1}}, ""},
		{"steal", SenderHost{CPU: &cpuload.Load{ElapsedUs: 1e6, StealPct: 6, CPUs: 2}}, "hypervisor"},
		{"steal under the shortfall", SenderHost{CPU: &cpuload.Load{ElapsedUs: 1e6, StealPct: 6, CPUs: 2}}, "!20"},
		{"starved under the shortfall", SenderHost{CPU: &cpuload.Load{ElapsedUs: 1e6, WaitPct: 19, CPUsBusyPct: 100, CPUs: 1}}, "!20"},
		{"starved over the shortfall", SenderHost{CPU: &cpuload.Load{ElapsedUs: 1e6, WaitPct: 21, CPUsBusyPct: 100, CPUs: 1}}, "20 waited"},
		// Four threads each held back 2 % (summed 8 %, CPU 392 %): 2 % each.
		{"four threads, 2 % each", SenderHost{CPU: &cpuload.Load{ElapsedUs: 1e6, WaitPct: 8, CPUPct: 392, CPUsBusyPct: 100, CPUs: 8}}, ""},
		{"saturated", SenderHost{CPU: &cpuload.Load{ElapsedUs: 1e6, CPUPct: 185, CPUs: 2}}, "ran out of CPU"},
		{"not saturated", SenderHost{CPU: &cpuload.Load{ElapsedUs: 1e6, CPUPct: 175, CPUs: 2}}, ""},
		{"no CPU figures", SenderHost{}, ""},
		// A paced stream that kept its schedule was sent as asked, starved or not.
		// Late datagrams can explain as much loss as there were of them.
		{"paced, late, more lost", SenderHost{Paced: true, SentPct: 100, LatePct: 0.5, LostPct: 0.6, CPU: starved}, ""},
		{"paced, late, as many lost", SenderHost{Paced: true, SentPct: 100, LatePct: 9, LostPct: 9, MaxSlipMs: 60, CPU: starved}, "behind schedule (up to 60.0 ms)"},
		{"paced, late, none lost", SenderHost{Paced: true, SentPct: 100, LatePct: 50, CPU: starved}, ""},
		{"paced, short", SenderHost{Paced: true, SentPct: 97.9}, "sent only 97.9 %"},
		{"paced, 98 %", SenderHost{Paced: true, SentPct: 98}, ""},
	} {
		// "!20": not limited for a 20 % shortfall; "20 …": limited for it.
		short, want := 5.0, c.want
		if rest, ok := strings.CutPrefix(want, "!20"); ok {
			short, want = 20, rest
		} else if rest, ok := strings.CutPrefix(want, "20 "); ok {
			short, want = 20, rest
		}
		got := c.h.Limited(short)
		if want == "" && got != "" || want != "" && !strings.Contains(got, want) {
			t.Errorf("%s: Limited = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestDiagnoseHost: a host limit is named with its evidence, in step 2 as
// in step 4; in step 4 only when the throughput fell short.
func TestDiagnoseHost(t *testing.T) {
	base := Evidence{BBBps: 90e6, RTT: 20e6, IdealBps: 85e6, ActualBps: 48e6, EfficiencyPct: 100, BufferDelayPct: 3}
	causes := func(e Evidence) (out []string) {
		for _, f := range Diagnose(e, DefaultThresholds) {
			out = append(out, string(f.Cause)+": "+f.Detail)
		}
		return out
	}
	e := base
	e.ThroughputHost = "the tester waited for a CPU 199 %"
	f := causes(e)
	if len(f) != 1 || !strings.HasPrefix(f[0], "host: ") || !strings.Contains(f[0], "199 %") || !strings.Contains(f[0], "no loss and no queueing") {
		t.Errorf("starved throughput: %q", f)
	}
	e.ActualBps = 84e6 // 98.8 %: no shortfall to explain
	if f := causes(e); len(f) != 0 {
		t.Errorf("a pass with a busy host: %q, want no finding", f)
	}
	e = base
	e.BBHost = "the tester sent 91.6 % of its datagrams more than 1 ms behind schedule"
	f = causes(e)
	if len(f) != 1 || !strings.Contains(f[0], "host limit in step 2") || !strings.Contains(f[0], "90.0 Mbit/s") {
		t.Errorf("starved step 2: %q", f)
	}
	// Trains that read a policer while the tester was starved around
	// them (lab CI: a starved tester's catch-up bursts read as "policed
	// at 46.1 Mbit/s"): set aside, never named as the network's.
	e.Shaping, e.ShapingDetail = vocab.Policed, "policed at 46.1 ± 0.9 Mbit/s"
	f = causes(e)
	if len(f) != 2 || !strings.HasPrefix(f[1], "host: the packet trains' tails read like a policer's") || !strings.Contains(f[1], "46.1") {
		t.Errorf("policer-like trains from a starved tester: %q", f)
	}
	e.BBHost = ""
	if f := causes(e); len(f) != 1 || !strings.HasPrefix(f[0], "policer: ") {
		t.Errorf("policer-like trains from an idle tester: %q, want the policer named", f)
	}
}

// TestDiagnoseSndbuf: a sender held back by its send buffer (wmem_max or
// tcp_wmem below the BDP) a fifth of its busy time is the host's limit.
func TestDiagnoseSndbuf(t *testing.T) {
	e := Evidence{BBBps: 100e6, RTT: 20e6, IdealBps: 94e6, ActualBps: 40e6, EfficiencyPct: 100, SndbufLimitedPct: 20}
	var host []string
	for _, f := range Diagnose(e, DefaultThresholds) {
		if f.Cause == "host" {
			host = append(host, f.Detail)
		}
	}
	if len(host) != 1 || !strings.Contains(host[0], "wmem_max") || !strings.Contains(host[0], "20 %") {
		t.Errorf("send-buffer limited 20 %% of the time: host findings %q", host)
	}
	e.SndbufLimitedPct = 19.9
	for _, f := range Diagnose(e, DefaultThresholds) {
		if f.Cause == "host" {
			t.Errorf("19.9 %% send-buffer limited named the host: %s", f.Detail)
		}
	}
}
