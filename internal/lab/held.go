package lab

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/fullpipe/fullpipe/internal/units"
)

// The lab judges itself. A measurement across the lab is the path's only
// when the forwarder kept the path's schedule while it ran: it lost no
// packet of its own and wrote (almost) every packet within a bound of its
// virtual departure. Mark takes the forwarder's counters before a
// measurement; Since turns two marks into the Account of that interval;
// Account.Judge says whether the lab held its path for a Budget that
// the measurement derives from what it measures (a rate test tolerates
// more lateness than a round-trip test). Holder repeats a measurement
// the lab did not hold.

// Mark is the forwarder's own counters at one instant: per direction (a
// two-ended lab's up and down, or every site's uplink and downlink) and
// its lateness histogram (all directions together).
type Mark struct {
	Name string
	At   time.Time
	Dirs []NamedStats
	Hist []uint64 // packets by lateness, LateBucket wide; the last bucket holds every later one
	// Waits counts the packets read by how long they may have waited in
	// their input device before the forwarder read them (so entered the
	// path late), in the same buckets: the kernel's stamp when the device
	// has a tap, else how long the reader had been away when it found
	// them waiting (an upper bound); 0 for a read that waited for them.
	Waits []uint64
}

// NamedStats is one direction's counters, named ("up", "paris up").
type NamedStats struct {
	Name string
	DirectionStats
}

// Marker is a running lab whose forwarder can be marked: *Lab, *Sites,
// or a lab in another process by name (ByName).
type Marker interface {
	Mark() Mark
}

// Mark reads the forwarder's counters now.
func (l *Lab) Mark() Mark {
	s := l.Snapshot()
	return Mark{Name: l.Name, At: time.Now(), Dirs: []NamedStats{{"up", s.Up}, {"down", s.Down}},
		Hist: addHist(s.Up.LateHist, s.Down.LateHist), Waits: addHist(s.Up.WaitHist, s.Down.WaitHist)}
}

// Mark reads every site's counters now.
func (s *Sites) Mark() Mark {
	m := Mark{Name: s.Config.Name, At: time.Now()}
	for _, st := range s.Stats() {
		m.Dirs = append(m.Dirs, NamedStats{st.Name + " up", st.Up}, NamedStats{st.Name + " down", st.Down})
	}
	m.Hist = s.pipe.histogram()
	m.Waits = s.pipe.waits.read()
	return m
}

// ByName marks the lab called Name through its statistics socket: a
// command run inside a lab (`fullpipe lab exec`) judges the lab its
// measurement crossed.
type ByName string

// Mark asks the lab for its counters; a lab that does not answer gives a
// Mark with no directions, which Since refuses.
func (n ByName) Mark() Mark {
	st, err := ReadStats(string(n))
	m := Mark{Name: string(n), At: time.Now()}
	if err != nil {
		return m
	}
	m.Dirs = []NamedStats{{"up", st.Up}, {"down", st.Down}}
	m.Hist = addHist(st.Up.LateHist, st.Down.LateHist)
	m.Waits = addHist(st.Up.WaitHist, st.Down.WaitHist)
	return m
}

func addHist(hs ...[]uint64) []uint64 {
	out := make([]uint64, lateBuckets)
	for _, h := range hs {
		for i, n := range h {
			out[i] += n
		}
	}
	return out
}

// Account is what the forwarder did between two marks.
type Account struct {
	Name     string
	Interval time.Duration
	Dirs     []NamedStats // each counter the difference over the interval; queue figures as at the end
	Hist     []uint64
	Waits    []uint64 // as Mark's
}

