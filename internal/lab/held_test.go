package lab

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// mark builds a mark of a two-ended lab: up forwarded packets, late of
// them written lateBy late, plus the forwarder's own drops and packets
// read after waiting lateBy in the input device.
func mark(at time.Time, packets, late uint64, lateBy time.Duration, drops, waited uint64) Mark {
	h, w := make([]uint64, lateBuckets), make([]uint64, lateBuckets)
	h[0] = packets - late
	h[min(int(lateBy/LateBucket), lateBuckets-1)] += late
	w[0] = packets - waited
	w[min(int(lateBy/LateBucket), lateBuckets-1)] += waited
	up := DirectionStats{TxPackets: packets, TxBytes: packets * 1500, WriteDrops: drops}
	return Mark{Name: "t", At: at, Dirs: []NamedStats{{"up", up}, {"down", DirectionStats{}}}, Hist: h, Waits: w}
}

// TestAccountJudge: the budget's late share and its threshold, drops
// never allowed, and a message with the lab's own figures.
func TestAccountJudge(t *testing.T) {
	t0 := time.Unix(0, 0)
	base := mark(t0, 1000, 0, 0, 0, 0)
	for _, c := range []struct {
		name          string
		packets, late uint64
		lateBy        time.Duration
		drops, waited uint64
		budget        Budget
		held          bool
		inMessage     string
	}{
		// 100,000 more packets, 100 of them 2 ms late: exactly 0.1 %; 5,000
		// (5 %) 300 µs late.
		{"at the default share", 101_000, 100, 2 * time.Millisecond, 0, 0, Budget{}, true, ""},
		{"one over it", 101_000, 101, 2 * time.Millisecond, 0, 0, Budget{}, false, "0.101 % of 100000 packets written more than 1.00 ms late"},
		// 300 µs late is not late for the default 1 ms, is for 200 µs.
		{"under LateBy", 101_000, 5_000, 300 * time.Microsecond, 0, 0, Budget{}, true, ""},
		{"over a tighter LateBy", 101_000, 5_000, 300 * time.Microsecond, 0, 0, Budget{LateBy: 200 * time.Microsecond, Why: "a tenth of the RTT tolerance"}, false, "a tenth of the RTT tolerance"},
		{"one own drop", 101_000, 0, 2 * time.Millisecond, 1, 0, Budget{}, false, "1 lost by the forwarder itself"},
		{"input waits count as late", 101_000, 0, 2 * time.Millisecond, 0, 101, Budget{}, false, "0 % of 100000 packets written more than 1.00 ms late, 0.101 % of 100000 read after waiting as long"},
		{"input waits under LateBy", 101_000, 0, 300 * time.Microsecond, 0, 5_000, Budget{}, true, ""},
		// A window at 20 ms: mean lateness at most 0.2 ms. 30 % of packets
		// 0.6 ms late (bucket middles: 0.605 ms, the rest 5 µs) are a
		// mean of 185 µs; 40 % are 245 µs. Neither is late for RateBudget.
		{"a window's mean held", 101_000, 30_000, 600 * time.Microsecond, 0, 0, WindowBudget(20 * time.Millisecond), true, ""},
		{"a window's mean over", 101_000, 40_000, 600 * time.Microsecond, 0, 0, WindowBudget(20 * time.Millisecond), false, "mean lateness 245 µs (budget 200 µs"},
		{"the same for a rate", 101_000, 40_000, 600 * time.Microsecond, 0, 0, RateBudget, true, ""},
		// TestSitesMTU's try in CI: the path dropped every packet it
		// read, one read after a wait, nothing written: "1 of 0 packets
		// late" limited a count that lateness does not move.
		{"a count, a wait, nothing written", 1000, 0, 2 * time.Millisecond, 0, 1, CountBudget, true, ""},
		{"a count, an own drop", 1000, 0, 0, 1, 0, CountBudget, false, "1 lost by the forwarder itself"},
		// CI run 18's path MTU step: 73 packets, one of them over 5 ms
		// late, against probes that wait at least 100 ms for an answer.
		{"a probe 6 ms late", 1073, 1, 6 * time.Millisecond, 0, 0, ProbeBudget, true, ""},
		{"the same for a rate", 1073, 1, 6 * time.Millisecond, 0, 0, RateBudget, false, "1.37 % of 73 packets written more than 5.00 ms late"},
		{"a probe later than resolved", 1073, 1, 20 * time.Millisecond, 0, 0, ProbeBudget, false, "more than 9.99 ms late"},
		{"1 % later than resolved", 11_000, 100, 20 * time.Millisecond, 0, 0, ProbeBudget, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := Since(base, mark(t0.Add(10*time.Second), c.packets, c.late, c.lateBy, c.drops, c.waited))
			if err != nil {
				t.Fatal(err)
			}
			if a.Interval != 10*time.Second || a.Forwarded() != c.packets-1000 {
				t.Fatalf("interval %v, forwarded %d; want 10s, %d", a.Interval, a.Forwarded(), c.packets-1000)
			}
			err = a.Judge(c.budget)
			if (err == nil) != c.held {
				t.Fatalf("held %v, want %v (%v)", err == nil, c.held, err)
			}
			if err != nil && !strings.Contains(err.Error(), c.inMessage) {
				t.Errorf("message %q lacks %q", err, c.inMessage)
			}
		})
	}
	if _, err := Since(Mark{Name: "gone"}, base); err == nil {
		t.Error("an empty mark (a lab that did not answer) gave an account")
	}
}

