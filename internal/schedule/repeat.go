package schedule

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	cron "github.com/netresearch/go-cron"
)

// Repeat says when a test runs: once, every period from a start (an ISO
// 8601 repeating interval), or at the times of a cron expression, in
// UTC. The zero Repeat runs once. Parse makes one; String gives it back
// in canonical form.
//
// The forms Parse takes:
//
//	""                             once, at the schedule's start
//	"PT1H"                         every hour from the start (R/PT1H)
//	"R/PT1H", "R5/PT15M"           every period; R5 runs 5 times in all
//	"R/2026-11-24T10:00:00Z/PT1H"  every period from the spec's own start
//	"R3/2026-11-24T10:00:00Z/P1D"
//	"*/15 * * * *", "0 3 * * 1-5"  cron: minute hour day-of-month month day-of-week, in UTC
//	"@hourly", "@daily", "@weekly", "@monthly", "@yearly"
//
// Periods are weeks (W), days (D), hours (H), minutes (M) and seconds (S),
// a day being 24 hours (UTC has no daylight saving); a fraction may end
// the last number (PT1.5S). Months and years are refused: their length
// depends on the date, so "every month" is cron's "0 0 1 * *". A period
// is at least MinPeriod.
type Repeat struct {
	canon  string        // String's form; "" once
	period time.Duration // every period; 0 for once and cron
	count  int64         // at most this many runs; 0 no limit
	start  time.Time     // the spec's own start; zero: the schedule's
	cron   cron.Schedule // the cron times; nil for once and periods
}

// SpecError is a repeat spec Parse refuses: Part is the piece at fault,
// Reason what is wrong with it, Example a spec of the same form that
// works.
type SpecError struct {
	Spec, Part, Reason, Example string
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("repeat %q: %s: %s (e.g. %s)", e.Spec, e.Part, e.Reason, e.Example)
}

// Parse reads a repeat spec (see Repeat for its forms). A refused spec is
// a *SpecError.
func Parse(s string) (Repeat, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return Repeat{}, nil
	case s[0] == 'P':
		return parsePeriod(s, s, "PT1H")
	case s[0] == 'R':
		return parseISO(s)
	}
	return parseCron(s)
}

// parsePeriod reads the duration part of spec, a repeat every period.
func parsePeriod(spec, part, example string) (Repeat, error) {
	d, err := parseDuration(part)
	switch {
	case err != nil:
		return Repeat{}, &SpecError{spec, part, err.Error(), example}
	case d == 0:
		return Repeat{}, &SpecError{spec, part, "the period is zero", example}
	case d < MinPeriod:
		return Repeat{}, &SpecError{spec, part, fmt.Sprintf("the period %v is under the %v minimum", d, MinPeriod), example}
	}
	return Repeat{period: d}, nil
}

// parseISO reads R[n]/[start/]period.
func parseISO(s string) (Repeat, error) {
	parts := strings.Split(s, "/")
	example := "R/PT1H, R5/PT15M or R3/2026-11-24T10:00:00Z/P1D"
	if len(parts) < 2 || len(parts) > 3 {
		return Repeat{}, &SpecError{s, s, "want R or Rn, an optional start, and a period, between slashes", example}
	}
	var count int64
	if n := parts[0][1:]; n != "" {
		c, err := strconv.ParseInt(n, 10, 64)
		if err != nil || c < 1 {
			return Repeat{}, &SpecError{s, parts[0], "the count is R (no end) or R1 and up, the number of runs in all", "R5/PT15M"}
		}
		count = c
	}
	var start time.Time
	if len(parts) == 3 {
		if strings.HasPrefix(parts[1], "P") {
			return Repeat{}, &SpecError{s, parts[1], "the start comes before the period (and an end is not taken)", "R/2026-11-24T10:00:00Z/PT1H"}
		}
		t, err := time.Parse(time.RFC3339Nano, parts[1])
		if err != nil {
			return Repeat{}, &SpecError{s, parts[1], "the start is a date and time with Z or an offset", "R/2026-11-24T10:00:00Z/PT1H"}
		}
		start = t.UTC()
	}
	r, err := parsePeriod(s, parts[len(parts)-1], "R/PT1H")
	if err != nil {
		return Repeat{}, err
	}
	r.count, r.start = count, start
	return r, nil
}

