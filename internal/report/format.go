package report

import (
	"fmt"
	"io"
	"time"

	"github.com/fullpipe/fullpipe/internal/frame"
	"github.com/fullpipe/fullpipe/internal/units"
)

// Formatting shared by the text and HTML renderers: every figure with its
// unit.

func mbps(v float64) string { return fmt.Sprintf("%.2f Mbit/s", v/1e6) }

// usF formats microseconds as a duration.
func usF(us float64) string { return units.FormatDuration(time.Duration(us * 1e3)) }

// BytesExact prints an exact byte count and a readable one: "65,536 B
// (64.00 KiB)"; below 1 KiB only the count.
func BytesExact(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%s B (%s)", units.GroupDigits(n), units.FormatBytes(float64(n)))
}

func usOrDash(ok bool, us int64) string {
	if !ok {
		return "-"
	}
	return units.FormatDuration(time.Duration(us) * time.Microsecond)
}

func bytesOrDash(ok bool, b uint64) string {
	if !ok {
		return "-"
	}
	return units.FormatBytes(float64(b))
}

func segs(ok bool, n uint32) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%d seg", n)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func msOrDash(ok bool, ms float64) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.1f ms", ms)
}

// mtuText says what a path MTU allows.
func mtuText(n int) string {
	if n == 0 {
		return "below the search floor (nothing passed)"
	}
	return fmt.Sprintf("%d B (TCP MSS %d B on IPv4 without options)", n, frame.MSS(n))
}

// errWriter keeps the first write error, so a renderer can print freely
// and report it once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
