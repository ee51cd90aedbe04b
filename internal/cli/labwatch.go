package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/fullpipe/fullpipe/internal/lab"
	"github.com/fullpipe/fullpipe/internal/method"
	"github.com/fullpipe/fullpipe/internal/result"
)

// envLab names the lab a command runs in: `fullpipe lab exec` sets it
// (and so `rfc6349` with no host and `demo`, which run their tests
// through it), and a test's document then says whether the lab held its
// path while the test measured (result.LabRun).
const envLab = "FULLPIPE_LAB"

// labWatch is the lab a command runs in, its forwarder's mark at the
// command's start and at the running step's, and the accounts of the
// steps that ended.
type labWatch struct {
	lab   lab.Marker
	train lab.Budget // its trains' (lab.TrainBudgetOf)
	m0    lab.Mark
	open  []lab.Mark // at the running steps' starts, outermost first (a step may run within another: RFC 6349's trains within its shaping step)
	steps []stepMarks
}

// stepMarks are a step's marks at its start and end, judged when the
// command's document is known (a window-limited step's budget needs its
// baseline RTT).
type stepMarks struct {
	step   method.Step
	dir    string // the direction it measured, if one
	name   string
	m0, m1 lab.Mark
}

// watchLab marks the lab called name now; nil when name is "" (not in a
// lab).
func watchLab(name string) *labWatch {
	if name == "" {
		return nil
	}
	return watch(lab.ByName(name))
}

func watch(m lab.Marker) *labWatch {
	return &labWatch{lab: m, train: lab.TrainBudgetOf(m), m0: m.Mark()}
}

// stepBudget is what a step needs of the lab: packet trains the
// forwarder's punctuality, by the lab's rates (train: lab.TrainBudgetOf;
// `fullpipe trains`, and RFC 6349's trains, a step within its shaping
// step); the path MTU search its probes answered within their timeout
// (lab.ProbeBudget); RFC 6349's window-limited transfers (walk, sweep, throughput) a
// mean lateness small against the baseline RTT (lab.WindowBudget);
// every other step what a user's measurement does (lab.RateBudget:
// rates and minima).
func stepBudget(s method.Step, rtt time.Duration, train lab.Budget) lab.Budget {
	switch {
	case s == method.StepTrains:
		return train
	case s == method.StepMTU:
		return lab.ProbeBudget
	case rtt > 0 && (s == method.StepWalk || s == method.StepSweep || s == method.StepThroughput):
		return lab.WindowBudget(rtt)
	}
	return lab.RateBudget
}

// note takes the lab's account of each step of a progress stream as the
// step ends (the innermost open one). A nil watch (not in a lab) does
// nothing.
func (w *labWatch) note(ev method.Event) {
	if w == nil {
		return
	}
	switch ev.Kind {
	case method.Started:
		w.open = append(w.open, w.lab.Mark())
	case method.Finished:
		n := len(w.open)
		if n == 0 {
			return
		}
		name := string(ev.Step)
		if ev.Direction != "" {
			name += " " + string(ev.Direction)
		}
		w.steps = append(w.steps, stepMarks{step: ev.Step, dir: string(ev.Direction), name: name, m0: w.open[n-1], m1: w.lab.Mark()})
		w.open = w.open[:n-1]
	}
}

// stamp records in m the lab's account from the command's start to now,
// judged as a user's measurement is (lab.RateBudget; a command of one
// step, as that step is: `fullpipe mtu` by lab.ProbeBudget), and each
// step's own (note), judged by what it measures on a path of baseline
// RTT rtt (0: unknown). The run is lab-limited when the whole or any
// step was; its account then is the first limited step's, else the
// whole's.
func (w *labWatch) stamp(m *result.Meta, rtt time.Duration) {
	whole := lab.RateBudget
	if len(w.steps) == 1 {
		whole = stepBudget(w.steps[0].step, rtt, w.train)
	}
	r := &result.LabRun{Name: w.m0.Name, LabAccount: judged(w.m0, w.lab.Mark(), "", whole)}
	for _, s := range w.steps {
		dir := ""
		if s.step == method.StepTrains {
			dir = s.dir
		}
		r.Steps = append(r.Steps, result.LabStep{Step: s.name, LabAccount: judged(s.m0, s.m1, dir, stepBudget(s.step, rtt, w.train))})
	}
	for _, s := range r.Steps {
		if s.LabLimited {
			r.LabLimited, r.Account = true, fmt.Sprintf("%s (step %s)", s.Account, s.Step)
			break
		}
	}
	m.Lab = r
}

// judged is the lab's account from m0 to m1 for budget b, of the
// direction dir alone when one is named and the lab tells it apart
// (lab.Account.Toward: packet trains are timed where they arrive). A
// lab whose statistics cannot be read is not taken as held.
func judged(m0, m1 lab.Mark, dir string, b lab.Budget) result.LabAccount {
	a, err := lab.Since(m0, m1)
	if err != nil {
		return result.LabAccount{LabLimited: true, Account: "LAB-LIMITED: whether the lab held its path is unknown: " + err.Error()}
	}
	if dir != "" {
		a, _ = a.Toward(dir)
	}
	r := result.LabAccount{Account: a.Summary(b), IntervalS: a.Interval.Seconds(), ForwardedPackets: a.Forwarded(),
		LatePackets: a.Late(b.LateThreshold()) + a.Waited(b.LateThreshold()), LateByUs: b.LateThreshold().Microseconds(), MeanLateUs: float64(a.MeanLate()) / 1e3,
		ForwarderDrops: a.OwnDrops()}
	var le *lab.LimitedError
	if err := a.Judge(b); errors.As(err, &le) {
		r.LabLimited, r.Account = true, le.Error()
	}
	return r
}

// baselineRTT is a document's baseline RTT, for its window-limited
// steps' budgets; 0 when it has none.
func baselineRTT(d result.Doc) time.Duration {
	if r, ok := d.(*result.RFC6349); ok {
		return time.Duration(r.RTT.BaselineMs * float64(time.Millisecond))
	}
	return 0
}
