package rfc6349

import (
	"fmt"
	"math"
	"testing"
	"time"
)

func ms(f float64) time.Duration { return time.Duration(math.Round(f * float64(time.Millisecond))) }

// near asserts got is within tol of want.
func near(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %v, want %v ± %v", name, got, want, tol)
	}
}

// Vectors 1-6: BDP in bits, and RWND in KB (1000 B), which the RFC's
// Table 3.3.1 truncates.
func TestBDP(t *testing.T) {
	cases := []struct {
		bb     float64
		rtt    float64 // ms
		bits   float64
		rwndKB int // truncated
	}{
		{1.536e6, 20, 30_720, 3}, {1.536e6, 50, 76_800, 9}, {1.536e6, 100, 153_600, 19},
		{44.21e6, 10, 442_100, 55}, {44.21e6, 15, 663_150, 82}, {44.21e6, 25, 1_105_250, 138},
		{100e6, 1, 100_000, 12}, {100e6, 2, 200_000, 25}, {100e6, 5, 500_000, 62},
		{1e9, 0.1, 100_000, 12}, {1e9, 0.5, 500_000, 62}, {1e9, 1, 1_000_000, 125},
		{10e9, 0.05, 500_000, 62}, {10e9, 0.30, 3_000_000, 375},
		{5e6, 90, 450_000, 56}, {640e3, 90, 57_600, 7}, // vector 6: ADSL down / up
	}
	for _, c := range cases {
		got := BDPBits(c.bb, ms(c.rtt))
		near(t, fmt.Sprintf("BDP bits %v@%vms", c.bb, c.rtt), got, c.bits, 1e-6*c.bits)
		if kb := int(BDPBytes(c.bb, ms(c.rtt)) / 1000); kb != c.rwndKB {
			t.Errorf("RWND %v@%vms = %d KB, want %d", c.bb, c.rtt, kb, c.rwndKB)
		}
	}
	// Vector 20: 500 Mbit/s, 5 ms → 312,500 B.
	near(t, "BDP 500M 5ms", BDPBytes(500e6, ms(5)), 312_500, 1e-6)
}

// Vectors 7-10: window-limited throughput, KB = 1000 B. The RFC's figures
// truncate to one decimal (40.96 → "40.9").
func TestWindowThroughput(t *testing.T) {
	cases := []struct {
		kb   float64
		rtt  float64
		mbps float64
	}{
		{16, 5, 25.6}, {16, 10, 12.8},
		{16, 15, 8.5}, {16, 25, 5.1}, {64, 15, 34.1}, {64, 25, 20.5}, // Fig 3.3.1a
		{16, 25, 5.1}, {32, 25, 10.2}, {64, 25, 20.5}, {128, 25, 40.9}, // Fig 3.3.1b
	}
	for _, c := range cases {
		got := WindowThroughput(c.kb*1000, ms(c.rtt)) / 1e6
		// ±1 in the last printed digit (the RFC truncates or rounds).
		near(t, fmt.Sprintf("%vKB@%vms", c.kb, c.rtt), got, c.mbps, 0.1)
	}
	// RFC 6349's first example: 64 KiB at 20 ms.
	near(t, "64KiB@20ms", WindowThroughput(65536, ms(20)), 26_214_400, 1e-6)
}

// Vectors 11-16 and 36: frame rates and maximum achievable TCP throughput.
func TestMaxTCPThroughput(t *testing.T) {
	// T3 with PPP framing: 44.21e6 / (1508 × 8) = 3664.6 → 3664 fps;
	// 3664 × 1460 × 8 = 42.79552 Mbit/s (vector 11, 12).
	if f := FrameRate(44.21e6, 1500, PPP); f != 3664 {
		t.Errorf("T3 fps = %v, want 3664", f)
	}
	near(t, "T3 max", MaxTCPThroughput(44.21e6, 1500, 1460, PPP), 42_795_520, 1e-3)
	// Vector 15: T1, printed 1.4 Mbit/s. The notes' "1.487 exact" is
	// 1.536e6 × 1460/1508 with an unfloored frame rate; with the RFC's
	// floored rate (127 fps, as it floors the T3's 3664.6) it is
	// 127 × 1460 × 8 = 1.48336 Mbit/s, which also prints as 1.4.
	t1 := MaxTCPThroughput(1.536e6, 1500, 1460, PPP) / 1e6
	near(t, "T1 max", t1, 1.48336, 1e-6)
	if math.Trunc(t1*10)/10 != 1.4 {
		t.Errorf("T1 max %v does not print as the RFC's 1.4", t1)
	}
	// Vector 13, 14: Ethernet 1538 B per frame.
	for _, c := range []struct {
		rate       float64
		fps        float64
		max, maxTS float64 // Mbit/s without options (RFC) and with timestamps (vector 36)
	}{
		{100e6, 8127, 94.92336, 94.143},
		{1e9, 81274, 949.28032, 941.478},
		{10e9, 812743, 9492.83824, 9414.815},
	} {
		if f := FrameRate(c.rate, 1500, Ethernet); f != c.fps {
			t.Errorf("fps at %v = %v, want %v", c.rate, f, c.fps)
		}
		near(t, "max", MaxTCPThroughput(c.rate, 1500, 1460, Ethernet)/1e6, c.max, 1e-5)
		near(t, "max with timestamps", MaxTCPThroughput(c.rate, 1500, 1448, Ethernet)/1e6, c.maxTS, 1e-3)
	}
	// The notes' derived table: VLAN and Q-in-Q at 100M, IPv6, jumbo.
	near(t, "vlan", MaxTCPThroughput(100e6, 1500, 1460, VLAN)/1e6, 94.678, 1e-3)
	near(t, "qinq", MaxTCPThroughput(100e6, 1500, 1460, QinQ)/1e6, 94.433, 1e-3)
	near(t, "ipv6", MaxTCPThroughput(1e9, 1500, 1440, Ethernet)/1e6, 936.276, 1e-3)
	near(t, "jumbo", MaxTCPThroughput(10e9, 9000, 8960, Ethernet)/1e6, 9913.631, 1e-2)
}

