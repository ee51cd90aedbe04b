package lab

import (
	"sort"
	"time"
)

// Profile is a preset path from the design's scenarios.
type Profile struct {
	Name    string
	Teaches string
	Up      Direction
	Down    Direction
}

func sym(d Direction) (Direction, Direction) { return d, d }

func profile(name, teaches string, d Direction) Profile {
	u, dn := sym(d)
	return Profile{Name: name, Teaches: teaches, Up: u, Down: dn}
}

// Profiles are the design's scenarios (../shared/design.md) as lab paths.
// Delays are one-way: an RTT of R is R/2 each way.
var Profiles = map[string]Profile{
	"window": profile("window",
		"scenario 1: 100 Mbit/s, 20 ms RTT, BDP 250,000 B; a 64 KiB window gives about 26 Mbit/s",
		Direction{RateBps: 100e6, Delay: 10 * time.Millisecond, QueueBytes: 375_000}),
	"window45": profile("window45",
		"scenario 1: 45 Mbit/s, 25 ms RTT, BDP about 140 kB; a 64 kB window gives about 20 Mbit/s",
		Direction{RateBps: 45e6, Delay: 12500 * time.Microsecond, QueueBytes: 210_000}),
	"smallbuf": profile("smallbuf",
		"scenario 2: 300 Mbit/s, 50 ms RTT, BDP 1,875,000 B, an edge queue of 64 kB: bursts overflow it",
		Direction{RateBps: 300e6, Delay: 25 * time.Millisecond, QueueBytes: 64_000}),
	"bigbuf": profile("bigbuf",
		"scenario 2 fixed: the same path with a queue of one BDP (1,875,000 B)",
		Direction{RateBps: 300e6, Delay: 25 * time.Millisecond, QueueBytes: 1_875_000}),
	"policed": profile("policed",
		"scenario 2's lesson: 100 Mbit/s policed (no queue), 20 ms RTT: loss at the rate, no added delay",
		Direction{RateBps: 1e9, PoliceBps: 100e6, PoliceBurst: 125_000, Delay: 10 * time.Millisecond, QueueBytes: 1_000_000}),
	"shaped": profile("shaped",
		"scenario 2's lesson: 100 Mbit/s shaped (a 500 kB queue), 20 ms RTT: added delay, little loss",
		Direction{RateBps: 100e6, Delay: 10 * time.Millisecond, QueueBytes: 500_000}),
	"pacific": profile("pacific",
		"scenario 4: 160 ms RTT trans-Pacific path, 1 Gbit/s, light random loss (0.011 %)",
		Direction{RateBps: 1e9, Delay: 80 * time.Millisecond, QueueBytes: 20_000_000, Loss: 0.00011}),
	"atm": profile("atm",
		"scenario 5: half an STM-1 (77.76 Mbit/s) in ATM cells; cell loss 1e-5 destroys whole packets",
		Direction{RateBps: 77_760_000, ATM: true, CellLoss: 1e-5, Delay: 5 * time.Millisecond, QueueBytes: 200_000}),
	"serial": profile("serial",
		"scenario 6: 2 Mbit/s serial line, 100 ms RTT, BER 1e-6; a 16 KB window caps TCP at 1.28 Mbit/s",
		Direction{RateBps: 2e6, Delay: 50 * time.Millisecond, BER: 1e-6, QueueBytes: 64_000}),
	"framerelay": profile("framerelay",
		"scenario 7: 1.5 Mbit/s access, 256 kbit/s CIR, 38 kB switch transmit queue; window vs queue regions",
		Direction{FRAccessBps: 1_500_000, FRCIRBps: 256_000, FRQueueBytes: 38_000, QueuePackets: 30, Delay: 20 * time.Millisecond}),
	"framerelay8k": profile("framerelay8k",
		"scenario 7 with an 8 kB switch queue: overflow starts near 7 MSS of window",
		Direction{FRAccessBps: 1_500_000, FRCIRBps: 256_000, FRQueueBytes: 8_000, QueuePackets: 30, Delay: 20 * time.Millisecond}),
}

// ProfileNames lists the profiles in order.
func ProfileNames() []string {
	var n []string
	for k := range Profiles {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}
