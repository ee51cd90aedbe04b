package schedule

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"  ", ""},
		{"PT1H", "R/PT1H"},
		{"R/PT1H", "R/PT1H"},
		{"R5/PT15M", "R5/PT15M"},
		{"R/2026-11-24T10:00:00Z/PT1H", "R/2026-11-24T10:00:00Z/PT1H"},
		{"R3/2026-11-24T10:00:00Z/P1D", "R3/2026-11-24T10:00:00Z/P1D"},
		{"R/2026-11-24T11:30:00+01:30/PT1H", "R/2026-11-24T10:00:00Z/PT1H"}, // the start in UTC
		{"R/PT90M", "R/PT1H30M"},
		{"R/P1W", "R/P7D"},
		{"R/P1W2DT3H4M5S", "R/P9DT3H4M5S"},
		{"R/PT0.5H", "R/PT30M"},
		{"R/PT1,5S", "R/PT1.5S"},
		{"R/PT1.000000001S", "R/PT1.000000001S"},
		{"R/PT86400S", "R/P1D"},
		{"R/P0DT1S", "R/PT1S"},
		{"*/15 * * * *", "*/15 * * * *"},
		{" 0  3 * *   1-5 ", "0 3 * * 1-5"},
		{"0 3 * JAN-MAR MON", "0 3 * JAN-MAR MON"},
		{"@hourly", "@hourly"},
		{"@Daily", "@daily"},
		{"@weekly", "@weekly"},
		{"@monthly", "@monthly"},
		{"@annually", "@annually"},
		{"0 0 29 2 *", "0 0 29 2 *"},
	} {
		r, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if got := r.String(); got != c.want {
			t.Errorf("Parse(%q).String() = %q, want %q", c.in, got, c.want)
		}
		again, err := Parse(r.String())
		if err != nil || again.String() != r.String() {
			t.Errorf("Parse(%q) again: %q, %v", r.String(), again.String(), err)
		}
	}
}

// TestParseErrors: each refusal is one line that names the bad part and
// gives an example.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ in, part, why string }{
		{"PT0S", "PT0S", "zero"},
		{"R/PT0.5S", "PT0.5S", "under the 1s minimum"},
		{"R/P1M", "P1M", "months and years"},
		{"R/P1Y", "P1Y", "months and years"},
		{"R/P", "P", "a duration is P"},
		{"R/PT", "PT", "a duration is P"},
		{"R/P1DT", "P1DT", "a duration is P"},
		{"R/PT1H1D", "PT1H1D", "out of place"},
		{"R/PT1M1H", "PT1M1H", "out of place"},
		{"R/P1H", "P1H", "out of place"},
		{"R/PT1H1H", "PT1H1H", "out of place"},
		{"R/PT1.5H30M", "PT1.5H30M", "only the last number"},
		{"R/PT1.0000000001S", "PT1.0000000001S", "at most 9 decimals"},
		{"R/PT1.2.3S", "PT1.2.3S", "want a number"},
		{"R/PT.5H", "PT.5H", "want a number"},
		{"R/PTH", "PTH", "want a number and its unit"},
		{"R/PT15", "PT15", "want a number and its unit"},
		{"R/PT99999999999999999999S", "PT99999999999999999999S", "too long"},
		{"R/P100000W", "P100000W", "too long"},
		{"R/P15000WT9999999H", "P15000WT9999999H", "too long"},
		{"R0/PT1H", "R0", "R1 and up"},
		{"Rx/PT1H", "Rx", "R1 and up"},
		{"R-1/PT1H", "R-1", "R1 and up"},
		{"R", "R", "between slashes"},
		{"R/a/b/c", "R/a/b/c", "between slashes"},
		{"R/PT1H/2026-11-24T10:00:00Z", "PT1H", "the start comes before the period"},
		{"R/2026-11-24T10:00:00/PT1H", "2026-11-24T10:00:00", "with Z or an offset"},
		{"R/tomorrow/PT1H", "tomorrow", "date and time"},
		{"* * * *", "* * * *", "5 fields"},
		{"0 * * * * *", "0 * * * * *", "5 fields"},
		{"61 * * * *", "minute field 61", "above maximum (59)"},
		{"*/0 * * * *", "minute field */0", "positive"},
		{"0 0 30 2 *", "0 0 30 2 *", "no date matches"},
		{"TZ=Europe/Paris 0 3 * * *", "TZ=Europe/Paris", "in UTC"},
		{"CRON_TZ=UTC 0 3 * * *", "CRON_TZ=UTC", "in UTC"},
		{"@every 1h", "@every 1h", "ISO 8601"},
		{"@reboot", "cron", "descriptor"},
		{"0 3 * * L", "day-of-week field L", ""},
		{"0 24 * * *", "hour field 24", ""},
		{"0 0 32 * *", "day-of-month field 32", ""},
		{"0 0 1 13 *", "month field 13", ""},
		{"hourly", "hourly", "5 fields"},
	} {
		_, err := Parse(c.in)
		var se *SpecError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v, want a *SpecError", c.in, err)
			continue
		}
		msg := err.Error()
		if se.Part != c.part || !strings.Contains(msg, c.why) || !strings.Contains(msg, "(e.g. ") || strings.Contains(msg, "\n") {
			t.Errorf("Parse(%q): %s\n(part %q) want part %q, %q and an example, on one line", c.in, msg, se.Part, c.part, c.why)
		}
	}
}

