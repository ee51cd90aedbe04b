package stamp

import (
	"fmt"
	"time"
)

// Format is the format of a packet's timestamps, told by the Z bit of its
// Error Estimate (RFC 8762 §4.2.1): 0 is NTP, 1 is PTPv2 truncated.
type Format uint8

const (
	NTP Format = 0 // NTP 64-bit: 32-bit seconds since 1900-01-01, 32-bit binary fraction (RFC 5905 §6)
	PTP Format = 1 // PTPv2 truncated: 32-bit seconds since 1970-01-01 TAI, 32-bit nanoseconds (IEEE 1588v2)
)

func (f Format) String() string {
	if f == PTP {
		return "ptp"
	}
	return "ntp"
}

// Timestamp is a packet's 64-bit timestamp as it is on the wire (big
// endian): the high 32 bits are seconds, the low 32 bits the fraction (NTP)
// or nanoseconds (PTP). Its Format travels beside it, in the Error
// Estimate's Z bit.
type Timestamp uint64

// ntpEpochOffset is the seconds from 1900-01-01 (NTP's era 0) to
// 1970-01-01 (Unix).
const ntpEpochOffset = 2208988800

// TAIMinusUTC is the offset of the PTP timescale (TAI) from UTC, which is
// what Go's clock reads: 37 s since 2017-01-01, with no leap second
// announced since (and none planned before their abolition in 2035). PTP
// timestamps are written and read with it; NTP ones are UTC.
const TAIMinusUTC = 37 * time.Second

// Stamp is t in format f.
func Stamp(t time.Time, f Format) Timestamp {
	if f == PTP {
		t = t.Add(TAIMinusUTC)
		return Timestamp(uint64(uint32(t.Unix()))<<32 | uint64(t.Nanosecond()))
	}
	sec := uint64(t.Unix() + ntpEpochOffset) // era wraps at 2036-02-07: kept mod 2^32
	frac := (uint64(t.Nanosecond()) << 32) / 1e9
	return Timestamp(sec<<32 | frac&0xffffffff)
}

// Time is the instant ts stands for, read in format f. NTP seconds with
// their top bit clear are taken as era 1 (from 2036-02-07), so times
// from 1968 to 2104 read right; PTP seconds are unsigned from 1970 TAI
// (to 2106). A PTP nanoseconds field of 10^9 or more is read as it is
// (Valid reports it).
func (ts Timestamp) Time(f Format) time.Time {
	sec, low := int64(ts>>32), uint64(ts&0xffffffff)
	if f == PTP {
		return time.Unix(sec, int64(low)).Add(-TAIMinusUTC).UTC()
	}
	if sec < 1<<31 {
		sec += 1 << 32 // era 1
	}
	ns := int64((low*1e9 + 1<<31) >> 32) // rounded to the nearest nanosecond
	return time.Unix(sec-ntpEpochOffset, ns).UTC()
}

// Valid is nil, or a *FieldError when ts cannot be in format f (PTP
// nanoseconds past 999,999,999).
func (ts Timestamp) Valid(f Format) error {
	if f == PTP && uint32(ts) >= 1e9 {
		return &FieldError{Field: "Timestamp", Reason: fmt.Sprintf("PTP nanoseconds %d are not below 10^9", uint32(ts))}
	}
	return nil
}

// ErrorEstimate is the 16-bit Error Estimate of RFC 4656 §4.1.2 as RFC
// 8762 §4.2.1 uses it:
//
//	 0                   1
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|S|Z|   Scale   |   Multiplier  |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// S: the clock is synchronized to UTC; Z: the timestamps are PTP (0:
// NTP); the error is Multiplier × 2^(Scale−32) seconds.
type ErrorEstimate struct {
	Synced     bool   // S
	Format     Format // Z
	Scale      uint8  // 6 bits: 0..63
	Multiplier uint8  // MUST NOT be 0 (RFC 4656 §4.1.2)
}

// Uint16 is e on the wire. Scale is masked to its 6 bits.
func (e ErrorEstimate) Uint16() uint16 {
	v := uint16(e.Scale&0x3f)<<8 | uint16(e.Multiplier)
	if e.Synced {
		v |= 0x8000
	}
	if e.Format == PTP {
		v |= 0x4000
	}
	return v
}

// ParseErrorEstimate reads the 16-bit field.
func ParseErrorEstimate(v uint16) ErrorEstimate {
	return ErrorEstimate{
		Synced:     v&0x8000 != 0,
		Format:     Format(v >> 14 & 1),
		Scale:      uint8(v>>8) & 0x3f,
		Multiplier: uint8(v),
	}
}

// Duration is the error the estimate states.
func (e ErrorEstimate) Duration() time.Duration {
	// Multiplier × 2^Scale × 2^-32 s, in ns; at most 255 × 2^31 s, which
	// overflows a Duration: saturate.
	sec := float64(e.Multiplier) * float64(uint64(1)<<(e.Scale&0x3f)) / (1 << 32)
	if sec*1e9 >= float64(1<<63-1) {
		return time.Duration(1<<63 - 1)
	}
	return time.Duration(sec * 1e9)
}

// Valid is nil, or a *FieldError when the Multiplier is 0, which RFC 4656
// §4.1.2 says a receiver SHOULD take for a corrupt packet. Our decoders
// do not refuse such packets (some senders write 0): callers choose.
func (e ErrorEstimate) Valid() error {
	if e.Multiplier == 0 {
		return &FieldError{Field: "Error Estimate", Reason: "Multiplier is 0 (RFC 4656 §4.1.2: MUST NOT be zero)"}
	}
	return nil
}

// EstimateFor is the smallest Error Estimate (the lowest Scale with a
// Multiplier ≤ 255) that states at least err, for format f.
func EstimateFor(err time.Duration, f Format, synced bool) ErrorEstimate {
	e := ErrorEstimate{Synced: synced, Format: f, Multiplier: 1}
	for scale := uint8(0); scale < 64; scale++ {
		unit := float64(uint64(1)<<scale) / (1 << 32) * 1e9 // ns per Multiplier step
		m := float64(err) / unit
		if m <= 255 {
			e.Scale, e.Multiplier = scale, uint8(max(1, min(255, int(m+0.999999))))
			return e
		}
	}
	e.Scale, e.Multiplier = 63, 255
	return e
}