// Vector 16: ideal transfer time of 100 MB (800 Mbit).
func TestIdealTransferTime(t *testing.T) {
	for _, c := range []struct {
		max  float64
		secs float64
	}{
		{MaxTCPThroughput(1.536e6, 1500, 1460, PPP), 539.32}, // the RFC's 571 uses its rounded 1.4 Mbit/s (below)
		{MaxTCPThroughput(44.21e6, 1500, 1460, PPP), 18.69},
		{MaxTCPThroughput(100e6, 1500, 1460, Ethernet), 8.43},
		{MaxTCPThroughput(1e9, 1500, 1460, Ethernet), 0.843},
		{MaxTCPThroughput(10e9, 1500, 1460, Ethernet), 0.0843},
	} {
		got := IdealTransferTime(100e6, c.max).Seconds()
		near(t, fmt.Sprintf("ideal at %.0f", c.max), got, c.secs, c.secs*0.001)
	}
	// With the RFC's rounded T1 rate of 1.4 Mbit/s: 800e6 / 1.4e6 = 571 s.
	near(t, "T1 rounded", IdealTransferTime(100e6, 1.4e6).Seconds(), 571.43, 0.01)
}

// Vectors 17-19.
func TestTTREfficiencyBufferDelay(t *testing.T) {
	// 5 × 100 MB over a 500 Mbit/s CAR: ideal 8 s; actual 12 s → 1.5.
	ideal := IdealTransferTime(5*100e6, 500e6)
	near(t, "ideal", ideal.Seconds(), 8, 1e-9)
	near(t, "TTR", TTR(12*time.Second, ideal), 1.5, 1e-9)
	near(t, "efficiency", Efficiency(102_000, 2_000), 98.0392, 1e-4)
	near(t, "buffer delay", BufferDelayPct(ms(32), ms(25)), 28, 1e-9)
}

// Vectors 21, 23 and 25: connections and the walk.
func TestConnectionsAndWalk(t *testing.T) {
	bdp := BDPBytes(500e6, ms(5)) // 312,500 B
	for _, c := range []struct{ kb, want int }{{16, 20}, {32, 10}, {64, 5}, {128, 3}} {
		if got := Connections(bdp, float64(c.kb*1000)); got != c.want {
			t.Errorf("connections for %d KB windows = %d, want %d", c.kb, got, c.want)
		}
	}
	if got := Connections(2_000_000, 64_000); got != 32 { // vector 23 (RFC: 2 MB, 64 KB)
		t.Errorf("small office = %d, want 32", got)
	}
	// Scenario 1 (design): 100 Mbit/s, 20 ms: BDP 250,000 B; walk at 25,
	// 50, 75, 100 % with a 64 KiB host limit.
	w := Walk(BDPBytes(100e6, ms(20)), ms(20), 65536, MaxTCPThroughput(100e6, 1500, 1448, Ethernet))
	want := []struct{ win, conns int }{{62_500, 1}, {125_000, 2}, {187_500, 3}, {250_000, 4}}
	for i, s := range w {
		if s.WindowBytes != want[i].win || s.Connections != want[i].conns {
			t.Errorf("step %d%%: %d B over %d connections, want %d over %d", s.Percent, s.WindowBytes, s.Connections, want[i].win, want[i].conns)
		}
	}
	near(t, "ideal at 25 %", w[0].IdealBps, 25e6, 1)
	near(t, "ideal at 100 % (capped)", w[3].IdealBps, 94.143e6, 1e3)
}

// Vector 35: a UDP probe for an IPv4 packet of S bytes carries S − 28.
func TestProbePayload(t *testing.T) {
	if ProbePayload(1500, false) != 1472 || ProbePayload(1280, true) != 1232 {
		t.Fatal("probe payload")
	}
}