// Since is the account of the interval from m0 to m1 (two marks of one
// lab, m0 first).
func Since(m0, m1 Mark) (Account, error) {
	if len(m0.Dirs) == 0 || len(m0.Dirs) != len(m1.Dirs) || len(m0.Hist) != len(m1.Hist) {
		return Account{}, fmt.Errorf("lab %q: no statistics for the interval (is the lab up?)", m1.Name)
	}
	a := Account{Name: m1.Name, Interval: m1.At.Sub(m0.At), Hist: make([]uint64, len(m1.Hist))}
	for i := range m1.Hist {
		a.Hist[i] = m1.Hist[i] - m0.Hist[i]
	}
	a.Waits = subHist(m1.Waits, m0.Waits)
	for i, d1 := range m1.Dirs {
		d0, d := m0.Dirs[i].DirectionStats, d1.DirectionStats
		d.RxPackets -= d0.RxPackets
		d.RxBytes -= d0.RxBytes
		d.TxPackets -= d0.TxPackets
		d.TxBytes -= d0.TxBytes
		d.ICMPSent -= d0.ICMPSent
		d.ReadDrops -= d0.ReadDrops
		d.ReadStalls -= d0.ReadStalls
		d.InputWaits -= d0.InputWaits
		d.WriteDrops -= d0.WriteDrops
		d.LatePackets -= d0.LatePackets
		d.WriterWakesLate -= d0.WriterWakesLate
		d.WriterWritesSlow -= d0.WriterWritesSlow
		d.WriterLockWaits -= d0.WriterLockWaits
		d.Drops = map[string]uint64{}
		for c, n := range d1.Drops {
			d.Drops[c] = n - d0.Drops[c]
		}
		d.LateHist = subHist(d1.LateHist, d0.LateHist)
		d.WaitHist = subHist(d1.WaitHist, d0.WaitHist)
		d.LabLimited = d.ReadDrops+d.ReadStalls+d.WriteDrops+d.LatePackets > 0
		a.Dirs = append(a.Dirs, NamedStats{d1.Name, d})
	}
	return a, nil
}

// subHist is the histogram h1 less h0 (either trimmed of its trailing
// zeros), lateBuckets long; nil when h1 is (a direction with no lateness
// of its own: a sites lab's sites).
func subHist(h1, h0 []uint64) []uint64 {
	if h1 == nil {
		return nil
	}
	out := make([]uint64, lateBuckets)
	copy(out, h1)
	for i, n := range h0 {
		out[i] -= n
	}
	return out
}

// Toward is the account of the direction called dir alone ("up" or
// "down" of a two-way lab): its counters and its packets' lateness. A
// step whose timing is one direction's (packet trains sent up are timed
// where they arrive; what comes back carries their stamps, not its own
// timing) is judged on that direction. ok is false when the account
// has no such direction with its own lateness (a sites lab).
func (a Account) Toward(dir string) (Account, bool) {
	for _, d := range a.Dirs {
		if d.Name == dir && d.LateHist != nil {
			one := a
			one.Dirs = []NamedStats{d}
			one.Hist = d.LateHist
			one.Waits = d.WaitHist
			return one, true
		}
	}
	return a, false
}

// Budget is how well the forwarder must keep the path's schedule for a
// measurement to be the path's. The forwarder may never lose a packet
// of its own (a test would read it as the path's loss). Of the packets
// it forwarded, at most LateShare may be written more than LateBy after
// their virtual departure; each read stall (the reader was away for more
// than LateLimit with packets waiting, so their arrival stamps are late
// by as much) counts as one such packet. Why is the physics that sets
// LateBy, for the message when the lab did not hold.
type Budget struct {
	LateBy    time.Duration // 0: LateLimit
	LateShare float64       // 0: DefaultLateShare
	// MeanLate bounds the mean lateness of the interval's packets (0:
	// none): what a measurement whose every packet's delay feeds back
	// into what it measures needs (WindowBudget).
	MeanLate time.Duration
	Why      string
}

// WindowBudget is what a TCP transfer limited by its window needs of a
// path of baseline RTT rtt (RFC 6349's walk, sweep and throughput
// steps): it moves a window per round trip, and a forwarder that writes
// each packet late lengthens every round trip by the lateness of its
// data and of its ACK, so the rate falls by their sum over the RTT,
// however few are late by much. The walk is judged within 10 % of W × 8
// / RTT with the window law itself within 5-6 %: the lab may take 2 %,
// so the mean lateness (data and ACKs counted together) may be 1 % of
// the RTT (0.2 ms at 20 ms). A forwarder that falls behind is caught by
// RateBudget's share as well.
func WindowBudget(rtt time.Duration) Budget {
	b := RateBudget
	b.MeanLate = rtt / 100
	b.Why = fmt.Sprintf("a window-limited transfer slows by its packets' lateness over the RTT; 1 %% of %v", rtt)
	return b
}

