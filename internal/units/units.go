// Package units parses and prints the three kinds of quantity fullpipe
// deals in, with one convention everywhere:
//
//   - rates in bits per second with SI suffixes: "50M" = 50,000,000 bit/s;
//   - sizes in bytes, a plain number being bytes, suffixes explicitly
//     binary ("64KiB" = 65,536) or decimal ("250kB" = 250,000);
//   - durations as Go durations ("40ms", "30s").
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

func splitNumber(s string) (float64, string, error) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.' || (i == 0 && (s[i] == '-' || s[i] == '+'))) {
		i++
	}
	if i == 0 {
		return 0, "", fmt.Errorf("%q: no number", s)
	}
	v, err := strconv.ParseFloat(s[:i], 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, "", fmt.Errorf("%q: not a number", s)
	}
	return v, strings.TrimSpace(s[i:]), nil
}

var rateSuffix = map[string]float64{
	"": 0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
}

// ParseRate parses a rate in bits per second. A unit is required ("50M",
// "1.5G", "64k", "1000bps" or "1000bit/s"); only "0" may stand alone.
// "bit/s", "bps" and "bit" after the prefix are accepted ("50Mbit/s").
func ParseRate(s string) (int64, error) {
	v, rest, err := splitNumber(s)
	if err != nil {
		return 0, fmt.Errorf("rate %w", err)
	}
	if v < 0 {
		return 0, fmt.Errorf("rate %q is negative", s)
	}
	for _, tail := range []string{"bit/s", "bps", "bit", "b/s"} {
		if strings.HasSuffix(rest, tail) {
			rest = strings.TrimSuffix(rest, tail)
			if rest == "" {
				rest = "1"
			}
			break
		}
	}
	if strings.HasSuffix(rest, "B") || strings.HasSuffix(rest, "Bps") {
		return 0, fmt.Errorf("rate %q: rates are in bits per second (e.g. 50M = 50 Mbit/s), not bytes", s)
	}
	mult := 0.0
	switch rest {
	case "":
		if v != 0 {
			return 0, fmt.Errorf("rate %q has no unit: write e.g. %sM for Mbit/s or %sbit/s", s, strings.TrimSpace(s), strings.TrimSpace(s))
		}
	case "1":
		mult = 1
	default:
		m, ok := rateSuffix[rest]
		if !ok {
			return 0, fmt.Errorf("rate %q: unknown unit %q (use k, M, G, T: SI, bits per second)", s, rest)
		}
		mult = m
	}
	r := v * mult
	if r > math.MaxInt64/2 {
		return 0, fmt.Errorf("rate %q is too large", s)
	}
	return int64(math.Round(r)), nil
}

var sizeSuffix = map[string]float64{
	"": 1, "B": 1,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
	"kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
}

// ParseSize parses a size in bytes. A plain number is bytes; suffixes must
// say whether they are binary (KiB, MiB, GiB) or decimal (kB, MB, GB).
// Ambiguous forms such as "64K" or "64KB" are rejected with a hint.
func ParseSize(s string) (int64, error) {
	v, rest, err := splitNumber(s)
	if err != nil {
		return 0, fmt.Errorf("size %w", err)
	}
	if v < 0 {
		return 0, fmt.Errorf("size %q is negative", s)
	}
	m, ok := sizeSuffix[rest]
	if !ok {
		switch strings.ToUpper(rest) {
		case "K", "KB", "M", "G", "T":
			p := strings.ToUpper(rest[:1])
			dec := strings.ToLower(p)
			if p != "K" {
				dec = p
			}
			return 0, fmt.Errorf("size %q is ambiguous: write %s%siB (binary) or %s%sB (decimal)", s, strings.TrimSuffix(strings.TrimSpace(s), rest), p, strings.TrimSuffix(strings.TrimSpace(s), rest), dec)
		}
		if strings.HasSuffix(rest, "bit") || strings.HasSuffix(rest, "b") {
			return 0, fmt.Errorf("size %q: sizes are in bytes, not bits", s)
		}
		return 0, fmt.Errorf("size %q: unknown unit %q (use B, KiB, MiB, GiB or kB, MB, GB)", s, rest)
	}
	b := v * m
	if b > math.MaxInt64/2 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	if b != math.Trunc(b) {
		return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
	}
	return int64(b), nil
}

// ParseDuration parses a duration: a bare number is seconds, as in
// iperf3, iperf2 and netperf ("10" and "2.5" are 10 s and 2.5 s), and
// anything else a Go duration ("40ms", "1m30s"). A negative duration is
// rejected.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(secs) || math.IsInf(secs, 0) || secs > maxSeconds {
			return 0, fmt.Errorf("duration %q: want seconds up to %.0f, or a Go duration such as 40ms", s, float64(maxSeconds))
		}
		if secs < 0 {
			return 0, fmt.Errorf("duration %q is negative", s)
		}
		return time.Duration(math.Round(secs * 1e9)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: use seconds (10, 2.5) or Go form such as 40ms, 10s, 1m30s", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d, nil
}

// maxSeconds is the largest bare number of seconds ParseDuration takes:
// about 292 years fit a time.Duration; a year is plenty.
const maxSeconds = 365 * 24 * 3600

// FormatRate prints bits per second with an SI prefix and two decimals:
// "94.12 Mbit/s".
func FormatRate(bps float64) string {
	a := math.Abs(bps)
	switch {
	case a >= 1e12:
		return fmt.Sprintf("%.2f Tbit/s", bps/1e12)
	case a >= 1e9:
		return fmt.Sprintf("%.2f Gbit/s", bps/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.2f Mbit/s", bps/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.2f kbit/s", bps/1e3)
	}
	return fmt.Sprintf("%.0f bit/s", bps)
}

// FormatBytes prints a byte count with a binary prefix: "1.50 MiB"; below
// 1 KiB it prints the exact count, "512 B".
func FormatBytes(n float64) string {
	a := math.Abs(n)
	switch {
	case a >= 1<<40:
		return fmt.Sprintf("%.2f TiB", n/(1<<40))
	case a >= 1<<30:
		return fmt.Sprintf("%.2f GiB", n/(1<<30))
	case a >= 1<<20:
		return fmt.Sprintf("%.2f MiB", n/(1<<20))
	case a >= 1<<10:
		return fmt.Sprintf("%.2f KiB", n/(1<<10))
	}
	return fmt.Sprintf("%.0f B", n)
}

// FormatDuration prints a duration with a unit chosen for its size and
// three significant figures at most: "812 µs", "40.5 ms", "2.00 s".
func FormatDuration(d time.Duration) string {
	a := d
	if a < 0 {
		a = -a
	}
	f := float64(d)
	switch {
	case a >= time.Second:
		return fmt.Sprintf("%.2f s", f/1e9)
	case a >= 10*time.Millisecond:
		return fmt.Sprintf("%.1f ms", f/1e6)
	case a >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", f/1e6)
	case a >= time.Microsecond:
		return fmt.Sprintf("%.0f µs", f/1e3)
	}
	return fmt.Sprintf("%d ns", d.Nanoseconds())
}

// GroupDigits prints n with thousands separators: 65536 → "65,536".
func GroupDigits(n int64) string {
	neg := n < 0
	u := uint64(n)
	if neg {
		u = uint64(-n)
	}
	s := strconv.FormatUint(u, 10)
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