func TestNext(t *testing.T) {
	start := at(0) // 2026-11-24T10:00:00Z
	mins := func(m float64) time.Time { return at(m * 60) }
	for _, c := range []struct {
		spec       string
		after      time.Time
		start      time.Time
		want       time.Time // zero: none
		why        string
		wantNoMore bool
	}{
		{"", mins(-1), start, start, "once, before its time", false},
		{"", start, start, time.Time{}, "once, at its time: done", true},
		{"", mins(1), start, time.Time{}, "once, after: done", true},
		{"R/PT15M", mins(-100), start, start, "the start itself", false},
		{"R/PT15M", start, start, mins(15), "strictly after", false},
		{"R/PT15M", mins(14.99), start, mins(15), "", false},
		{"R/PT15M", mins(15), start, mins(30), "on a run: the next", false},
		{"R/PT15M", mins(1e6), start, mins(1e6 + 5), "far on", false},
		{"R3/PT15M", mins(29), start, mins(30), "third run", false},
		{"R3/PT15M", mins(30), start, time.Time{}, "count used up", true},
		{"R1/PT15M", mins(-1), start, start, "R1: once", false},
		{"R1/PT15M", start, start, time.Time{}, "R1: once", true},
		{"R/2026-11-24T12:00:00Z/PT1H", start, start, mins(120), "the spec's start wins", false},
		{"R/2026-11-24T12:00:00Z/PT1H", mins(120), time.Time{}, mins(180), "", false},
		{"R2/2026-11-24T12:00:00Z/PT1H", mins(180), start, time.Time{}, "", true},
		{"PT1H", time.Date(2026, 11, 24, 10, 20, 0, 0, time.UTC), time.Time{}, mins(60), "no start anywhere: on the hour", false},
		{"R/P1D", time.Date(2026, 11, 24, 11, 0, 0, 0, time.FixedZone("+01", 3600)), start, start.Add(day), "after in another zone", false},
		{"*/15 * * * *", mins(1), start, mins(15), "cron", false},
		{"*/15 * * * *", mins(15), start, mins(30), "cron, strictly after", false},
		{"*/15 * * * *", mins(-1000), start, start, "cron: start is the earliest, and may be a run", false},
		{"*/15 * * * *", mins(-1000), mins(1), mins(15), "cron: start is the earliest", false},
		{"0 3 * * 1-5", start, start, time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC), "a Tuesday to Wednesday 03:00 UTC", false},
		{"0 3 * * 1-5", time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC), start, time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC), "Friday to Monday", false},
		{"0 3 * * 1-5", time.Date(2026, 11, 25, 4, 0, 0, 0, time.FixedZone("-05", -5*3600)), start, time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC), "UTC whatever the zone of after", false},
		{"@hourly", start, start, mins(60), "", false},
		{"0 0 13 * 5", start, start, time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC), "the 13th or a Friday: Friday 27th", false},
		{"0 0 13 * 5", time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC), start, time.Date(2026, 12, 11, 0, 0, 0, 0, time.UTC), "Friday 11th before the 13th", false},
	} {
		r, err := Parse(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := r.Next(c.after, c.start)
		if ok == c.wantNoMore || ok && (!got.Equal(c.want) || got.Location() != time.UTC) {
			t.Errorf("%q.Next(%v, start %v) = %v %v, want %v (%s)", c.spec, c.after, c.start, got, ok, c.want, c.why)
		}
	}
	var once Repeat // the zero Repeat: once
	if got, ok := once.Next(mins(-1), start); !ok || !got.Equal(start) {
		t.Errorf("zero Repeat: Next = %v %v, want the start", got, ok)
	}
	r, _ := Parse("R/PT1S")
	if _, ok := r.Next(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), time.Unix(0, 0)); ok {
		t.Error("a run 8000 years on: want none (past time.Duration's range)")
	}
}