// Budgets for the two commonest kinds of measurement; one with physics
// of its own derives its own Budget.
var (
	// RateBudget: a rate measured over seconds. A late packet is still
	// delivered, and the emulated link's schedule does not wait for the
	// writer, so lateness moves a count over T only by the bytes written
	// after T's end: 5 ms of lateness is 0.5 % of a 1 s step, under every
	// rate tolerance here. A forwarder that cannot keep the path's rate
	// falls behind without bound (1 % slow is 5 ms behind after 0.5 s),
	// so nearly every packet is more than 5 ms late, or its input queue
	// overflows (own drops), or its reader stalls. 1 % of packets more
	// than 5 ms late tells the two apart. Also what a command run in the
	// lab is judged by (a user's run measures rates and minima).
	RateBudget = Budget{LateBy: 5 * time.Millisecond, LateShare: 0.01, Why: "a forwarder that cannot keep the rate falls behind without bound"}
	// CountBudget: the measurement counts packets (drops, answers) or
	// only needs them delivered, or judges minima; lateness moves none of
	// them, the forwarder's own drops (always refused) would.
	CountBudget = Budget{LateShare: 1, Why: "a count moves only with the forwarder's own drops"}
	// ProbeBudget: a search by probes (the path MTU step) counts each
	// probe answered or not within its timeout, at least 100 ms
	// (tester.PMTU): lateness moves an answer only past that, so a
	// packet is late only past what the histogram resolves (10 ms), and
	// 1 % of them may be, as RateBudget allows at 5 ms: never stricter.
	// RateBudget's 5 ms judged one probe of 73 late by it (CI run 18) a
	// lab that did not hold.
	ProbeBudget = Budget{LateBy: lateBuckets*LateBucket - LateBucket, LateShare: 0.01,
		Why: "a probe is lost to the search only when its answer comes after the timeout (at least 100 ms)"}
	// TrainBudget: packet trains, which read a rate from the spacing of
	// a train's packets (RFC 6349's shaping step, `fullpipe trains`). A
	// forwarder that writes a 64-packet train at r' instead of the
	// path's r writes its last packet late by 64 × s × (1 − r'/r) for a
	// packet time s, which for the 20 % a rate read by trains may be
	// off is 0.5 ms at 300 Mbit/s (s = 40 µs). Random lateness the
	// trains measure themselves (the spread of their tails' delays is
	// in their error bars); a forwarder that is slow for whole trains is
	// late for much of the step. Measured on a 2-core machine: quiet
	// runs write under 0.5 % of packets more than 0.5 ms late, and a run
	// at load 9 whose trains read a 300 Mbit/s link as 261 Mbit/s (13 %
	// low) wrote 8.3 % so late. A step is the path's when at most 2 % of
	// its packets were.
	TrainBudget = Budget{LateBy: 500 * time.Microsecond, LateShare: 0.02,
		Why: "a 64-packet train written 20 % slower than 300 Mbit/s ends 0.5 ms late"}
)

// TrainBudgetFor is TrainBudget on a lab of config c, by its own
// physics: a 64-packet train written 20 % slower than its path's rate r
// ends 12.8 packet times late (a 1538-byte frame's at r: 0.52 ms at 300
// Mbit/s, 1.6 ms at 100 Mbit/s, 79 ms at 2 Mbit/s, which the lateness
// histogram resolves to under 10 ms). A policer's bucket is read as the
// head's bytes less the tokens that came back while it passed, R ×
// lateness, so within 20 % it needs lateness under a fifth of the
// bucket's time (B / R). r is each direction's line rate (or frame
// relay's access line), the rate a train's head arrives at when a
// policer or a slower queue behind the line reads its tail: the stricter
// of the two readings. Only without a line, the policer's rate or the
// CIR. The stricter direction decides. It is
// never tighter than TrainBudget (0.5 ms), the bound every lab run of
// the trains, the tiny buckets' included, has been held to; a path with
// no rate limit keeps it.
func TrainBudgetFor(c Config) Budget {
	b := TrainBudget
	late := time.Duration(math.MaxInt64)
	for _, d := range []Direction{c.Up, c.Down} {
		r := firstSet(d.RateBps, d.FRAccessBps, d.PoliceBps, d.FRCIRBps)
		if r == 0 {
			return b
		}
		l := time.Duration(12.8 * 1538 * 8 / float64(r) * 1e9)
		if d.PoliceBps > 0 && d.PoliceBurst > 0 {
			l = min(l, time.Duration(0.2*float64(d.PoliceBurst)*8/float64(d.PoliceBps)*1e9))
		}
		late = min(late, l)
	}
	if late > b.LateBy {
		b.LateBy = late
		b.Why = fmt.Sprintf("a 64-packet train written 20 %% slower than this path's rate ends %s late (12.8 packet times; for a policer, at most a fifth of its bucket time)", units.FormatDuration(late))
	}
	return b
}

