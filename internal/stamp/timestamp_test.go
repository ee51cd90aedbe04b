package stamp

import (
	"testing"
	"time"
)

func TestTimestampFormats(t *testing.T) {
	cases := []struct {
		name string
		at   time.Time
		f    Format
		want Timestamp
	}{
		{"ntp unix epoch", time.Unix(0, 0), NTP, 0x83aa7e80_00000000},
		{"ntp quarter second", time.Unix(1, 250_000_000), NTP, 0x83aa7e81_40000000},
		// 2036-02-07T06:28:16Z is NTP era 1's start: seconds wrap to 0.
		{"ntp era 1", time.Date(2036, 2, 7, 6, 28, 16, 0, time.UTC), NTP, 0},
		{"ptp unix epoch is 37 s TAI", time.Unix(0, 0), PTP, 37 << 32},
		{"ptp nanoseconds", time.Unix(100, 123_456_789), PTP, 137<<32 | 123_456_789},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Stamp(c.at, c.f); got != c.want {
				t.Errorf("Stamp = %#x, want %#x", uint64(got), uint64(c.want))
			}
			if got := c.want.Time(c.f); !got.Equal(c.at) {
				t.Errorf("Time = %v, want %v", got, c.at)
			}
		})
	}
}

// NTP's fraction has 2^-32 s steps (0.23 ns): a round trip through it is
// within a nanosecond; PTP's is exact.
func TestTimestampRoundTrip(t *testing.T) {
	base := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for i := range 1000 {
		at := base.Add(time.Duration(i) * 7_777_777_777)
		if d := Stamp(at, NTP).Time(NTP).Sub(at); d < -time.Nanosecond || d > time.Nanosecond {
			t.Fatalf("%v: NTP round trip off by %v", at, d)
		}
		if got := Stamp(at, PTP).Time(PTP); !got.Equal(at) {
			t.Fatalf("%v: PTP round trip gave %v", at, got)
		}
	}
	if err := Timestamp(1e9).Valid(PTP); err == nil {
		t.Error("PTP nanoseconds of 10^9 are valid")
	}
	if err := Timestamp(1e9).Valid(NTP); err != nil {
		t.Error(err)
	}
}

func TestErrorEstimate(t *testing.T) {
	e := ErrorEstimate{Synced: true, Format: PTP, Scale: 63, Multiplier: 255}
	if v := e.Uint16(); v != 0xffff {
		t.Errorf("all ones = %#x", v)
	}
	if got := ParseErrorEstimate(0xffff); got != e {
		t.Errorf("parse = %+v", got)
	}
	// Scale 32, Multiplier 1: 2^32 × 2^-32 s = 1 s.
	if d := (ErrorEstimate{Scale: 32, Multiplier: 1}).Duration(); d != time.Second {
		t.Errorf("1 s estimate = %v", d)
	}
	if d := (ErrorEstimate{Scale: 63, Multiplier: 255}).Duration(); d <= 0 {
		t.Errorf("largest estimate overflowed: %v", d)
	}
	if err := (ErrorEstimate{}).Valid(); err == nil {
		t.Error("Multiplier 0 is valid")
	}
	for _, want := range []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond, time.Second, time.Hour} {
		got := EstimateFor(want, NTP, false)
		if d := got.Duration(); d < want || d > 2*want+time.Nanosecond {
			t.Errorf("EstimateFor(%v) = %+v = %v", want, got, d)
		}
	}
}