// fakeMarker forwards 1000 packets per measurement, late ones while
// busy says so.
type fakeMarker struct {
	packets, late uint64
}

func (f *fakeMarker) Mark() Mark {
	return mark(time.Now(), f.packets, f.late, 5*time.Millisecond, 0, 0)
}

// TestHolder: a limited run is repeated after the pause, a held one
// ends the repeats, and three limited runs give the lab's figures; on
// fake time, so the pauses are exact.
func TestHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeMarker{packets: 1}
		busyTries := 2
		start := time.Now()
		var tries []int
		h := Holder{Lab: f, Pause: 5 * time.Second}
		a, err := h.Run(context.Background(), func(try int) error {
			tries = append(tries, try)
			f.packets += 1000
			if try <= busyTries {
				f.late += 10
			}
			time.Sleep(time.Second) // fake time: the measurement
			return nil
		})
		if err != nil || len(tries) != 3 || a.Forwarded() != 1000 {
			t.Fatalf("tries %v, account %d packets, err %v; want the third run held", tries, a.Forwarded(), err)
		}
		if d := time.Since(start); d != 3*time.Second+2*5*time.Second {
			t.Errorf("took %v, want 3 runs of 1 s and 2 pauses of 5 s", d)
		}

		busyTries = 3
		tries = nil
		_, err = h.Run(context.Background(), func(try int) error {
			tries = append(tries, try)
			f.packets += 1000
			f.late += 10
			return nil
		})
		var le *LimitedError
		if !errors.As(err, &le) || le.Tries != 3 || len(tries) != 3 {
			t.Fatalf("tries %v, err %v; want a LimitedError after 3", tries, err)
		}
		if !strings.Contains(err.Error(), "in any of 3 tries") || !strings.Contains(err.Error(), "1 % of 1000 packets") {
			t.Errorf("message %q", err)
		}

		want := errors.New("the measurement's own failure")
		tries = nil
		if _, err := h.Run(context.Background(), func(try int) error { tries = append(tries, try); return want }); err != want || len(tries) != 1 {
			t.Errorf("err %v after %v; a measurement's own error ends it at once", err, tries)
		}
	})
}

// TestTrainBudgetFor: the trains' lateness bound follows each path's
// rate (12.8 packet times of a 1538-byte frame), a policer's bucket (a
// fifth of its time) and never falls below TrainBudget's 0.5 ms.
func TestTrainBudgetFor(t *testing.T) {
	both := func(d Direction) Config { return Config{Up: d, Down: d} }
	for _, c := range []struct {
		name string
		cfg  Config
		want time.Duration
	}{
		{"smallbuf, 300 Mbit/s", both(Profiles["smallbuf"].Up), 524_970 * time.Nanosecond},
		{"window, 100 Mbit/s", both(Profiles["window"].Up), 1_574_912 * time.Nanosecond},
		{"serial, 2 Mbit/s", both(Profiles["serial"].Up), 78_745_600 * time.Nanosecond},
		{"policed on a 1 Gbit/s line: the head's rate", both(Profiles["policed"].Up), TrainBudget.LateBy},
		{"a 120 Mbit/s policer with 1 ms of bucket, no line", both(Direction{PoliceBps: 120e6, PoliceBurst: 15_000}), TrainBudget.LateBy},
		{"a 60 Mbit/s policer with 20 ms of bucket", both(Direction{PoliceBps: 60e6, PoliceBurst: 150_000}), 2_624_853 * time.Nanosecond},
		{"unlimited", both(Direction{}), TrainBudget.LateBy},
		{"300 Mbit/s up, 2 Mbit/s down: the stricter", Config{Up: Profiles["smallbuf"].Up, Down: Profiles["serial"].Up}, 524_970 * time.Nanosecond},
		{"frame relay: the access line", both(Profiles["framerelay"].Up), 104_994_133 * time.Nanosecond},
	} {
		b := TrainBudgetFor(c.cfg)
		if d := b.LateBy - c.want; d < -time.Microsecond || d > time.Microsecond || b.LateShare != TrainBudget.LateShare {
			t.Errorf("%s: late by %v (share %v), want %v (%v)", c.name, b.LateBy, b.LateShare, c.want, TrainBudget.LateShare)
		}
	}
	if th := TrainBudgetFor(Config{Up: Profiles["serial"].Up, Down: Profiles["serial"].Up}).LateThreshold(); th != 9990*time.Microsecond {
		t.Errorf("a 79 ms bound's threshold is %v, want what the histogram resolves (9.99 ms)", th)
	}
}