// firstSet is the first rate that is set (0: none is).
func firstSet(rates ...int64) int64 {
	for _, r := range rates {
		if r > 0 {
			return r
		}
	}
	return 0
}

// TrainBudgetOf is TrainBudgetFor the lab m marks: a lab in this process
// by its config, one called by name by the config in its state file;
// TrainBudget when neither can be read.
func TrainBudgetOf(m Marker) Budget {
	switch l := m.(type) {
	case *Lab:
		return TrainBudgetFor(l.Config)
	case ByName:
		if s, err := ReadState(string(l)); err == nil {
			return TrainBudgetFor(s.Config)
		}
	}
	return TrainBudget
}

// DefaultLateShare is the share of packets a measurement tolerates late
// by more than its LateBy: one in a thousand. A late packet is still
// delivered; it distorts only what it carries (its own delay, its place
// in a train), and one in a thousand moves a percentile below p99.9 by
// at most one rank.
const DefaultLateShare = 0.001

// LateThreshold is how late a packet may be written before it is late
// for the budget: LateBy, or LateLimit when LateBy is 0, at most what
// the lateness histogram resolves.
func (b Budget) LateThreshold() time.Duration {
	if b.LateBy <= 0 {
		return LateLimit
	}
	return min(b.LateBy, lateBuckets*LateBucket-LateBucket)
}

func (b Budget) share() float64 {
	if b.LateShare <= 0 {
		return DefaultLateShare
	}
	return b.LateShare
}

// Forwarded is how many packets the forwarder wrote in the interval, in
// all directions: the lateness histogram's total, one count per write
// (a sites lab's directions count a packet twice, once leaving its
// source's uplink and once written into its destination).
func (a Account) Forwarded() uint64 {
	var n uint64
	for _, c := range a.Hist {
		n += c
	}
	return n
}

// MeanLate is the mean lateness of the interval's packets, each counted
// at the middle of its LateBucket, those in the last bucket (later than
// the histogram resolves) at its start: a lower bound when any are.
func (a Account) MeanLate() time.Duration {
	var n, sum float64
	for i, c := range a.Hist {
		at := (float64(i) + 0.5) * float64(LateBucket)
		if i == len(a.Hist)-1 && len(a.Hist) == lateBuckets {
			at = float64(i) * float64(LateBucket)
		}
		n += float64(c)
		sum += float64(c) * at
	}
	if n == 0 {
		return 0
	}
	return time.Duration(sum / n)
}

// Late is how many packets were written more than by after their
// virtual departure (from the histogram: late by at least by rounded
// down to LateBucket), of Forwarded.
func (a Account) Late(by time.Duration) uint64 { return atLeast(a.Hist, by) }

// Waited is how many packets may have waited more than by in their
// input device before the forwarder read them, of Read: the path took
// them in late by as much, which moves what a measurement reads as a
// late write does (a train's spacing, a policer's tokens).
func (a Account) Waited(by time.Duration) uint64 { return atLeast(a.Waits, by) }

// Read is how many packets the forwarder read in the interval (those a
// policer or a queue then dropped too).
func (a Account) Read() uint64 { return atLeast(a.Waits, 0) }

// atLeast sums the histogram's buckets from by's (rounded down to
// LateBucket) on.
func atLeast(h []uint64, by time.Duration) uint64 {
	var n uint64
	for i := int(by / LateBucket); i < len(h); i++ {
		n += h[i]
	}
	return n
}