// TestPeriodProperties: on random periods, counts, starts and afters,
// Next is the first of start + k × period (k < count) strictly after
// after, found by stepping through the runs one by one.
func TestPeriodProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(*seed, 4))
	units := []time.Duration{time.Second, time.Minute, time.Hour, day, 7 * day, time.Millisecond}
	for i := range 20_000 {
		period := max(MinPeriod, time.Duration(1+rng.IntN(100))*units[rng.IntN(len(units))])
		count := int64(rng.IntN(6))
		start := t0.Add(time.Duration(rng.Int64N(int64(1000 * day))))
		after := start.Add(time.Duration(rng.Int64N(int64(60*period))) - 10*period)
		r := Repeat{period: period, count: count}
		// The spec's own start, or the schedule's, are the same runs.
		explicit := Repeat{period: period, count: count, start: start}
		var want time.Time
		for k := int64(0); count == 0 || k < count; k++ {
			if tk := start.Add(time.Duration(k) * period); tk.After(after) {
				want = tk
				break
			}
		}
		for _, rr := range []Repeat{r, explicit} {
			got, ok := rr.Next(after, start)
			if ok != !want.IsZero() || ok && !got.Equal(want) {
				t.Fatalf("case %d (seed %d): %q.Next(%v, %v) = %v %v, want %v", i, *seed, rr, after, start, got, ok, want)
			}
		}
		if s := explicit.String(); mustParse(t, s).String() != s {
			t.Fatalf("case %d: %q does not read back as itself", i, s)
		}
	}
}

// TestDurationRoundTrip: every period from 1 s to 30 years, to the
// nanosecond, formats to a duration that parses back to it.
func TestDurationRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(*seed, 5))
	for i := range 100_000 {
		d := MinPeriod + time.Duration(rng.Int64N(int64(30*365*day)))
		switch i % 3 { // whole seconds and minutes too, not only odd nanoseconds
		case 0:
			d = d.Truncate(time.Second)
		case 1:
			d = d.Truncate(time.Minute)
		}
		s := formatDuration(d)
		got, err := parseDuration(s)
		if err != nil || got != d {
			t.Fatalf("seed %d: %v formats as %q, which parses as %v (%v)", *seed, d, s, got, err)
		}
	}
}

// TestCronProperties: Next against each expression's meaning, written
// out as a predicate, by a scan of every minute from after to the answer:
// the answer matches, no minute before it does, and it is not before the
// schedule's start.
func TestCronProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(*seed, 6))
	for _, c := range []struct {
		spec  string
		match func(time.Time) bool
	}{
		{"*/15 * * * *", func(t time.Time) bool { return t.Minute()%15 == 0 }},
		{"0 3 * * 1-5", func(t time.Time) bool {
			return t.Minute() == 0 && t.Hour() == 3 && t.Weekday() >= 1 && t.Weekday() <= 5
		}},
		{"30 */6 * * *", func(t time.Time) bool { return t.Minute() == 30 && t.Hour()%6 == 0 }},
		{"0 0 13 * 5", func(t time.Time) bool { // standard cron: the 13th or a Friday
			return t.Minute() == 0 && t.Hour() == 0 && (t.Day() == 13 || t.Weekday() == time.Friday)
		}},
		{"0 12 * * SUN", func(t time.Time) bool { return t.Minute() == 0 && t.Hour() == 12 && t.Weekday() == time.Sunday }},
		{"@hourly", func(t time.Time) bool { return t.Minute() == 0 }},
		{"@weekly", func(t time.Time) bool { return t.Minute() == 0 && t.Hour() == 0 && t.Weekday() == time.Sunday }},
	} {
		r := mustParse(t, c.spec)
		for i := range 300 {
			after := t0.Add(time.Duration(rng.Int64N(int64(400 * day))))
			start := after.Add(time.Duration(rng.Int64N(int64(2*day)) - int64(day)))
			got, ok := r.Next(after, start)
			if !ok || !got.After(after) || got.Before(start) || !c.match(got) || got.Second() != 0 || got.Nanosecond() != 0 {
				t.Fatalf("case %d (seed %d): %q.Next(%v, start %v) = %v %v: not a run, or not after both", i, *seed, c.spec, after, start, got, ok)
			}
			for m := latest(after, start.Add(-time.Nanosecond)).Truncate(time.Minute).Add(time.Minute); m.Before(got); m = m.Add(time.Minute) {
				if c.match(m) && !m.Before(start) {
					t.Fatalf("case %d (seed %d): %q.Next(%v, start %v) = %v, but %v came first", i, *seed, c.spec, after, start, got, m)
				}
			}
		}
	}
}

func mustParse(t *testing.T, s string) Repeat {
	t.Helper()
	r, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRepeatJSON: a Repeat is stored as its spec.
func TestRepeatJSON(t *testing.T) {
	type row struct {
		Repeat Repeat `json:"repeat"`
	}
	for _, spec := range []string{"", "R5/PT15M", "0 3 * * 1-5"} {
		b, err := json.Marshal(row{mustParse(t, spec)})
		if err != nil {
			t.Fatal(err)
		}
		var back row
		if err := json.Unmarshal(b, &back); err != nil || back.Repeat.String() != spec {
			t.Errorf("%q: stored as %s, read back as %q (%v)", spec, b, back.Repeat.String(), err)
		}
	}
	var back row
	if err := json.Unmarshal([]byte(`{"repeat":"R/P1M"}`), &back); err == nil || !strings.Contains(err.Error(), "months") {
		t.Errorf("a bad stored spec: %v, want Parse's error", err)
	}
}