// The cron dialect: the five standard fields and the descriptors, with
// the standard day rule (a day matches when its day of month or its day
// of week does, when both are restricted). No seconds, years, L, W, #
// or H extensions.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.DowOrDom | cron.Descriptor)

// cronCheck is when a cron spec is checked to fire at all: a leap year,
// so that Feb 29 fires within the parser's search of 5 years.
var cronCheck = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func parseCron(s string) (Repeat, error) {
	example := `"*/15 * * * *", "0 3 * * 1-5" or @hourly`
	fields := strings.Fields(s)
	canon := strings.Join(fields, " ")
	switch {
	case strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ="):
		return Repeat{}, &SpecError{s, fields[0], "cron here is in UTC: drop the time zone", example}
	case strings.HasPrefix(s, "@every"):
		return Repeat{}, &SpecError{s, s, "a period is an ISO 8601 repeat", "R/PT1H"}
	case strings.HasPrefix(s, "@"):
		canon = strings.ToLower(canon)
	case len(fields) != 5:
		return Repeat{}, &SpecError{s, s, fmt.Sprintf("cron takes 5 fields (minute hour day-of-month month day-of-week), not %d", len(fields)), example}
	}
	c, err := cronParser.Parse("CRON_TZ=UTC " + canon)
	if err != nil {
		return Repeat{}, &SpecError{s, badField(fields), err.Error(), example}
	}
	if c.Next(cronCheck).IsZero() {
		return Repeat{}, &SpecError{s, s, "no date matches it", example}
	}
	return Repeat{canon: canon, cron: c}, nil
}

// cronFields name the five fields.
var cronFields = []string{"minute", "hour", "day-of-month", "month", "day-of-week"}

// badField names the first of the five fields that the parser refuses
// on its own (the others *), or "cron" when none does alone.
func badField(fields []string) string {
	if len(fields) != len(cronFields) {
		return "cron"
	}
	for i, f := range fields {
		alone := []string{"*", "*", "*", "*", "*"}
		alone[i] = f
		if _, err := cronParser.Parse("CRON_TZ=UTC " + strings.Join(alone, " ")); err != nil {
			return fmt.Sprintf("%s field %s", cronFields[i], f)
		}
	}
	return "cron"
}

// String is r's spec in canonical form: "" for once; R[n]/[start/]period
// with the period in days, hours, minutes and seconds and the start in
// UTC; cron's fields one space apart, descriptors in lower case. Parse
// reads it back as the same Repeat.
func (r Repeat) String() string {
	switch {
	case r.cron != nil:
		return r.canon
	case r.period == 0:
		return ""
	}
	s := "R"
	if r.count > 0 {
		s += strconv.FormatInt(r.count, 10)
	}
	if !r.start.IsZero() {
		s += "/" + r.start.Format(time.RFC3339Nano)
	}
	return s + "/" + formatDuration(r.period)
}

// MarshalText stores r as its String.
func (r Repeat) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads r with Parse.
func (r *Repeat) UnmarshalText(b []byte) error {
	p, err := Parse(string(b))
	if err != nil {
		return err
	}
	*r = p
	return nil
}

// Next is r's first run strictly after after, and false when there is
// none (a one-off already run, a count used up). start is the schedule's
// own start: the one-off's time, the first run of a period whose spec has
// no start of its own, and the earliest a cron run may be. A period with
// no start anywhere (a zero start) counts from the Unix epoch, so PT1H
// falls on the hour. Times are returned in UTC.
func (r Repeat) Next(after, start time.Time) (time.Time, bool) {
	switch {
	case r.cron != nil:
		if from := start.Add(-time.Nanosecond); !start.IsZero() && from.After(after) {
			after = from // start itself may be a run
		}
		t := r.cron.Next(after.UTC())
		return t.UTC(), !t.IsZero()
	case r.period == 0:
		return start.UTC(), start.After(after)
	}
	if !r.start.IsZero() {
		start = r.start
	} else if start.IsZero() {
		start = time.Unix(0, 0)
	}
	k := int64(0) // the run: start + k periods
	if !after.Before(start) {
		since := after.Sub(start) // saturates, some 292 years on
		if since > math.MaxInt64-r.period {
			return time.Time{}, false
		}
		k = int64(since/r.period) + 1
	}
	if r.count > 0 && k >= r.count {
		return time.Time{}, false
	}
	return start.Add(time.Duration(k) * r.period).UTC(), true
}