// OwnDrops is how many packets the forwarder lost itself: the kernel's
// drops at its input devices and its failed writes.
func (a Account) OwnDrops() uint64 {
	var n uint64
	for _, d := range a.Dirs {
		n += d.ReadDrops + d.WriteDrops
	}
	return n
}

// Judge says whether the lab held its path over the interval for budget
// b: nil, or a *LimitedError with the lab's own figures.
func (a Account) Judge(b Budget) error {
	by := b.LateThreshold()
	fw, late, drops := a.Forwarded(), a.Late(by), a.OwnDrops()
	// Each share is of its own packets: those written (a policer's drops
	// are never written) and those read. A share of 1 tolerates every
	// packet late, and so any wait too: one in an interval that wrote
	// nothing (its packets were the path's to drop) is no more than that.
	lateOK := b.share() >= 1 || float64(late) <= b.share()*float64(fw) && float64(a.Waited(by)) <= b.share()*float64(a.Read())
	if drops == 0 && lateOK && (b.MeanLate <= 0 || a.MeanLate() <= b.MeanLate) {
		return nil
	}
	return &LimitedError{Account: a, Budget: b}
}

// LimitedError is a measurement the lab did not hold.
type LimitedError struct {
	Account Account
	Budget  Budget
	Tries   int // how many runs were tried, all limited (Holder)
	// Said is the account of a measurement that judged the lab itself
	// (a command run in the lab says so in its document, step by step);
	// when set it is the error's text.
	Said string
}

func (e *LimitedError) Error() string {
	if e.Said != "" {
		if e.Tries > 1 {
			return fmt.Sprintf("in every one of %d tries; the last: %s", e.Tries, e.Said)
		}
		return e.Said
	}
	a, b := e.Account, e.Budget
	fw := a.Forwarded()
	by := b.LateThreshold()
	late := a.Late(by)
	var s strings.Builder
	fmt.Fprintf(&s, "LAB-LIMITED: lab %q could not hold its path", a.Name)
	if e.Tries > 1 {
		fmt.Fprintf(&s, " in any of %d tries; the last, over %.1f s", e.Tries, a.Interval.Seconds())
	} else {
		fmt.Fprintf(&s, " over %.1f s", a.Interval.Seconds())
	}
	fmt.Fprintf(&s, ": %s of %d packets written more than %s late, %s of %d read after waiting as long (budget %s", pct(late, fw), fw,
		units.FormatDuration(by), pct(a.Waited(by), a.Read()), a.Read(), pctOf(b.share()))
	if b.MeanLate > 0 {
		fmt.Fprintf(&s, "), mean lateness %s (budget %s", units.FormatDuration(a.MeanLate()), units.FormatDuration(b.MeanLate))
	}
	if b.Why != "" {
		fmt.Fprintf(&s, ": %s", b.Why)
	}
	fmt.Fprintf(&s, "), %d lost by the forwarder itself", a.OwnDrops())
	for _, d := range a.Dirs {
		if d.TxPackets == 0 && d.RxPackets == 0 {
			continue
		}
		fmt.Fprintf(&s, "; %s forwarded %s (mean %s), read stalls %d, forwarder drops %d",
			d.Name, units.FormatBytes(float64(d.TxBytes)), units.FormatRate(float64(d.TxBytes)*8/max(a.Interval.Seconds(), 1e-9)),
			d.ReadStalls, d.ReadDrops+d.WriteDrops)
		if d.WriterWakesLate+d.WriterWritesSlow+d.WriterLockWaits > 0 {
			fmt.Fprintf(&s, ", its writer held more than %s %d times waking, %d writing, %d waiting for a reader",
				units.FormatDuration(StallLimit), d.WriterWakesLate, d.WriterWritesSlow, d.WriterLockWaits)
		}
	}
	fmt.Fprintf(&s, ". This host cannot emulate this path now%s; the figures measured are the lab's, not the path's", loadNote())
	return s.String()
}

func pct(n, of uint64) string {
	if of == 0 {
		return fmt.Sprintf("%d", n)
	}
	return pctOf(float64(n) / float64(of))
}

