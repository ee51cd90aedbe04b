package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/kinds"
	"github.com/fullpipe/fullpipe/internal/lab"
	"github.com/fullpipe/fullpipe/internal/method"
	"github.com/fullpipe/fullpipe/internal/result"
)

// stepMarker is a lab whose forwarder moves packets each time it is
// marked, late of them written lateAt × 10 µs late (9 ms when 0).
type stepMarker struct {
	packets, late uint64
	fwd, lateNext uint64
	lateAt        int
	down          bool
}

func (s *stepMarker) Mark() lab.Mark {
	if s.down {
		return lab.Mark{Name: "fp"}
	}
	h := make([]uint64, 1000)
	at := s.lateAt
	if at == 0 {
		at = 900
	}
	h[0], h[at] = s.packets-s.late, s.late
	m := lab.Mark{Name: "fp", At: time.Unix(int64(s.packets), 0), Hist: h,
		Dirs: []lab.NamedStats{{Name: "up", DirectionStats: lab.DirectionStats{TxPackets: s.packets, TxBytes: 1500 * s.packets}}}}
	s.packets += s.fwd
	s.late += s.lateNext
	return m
}

// TestLabWatchStamps: a test run in a lab records the lab's account in
// its document, and a lab that did not hold its path (or cannot say)
// makes the text and the HTML report say LAB-LIMITED.
func TestLabWatchStamps(t *testing.T) {
	for _, c := range []struct {
		name    string
		m       *stepMarker
		limited bool
		text    string
	}{
		{"held", &stepMarker{packets: 1, fwd: 10_000, lateNext: 100}, false, "lab: held its path: lab \"fp\""},
		{"late", &stepMarker{packets: 1, fwd: 10_000, lateNext: 101}, true, "LAB-LIMITED: lab \"fp\" could not hold its path"},
		{"unreadable", &stepMarker{down: true}, true, "LAB-LIMITED: whether the lab held its path is unknown"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := watch(c.m)
			d := &result.RTT{Meta: result.Meta{Test: "rtt"}}
			w.stamp(&d.Meta, 0)
			l := d.Meta.Lab
			if l == nil || l.LabLimited != c.limited || l.Name != "fp" {
				t.Fatalf("lab %+v, want limited %v", l, c.limited)
			}
			if !c.m.down && (l.ForwardedPackets != 10_000 || l.LatePackets != c.m.lateNext || l.LateByUs != 5000) {
				t.Errorf("lab %+v: want 10,000 forwarded, %d late by 5 ms", l, c.m.lateNext)
			}
			var text bytes.Buffer
			if err := kinds.Text(&text, d); err != nil || !strings.Contains(text.String(), c.text) {
				t.Errorf("text %q (%v) lacks %q", text.String(), err, c.text)
			}
			page, err := kinds.HTML(d)
			if err != nil || strings.Contains(string(page), "LAB-LIMITED") != c.limited {
				t.Errorf("HTML says LAB-LIMITED %v, want %v (%v)", !c.limited, c.limited, err)
			}
		})
	}
}

// TestLabWatchSteps: each step is judged by what it measures. 3 % of a
// step's packets written 0.6 ms late are within a rate's budget (1 %
// more than 5 ms) but not a packet train's (2 % more than 0.5 ms): the
// trains' account is lab-limited and so the run, named by that step; a
// walk step so late holds, and so does the run.
func TestLabWatchSteps(t *testing.T) {
	for _, c := range []struct {
		step    method.Step
		limited bool
	}{{method.StepTrains, true}, {method.StepWalk, false}} {
		t.Run(string(c.step), func(t *testing.T) {
			w := watch(&stepMarker{packets: 1, fwd: 10_000, lateNext: 300, lateAt: 60})
			w.note(method.Event{Kind: method.Started, Step: c.step})
			w.note(method.Event{Kind: method.Line, Step: c.step})
			w.note(method.Event{Kind: method.Finished, Step: c.step})
			var m result.Meta
			w.stamp(&m, 0)
			l := m.Lab
			if len(l.Steps) != 1 || l.Steps[0].Step != string(c.step) {
				t.Fatalf("steps %+v, want one %s", l.Steps, c.step)
			}
			s := l.Steps[0]
			if s.LabLimited != c.limited || s.ForwardedPackets != 10_000 {
				t.Errorf("step %+v: want limited %v over 10,000 packets", s, c.limited)
			}
			if l.LabLimited != c.limited || strings.Contains(l.Account, "(step "+string(c.step)+")") != c.limited {
				t.Errorf("run limited %v (%s), want %v, named by its step", l.LabLimited, l.Account, c.limited)
			}
		})
	}
}

