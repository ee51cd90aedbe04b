package schedule

// ISO 8601 durations and repeating intervals, as far as a timetable in
// UTC needs them: weeks, days, hours, minutes and seconds, all of fixed
// length. Months and years are refused: their length depends on the
// date (use days, or cron for calendar dates).

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// MinPeriod is the shortest period a repeat takes.
const MinPeriod = time.Second

const day = 24 * time.Hour

// durationUnits are the designators of a duration, in the order they
// must come: date part, then after T the time part.
var durationUnits = []struct {
	letter byte
	time   bool // after the T
	unit   time.Duration
}{
	{'W', false, 7 * day}, {'D', false, day}, {'H', true, time.Hour}, {'M', true, time.Minute}, {'S', true, time.Second},
}

// parseDuration reads an ISO 8601 duration such as PT15M, P1DT12H or
// PT1.5S: whole numbers, and a decimal fraction (up to nanoseconds) on
// the last component only. The error names what is wrong, for
// SpecError's Reason.
func parseDuration(s string) (time.Duration, error) {
	rest, ok := strings.CutPrefix(s, "P")
	if !ok || rest == "" || strings.HasSuffix(rest, "T") {
		return 0, fmt.Errorf("a duration is P followed by numbers with W, D, then T and H, M, S")
	}
	var total time.Duration
	next, inTime := 0, false // durationUnits[next:] may still come
	for rest != "" {
		if rest[0] == 'T' {
			if inTime {
				return 0, fmt.Errorf("a second T")
			}
			inTime, rest = true, rest[1:]
			continue
		}
		num, letter, tail, err := component(rest)
		if err != nil {
			return 0, err
		}
		if !inTime && (letter == 'Y' || letter == 'M') {
			return 0, fmt.Errorf("months and years have no fixed length: give days (P30D), or cron for calendar dates")
		}
		i := next
		for i < len(durationUnits) && (durationUnits[i].letter != letter || durationUnits[i].time != inTime) {
			i++
		}
		if i == len(durationUnits) {
			return 0, fmt.Errorf("%q is out of place: the order is W, D, T, H, M, S, each once", num+string(letter))
		}
		if strings.ContainsAny(num, ".,") && tail != "" {
			return 0, fmt.Errorf("only the last number may have a fraction")
		}
		d, err := scale(num, durationUnits[i].unit)
		if err != nil {
			return 0, err
		}
		if total > math.MaxInt64-d {
			return 0, fmt.Errorf("too long: at most about 292 years")
		}
		total, next, rest = total+d, i+1, tail
	}
	return total, nil
}

// component splits "15M…" into "15", 'M' and the rest.
func component(s string) (num string, letter byte, rest string, err error) {
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.' || s[i] == ',') {
		i++
	}
	if i == 0 || i == len(s) {
		return "", 0, "", fmt.Errorf("%q: want a number and its unit (W, D, H, M or S)", s)
	}
	return s[:i], s[i], s[i+1:], nil
}

// scale is the decimal num (whole, or with up to 9 decimals after a
// point or comma) times unit, exactly.
func scale(num string, unit time.Duration) (time.Duration, error) {
	whole, frac, _ := strings.Cut(strings.Replace(num, ",", ".", 1), ".")
	if whole == "" || strings.ContainsAny(frac, ".,") || len(frac) > 9 {
		return 0, fmt.Errorf("%q: want a number like 15 or 1.5 (at most 9 decimals)", num)
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > math.MaxInt64/int64(unit) {
		return 0, fmt.Errorf("%q is too long: at most about 292 years", num)
	}
	d := time.Duration(w) * unit
	if frac != "" {
		f, err := strconv.ParseInt(frac, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q: want a number like 15 or 1.5", num)
		}
		// unit is a whole number of seconds, so unit / 10^9 is exact.
		d += time.Duration(f) * (unit / time.Duration(math.Pow10(len(frac))))
		if d < 0 {
			return 0, fmt.Errorf("%q is too long: at most about 292 years", num)
		}
	}
	return d, nil
}

// formatDuration is d in canonical ISO 8601: days, then hours, minutes
// and seconds (a fraction on the seconds only), no weeks: P1DT1H30M,
// PT1.5S. Parsing it gives d back.
func formatDuration(d time.Duration) string {
	var b strings.Builder
	b.WriteString("P")
	if days := d / day; days > 0 {
		fmt.Fprintf(&b, "%dD", days)
	}
	if d %= day; d == 0 {
		if b.Len() == 1 {
			return "PT0S"
		}
		return b.String()
	}
	b.WriteString("T")
	if h := d / time.Hour; h > 0 {
		fmt.Fprintf(&b, "%dH", h)
	}
	if m := d % time.Hour / time.Minute; m > 0 {
		fmt.Fprintf(&b, "%dM", m)
	}
	if s := d % time.Minute; s > 0 {
		sec := strconv.FormatInt(int64(s/time.Second), 10)
		if ns := s % time.Second; ns > 0 {
			sec += strings.TrimRight(fmt.Sprintf(".%09d", ns), "0")
		}
		b.WriteString(sec + "S")
	}
	return b.String()
}