func pctOf(f float64) string { return fmt.Sprintf("%.3g %%", 100*f) }

// loadNote is the host's load average, when it can be read.
func loadNote() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return fmt.Sprintf(" (load average %s %s %s)", f[0], f[1], f[2])
}

// EnvHeldLog names a file to which the tests' held runs append one line
// per run the lab did not hold and per measurement held (`.ci/run` sets
// it and prints the file: go test shows no log of a passing package).
const EnvHeldLog = "FULLPIPE_HELD_LOG"

// NoteHeld appends line, prefixed with the time, to $FULLPIPE_HELD_LOG
// when it is set; it never fails a measurement.
func NoteHeld(line string) {
	p := os.Getenv(EnvHeldLog)
	if p == "" {
		return
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s\n", time.Now().UTC().Format(time.TimeOnly), line)
}

// Holder runs a measurement until the lab held its path over one run:
// at most Tries runs (0: 3), Pause apart (0: 5 s, long enough for a
// burst of other work on the host to pass). Logf, when set, is told of
// each limited run.
type Holder struct {
	Lab    Marker
	Budget Budget
	Tries  int
	Pause  time.Duration
	Logf   func(format string, args ...any)
}

// Run calls measure (with the try, from 1) until the lab held its path
// over a call, and returns that call's account. A measurement that
// judges the lab itself (a document's per-step accounts) returns a
// *LimitedError with Said set when it was not held, and is repeated as
// if the Holder had judged it. Any other error of measure's own ends it
// at once. When no run was held it returns a *LimitedError
// with the last run's figures; when ctx ends, ctx's error.
func (h Holder) Run(ctx context.Context, measure func(try int) error) (Account, error) {
	tries, pause := h.Tries, h.Pause
	if tries <= 0 {
		tries = 3
	}
	if pause <= 0 {
		pause = 5 * time.Second
	}
	var last error
	for try := 1; try <= tries; try++ {
		m0 := h.Lab.Mark()
		merr := measure(try)
		var said *LimitedError
		if merr != nil && !errors.As(merr, &said) {
			return Account{}, merr
		}
		a, err := Since(m0, h.Lab.Mark())
		if err != nil {
			return Account{}, err
		}
		last = a.Judge(h.Budget)
		if last == nil && said != nil {
			last = said
		}
		if last == nil {
			return a, nil
		}
		if h.Logf != nil {
			h.Logf("try %d of %d: %v", try, tries, last)
		}
		if try == tries {
			break
		}
		select {
		case <-ctx.Done():
			return a, ctx.Err()
		case <-time.After(pause):
		}
	}
	var le *LimitedError
	if errors.As(last, &le) {
		le.Tries = tries
	}
	return Account{}, last
}

// LateQuantile is the q-quantile of how late the interval's packets
// were written (a bucket's upper bound; 0 when none were forwarded).
func (a Account) LateQuantile(q float64) time.Duration {
	var total uint64
	for _, n := range a.Hist {
		total += n
	}
	if total == 0 {
		return 0
	}
	want := uint64(q * float64(total))
	var cum uint64
	for i, n := range a.Hist {
		cum += n
		if cum >= want {
			return time.Duration(i+1) * LateBucket
		}
	}
	return time.Duration(len(a.Hist)) * LateBucket
}

// Summary is the account in one line, for a budget: what a held run's
// test logs beside its figures.
func (a Account) Summary(b Budget) string {
	fw := a.Forwarded()
	mean := ""
	if b.MeanLate > 0 {
		mean = fmt.Sprintf(" (budget %s)", units.FormatDuration(b.MeanLate))
	}
	by := b.LateThreshold()
	return fmt.Sprintf("lab %q over %.1f s: %d packets forwarded, %s late by more than %s, %s of %d read after waiting as long (budget %s), mean lateness %s%s, p99 %s, %d lost by the forwarder",
		a.Name, a.Interval.Seconds(), fw, pct(a.Late(by), fw), units.FormatDuration(by), pct(a.Waited(by), a.Read()), a.Read(), pctOf(b.share()),
		units.FormatDuration(a.MeanLate()), mean, units.FormatDuration(a.LateQuantile(0.99)), a.OwnDrops())
}