// TestLabWatchNested: RFC 6349's trains run within its shaping step; each
// gets its own account over its own interval (the trains' marks nest in
// the shaping step's), the trains judged as trains and the shaping step
// as rates.
func TestLabWatchNested(t *testing.T) {
	m := &stepMarker{packets: 1, fwd: 10_000, lateNext: 300, lateAt: 60}
	w := watch(m)
	w.note(method.Event{Kind: method.Started, Step: method.StepShaping})
	w.note(method.Event{Kind: method.Started, Step: method.StepTrains, Direction: "up"})
	w.note(method.Event{Kind: method.Finished, Step: method.StepTrains, Direction: "up"})
	w.note(method.Event{Kind: method.Finished, Step: method.StepShaping})
	var meta result.Meta
	w.stamp(&meta, 0)
	st := meta.Lab.Steps
	if len(st) != 2 || st[0].Step != "trains up" || st[1].Step != "shaping" {
		t.Fatalf("steps %+v: want trains up, then shaping", st)
	}
	if !st[0].LabLimited || st[0].ForwardedPackets != 10_000 || st[1].LabLimited || st[1].ForwardedPackets != 30_000 {
		t.Errorf("trains %+v, shaping %+v: want the trains limited over their 10,000 packets, the shaping step held over 30,000", st[0].LabAccount, st[1].LabAccount)
	}
}

// TestLabWatchWindow: a window-limited step (RFC 6349's walk) is judged
// by its mean lateness against the document's baseline RTT: 40 % of its
// packets 0.6 ms late (a mean of 245 µs) slow a 20 ms window by more
// than the 2 % the lab may take, and the run is lab-limited, though no
// packet was 5 ms late; on a 100 ms path, or with no RTT known, it holds.
func TestLabWatchWindow(t *testing.T) {
	for _, c := range []struct {
		rtt     time.Duration
		limited bool
	}{{20 * time.Millisecond, true}, {100 * time.Millisecond, false}, {0, false}} {
		w := watch(&stepMarker{packets: 1, fwd: 10_000, lateNext: 4000, lateAt: 60})
		w.note(method.Event{Kind: method.Started, Step: method.StepWalk})
		w.note(method.Event{Kind: method.Finished, Step: method.StepWalk})
		var m result.Meta
		w.stamp(&m, c.rtt)
		if s := m.Lab.Steps[0]; s.LabLimited != c.limited || m.Lab.LabLimited != c.limited {
			t.Errorf("RTT %v: walk %+v, run limited %v; want %v", c.rtt, s.LabAccount, m.Lab.LabLimited, c.limited)
		}
	}
}

// TestLabWatchProbes: the path MTU search waits at least 100 ms for each
// probe's answer, so a probe written 6 ms late moves nothing: its step,
// and `fullpipe mtu` (a command of that one step) as a whole, are judged
// by lab.ProbeBudget and held (CI run 18: one probe of 73 made a run
// lab-limited by RateBudget's 5 ms); the same lateness in a UDP test is
// over RateBudget's 1 %.
func TestLabWatchProbes(t *testing.T) {
	for _, c := range []struct {
		step    method.Step
		limited bool
	}{{method.StepMTU, false}, {method.StepUDP, true}} {
		w := watch(&stepMarker{packets: 1, fwd: 73, lateNext: 1, lateAt: 600})
		w.note(method.Event{Kind: method.Started, Step: c.step})
		w.note(method.Event{Kind: method.Finished, Step: c.step})
		var m result.Meta
		w.stamp(&m, 0)
		if s := m.Lab.Steps[0]; s.LabLimited != c.limited || m.Lab.LabLimited != c.limited {
			t.Errorf("%s: step %+v, run %+v; want limited %v", c.step, s.LabAccount, m.Lab.LabAccount, c.limited)
		}
	}
}
