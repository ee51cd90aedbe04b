package cli

import (
	"errors"

	"github.com/fullpipe/fullpipe/internal/lab"
	"github.com/fullpipe/fullpipe/internal/result"
)

// envLab names the lab a command runs in: `fullpipe lab exec` sets it
// (and so `rfc6349` with no host and `demo`, which run their tests
// through it), and a test's document then says whether the lab held its
// path while the test measured (result.LabRun).
const envLab = "FULLPIPE_LAB"

// labWatch is the lab a command runs in and its forwarder's mark at the
// command's start.
type labWatch struct {
	lab lab.Marker
	m0  lab.Mark
}

// watchLab marks the lab called name now; nil when name is "" (not in a
// lab).
func watchLab(name string) *labWatch {
	if name == "" {
		return nil
	}
	return watch(lab.ByName(name))
}

func watch(m lab.Marker) *labWatch { return &labWatch{lab: m, m0: m.Mark()} }

// stamp records in m the lab's account from the mark to now, judged as
// a user's measurement is (lab.RateBudget: its rates and minima). A lab
// whose statistics cannot be read is not taken as held.
func (w *labWatch) stamp(m *result.Meta) {
	b := lab.RateBudget
	a, err := lab.Since(w.m0, w.lab.Mark())
	if err != nil {
		m.Lab = &result.LabRun{Name: w.m0.Name, LabLimited: true,
			Account: "LAB-LIMITED: whether the lab held its path is unknown: " + err.Error()}
		return
	}
	r := &result.LabRun{Name: a.Name, Account: a.Summary(b), IntervalS: a.Interval.Seconds(), ForwardedPackets: a.Forwarded(),
		LatePackets: a.Late(b.LateThreshold()), LateByUs: b.LateThreshold().Microseconds(), ForwarderDrops: a.OwnDrops()}
	var le *lab.LimitedError
	if err := a.Judge(b); errors.As(err, &le) {
		r.LabLimited, r.Account = true, le.Error()
	}
	m.Lab = r
}
