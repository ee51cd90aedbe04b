package units

import (
	"strings"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	good := map[string]int64{
		"50M": 50_000_000, "1.5G": 1_500_000_000, "64k": 64_000, "64K": 64_000,
		"0": 0, "1000bps": 1000, "100Mbit/s": 100_000_000, "2.5Gbps": 2_500_000_000,
		"1T": 1_000_000_000_000, "1bit/s": 1,
	}
	for in, want := range good {
		got, err := ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	bad := map[string]string{
		"50": "no unit", "-5M": "negative", "abc": "no number", "5X": "unknown unit",
		"10MB": "bits per second", "": "no number",
	}
	for in, frag := range bad {
		_, err := ParseRate(in)
		if err == nil || !strings.Contains(err.Error(), frag) {
			t.Errorf("ParseRate(%q) error = %v, want it to mention %q", in, err, frag)
		}
	}
}

func TestParseSize(t *testing.T) {
	good := map[string]int64{
		"65536": 65536, "64KiB": 65536, "250kB": 250_000, "1MiB": 1 << 20, "1.5MiB": 1572864,
		"1GB": 1_000_000_000, "100B": 100, "0": 0,
	}
	for in, want := range good {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	bad := map[string]string{
		"64K": "ambiguous", "64KB": "ambiguous", "-1": "negative", "1.5": "whole number",
		"8kbit": "bytes, not bits", "3parsecs": "unknown unit",
	}
	for in, frag := range bad {
		_, err := ParseSize(in)
		if err == nil || !strings.Contains(err.Error(), frag) {
			t.Errorf("ParseSize(%q) error = %v, want it to mention %q", in, err, frag)
		}
	}
	if _, err := ParseSize("64K"); err == nil || !strings.Contains(err.Error(), "64KiB") || !strings.Contains(err.Error(), "64kB") {
		t.Errorf("hint for 64K should name 64KiB and 64kB: %v", err)
	}
}

func TestParseDuration(t *testing.T) {
	ok := map[string]time.Duration{
		"40ms": 40 * time.Millisecond, "0": 0, "10": 10 * time.Second, "2.5": 2500 * time.Millisecond,
		"1m30s": 90 * time.Second, " 10s ": 10 * time.Second, "0.001": time.Millisecond,
	}
	for in, want := range ok {
		if d, err := ParseDuration(in); err != nil || d != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, d, err, want)
		}
	}
	for _, in := range []string{"-1", "-1s", "soon", "NaN", "Inf", "1e300", "10x"} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) accepted", in)
		}
	}
}

func TestFormat(t *testing.T) {
	cases := map[string]string{
		FormatRate(94_123_456):                   "94.12 Mbit/s",
		FormatRate(31.7e9):                       "31.70 Gbit/s",
		FormatRate(999):                          "999 bit/s",
		FormatBytes(65536):                       "64.00 KiB",
		FormatBytes(512):                         "512 B",
		FormatDuration(40500 * time.Microsecond): "40.5 ms",
		FormatDuration(812 * time.Microsecond):   "812 µs",
		FormatDuration(2 * time.Second):          "2.00 s",
		GroupDigits(65536):                       "65,536",
		GroupDigits(-1234567):                    "-1,234,567",
		GroupDigits(999):                         "999",
	}
	for got, want := range cases {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
