package store

import (
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
// columns scan to.
func figureFields(f *fleet.Figures) []any {
	return []any{&f.ThroughputBps, &f.IdealBps, &f.RTTMs, &f.RTTLoadedMs, &f.LossPct, &f.BufferDelayPct, &f.Verdict, &f.Partial,
		&f.Implausible, &f.DownThroughputBps, &f.DownIdealBps, &f.DownRTTLoadedMs, &f.DownLossPct, &f.DownBufferDelayPct}
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
		case *float64:
			if math.IsNaN(*p) || math.IsInf(*p, 0) {
				return figureValues(fleet.Figures{})
			}
			vs[i] = *p
		case *string:
			vs[i] = *p
		case *bool:
			vs[i] = *p
		}
	}
	return vs
}