// TestWriterStalls: a wait of the writer is a stall only past
// StallLimit, counted into every output it serves by kind; an account
// takes the interval's stalls, and a LAB-LIMITED message names them.
func TestWriterStalls(t *testing.T) {
	a, b := &DirStats{}, &DirStats{}
	p := &pipe{tx: []*DirStats{a, b}}
	p.stalled(stallWake, StallLimit) // at the limit: not a stall
	p.stalled(stallWake, StallLimit+time.Nanosecond)
	p.stalled(stallWrite, 4*time.Millisecond)
	p.stalled(stallLock, time.Millisecond)
	p.stalled(stallLock, time.Millisecond)
	for i, st := range []*DirStats{a, b} {
		if w, wr, l := st.WriterStalls[stallWake].Load(), st.WriterStalls[stallWrite].Load(), st.WriterStalls[stallLock].Load(); w != 1 || wr != 1 || l != 2 {
			t.Errorf("output %d: stalls waking %d, writing %d, locking %d; want 1, 1, 2", i, w, wr, l)
		}
	}
	path := Build(Direction{RateBps: 1e6}, FramingEthernet, 1, nil, nil)
	d := readStats(a, path)
	if d.WriterWakesLate != 1 || d.WriterWritesSlow != 1 || d.WriterLockWaits != 2 {
		t.Fatalf("statistics %+v", d)
	}
	t0 := time.Unix(0, 0)
	m0, m1 := mark(t0, 1000, 0, 0, 0, 0), mark(t0.Add(time.Second), 2000, 100, 2*time.Millisecond, 0, 0)
	m0.Dirs[0].DirectionStats.WriterWakesLate = 5
	m1.Dirs[0].DirectionStats.WriterWakesLate, m1.Dirs[0].DirectionStats.WriterWritesSlow = 8, 2
	acc, err := Since(m0, m1)
	if err != nil {
		t.Fatal(err)
	}
	if up := acc.Dirs[0].DirectionStats; up.WriterWakesLate != 3 || up.WriterWritesSlow != 2 || up.WriterLockWaits != 0 {
		t.Errorf("account's stalls %+v: want 3 waking, 2 writing, 0 locking", up)
	}
	err = acc.Judge(Budget{}) // 100 of 1000 packets 2 ms late
	if want := "its writer held more than 500 µs 3 times waking, 2 writing, 0 waiting for a reader"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("message %v lacks %q", err, want)
	}
}

// TestAccountToward: a trains step is judged on the direction its
// trains crossed. Up wrote 400 packets, 4 of them 1 ms late; down wrote
// 200 replies, 20 of them 1 ms late. Both together are 4 % late against
// the 2 % of TrainBudget; up alone 1 %. A sites lab's directions have
// no lateness of their own: the whole account stands.
func TestAccountToward(t *testing.T) {
	hist := func(packets, late uint64) []uint64 {
		h := make([]uint64, lateBuckets)
		h[0], h[100] = packets-late, late
		return h
	}
	at := func(t time.Time, up, upLate, down, downLate uint64) Mark {
		u := DirectionStats{TxPackets: up, LateHist: trimZeros(hist(up, upLate))}
		d := DirectionStats{TxPackets: down, LateHist: trimZeros(hist(down, downLate))}
		return Mark{Name: "t", At: t, Dirs: []NamedStats{{"up", u}, {"down", d}}, Hist: addHist(u.LateHist, d.LateHist)}
	}
	t0 := time.Unix(0, 0)
	a, err := Since(at(t0, 1000, 0, 500, 0), at(t0.Add(3*time.Second), 1400, 4, 700, 20))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Judge(TrainBudget); err == nil {
		t.Errorf("both directions: held, want limited (24 of 600 late)")
	}
	up, ok := a.Toward("up")
	if !ok || up.Forwarded() != 400 || up.Late(TrainBudget.LateBy) != 4 || len(up.Dirs) != 1 {
		t.Fatalf("toward up: ok %v, %d forwarded, %d late, %d directions; want 400, 4, 1", ok, up.Forwarded(), up.Late(TrainBudget.LateBy), len(up.Dirs))
	}
	if err := up.Judge(TrainBudget); err != nil {
		t.Errorf("up alone: %v, want held", err)
	}
	if down, _ := a.Toward("down"); down.Judge(TrainBudget) == nil {
		t.Errorf("down alone (20 of 200 late): held, want limited")
	}
	sites := Account{Name: "s", Dirs: []NamedStats{{"a up", DirectionStats{}}}, Hist: hist(10, 1)}
	if s, ok := sites.Toward("up"); ok || s.Forwarded() != 10 {
		t.Errorf("sites: ok %v, %d forwarded; want the whole account (10)", ok, s.Forwarded())
	}
}
