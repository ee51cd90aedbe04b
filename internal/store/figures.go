package store

import (
	"fmt"
	"math"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// A result's headline figures (fleet.Figures) are columns of the
// results table, one a figure, named as their JSON keys: a history page
// reads tens of thousands of results' figures, as numbers the drivers
// hand over ready, where JSON text had to be decoded (migration 5 moved
// them out of the JSON column figures).

// figureCols are the figures' columns, in figureFields' order.
const figureCols = `throughput_bps, ideal_bps, rtt_ms, rtt_loaded_ms, loss_pct, buffer_delay_pct, verdict, partial, implausible, down_throughput_bps, down_ideal_bps, down_rtt_loaded_ms, down_loss_pct, down_buffer_delay_pct`

// figureFields are f's fields in figureCols' order: where a row's
// columns scan to (the numbers through number).
func figureFields(f *fleet.Figures) []any {
	n := func(p *float64) any { return (*number)(p) }
	return []any{n(&f.ThroughputBps), n(&f.IdealBps), n(&f.RTTMs), n(&f.RTTLoadedMs), n(&f.LossPct), n(&f.BufferDelayPct), &f.Verdict,
		&f.Partial, &f.Implausible, n(&f.DownThroughputBps), n(&f.DownIdealBps), n(&f.DownRTTLoadedMs), n(&f.DownLossPct),
		n(&f.DownBufferDelayPct)}
}

// number is a figure's column as a sql.Scanner: database/sql scans a
// *float64 by reflection, which took a third of the time a history's
// rows took to scan.
type number float64

// Scan takes the float64 both drivers give a DOUBLE PRECISION column
// (SQLite's REAL), or an int64, which SQLite may give for a whole
// number.
func (n *number) Scan(src any) error {
	switch v := src.(type) {
	case float64:
		*n = number(v)
	case int64:
		*n = number(v)
	default:
		return fmt.Errorf("a figure's column holds %T, not a number", src)
	}
	return nil
}

// figureValues are f's values in figureCols' order, to store. Figures
// with a NaN or an infinity are stored as none, as when they were kept
// as JSON, which holds neither (and SQLite would read a NaN back as
// NULL).
func figureValues(f fleet.Figures) []any {
	fields := figureFields(&f)
	vs := make([]any, len(fields))
	for i, p := range fields {
		switch p := p.(type) {
		case *number:
			if math.IsNaN(float64(*p)) || math.IsInf(float64(*p), 0) {
				return figureValues(fleet.Figures{})
			}
			vs[i] = float64(*p)
		case *string:
			vs[i] = *p
		case *bool:
			vs[i] = *p
		}
	}
	return vs
}
