package fleet

import (
	"fmt"
	"math"

	"github.com/fullpipe/fullpipe/internal/field"
)

// Health is a result judged against its schedule's thresholds.
type Health string

// Healths. The zero Health is "not judged": no thresholds, or none of
// the figures they name was measured.
const (
	HealthOK    Health = "ok"
	HealthAlert Health = "alert"
)

// Thresholds are a schedule's limits: a result that crosses any of them
// is an alert. Zero fields do not judge.
type Thresholds struct {
	MinThroughputPct  float64 `json:"min_throughput_pct,omitempty"`   // goodput below this % of the ideal rate (RFC 6349's; needs IdealBps)
	MinThroughputBps  float64 `json:"min_throughput_bps,omitempty"`   // goodput below this, bit/s
	MaxRTTMs          float64 `json:"max_rtt_ms,omitempty"`           // idle (minimum or baseline) RTT above this, ms
	MaxRTTLoadedMs    float64 `json:"max_rtt_loaded_ms,omitempty"`    // RTT under load above this, ms
	MaxLossPct        float64 `json:"max_loss_pct,omitempty"`         // loss above this, %
	MaxBufferDelayPct float64 `json:"max_buffer_delay_pct,omitempty"` // RFC 6349 buffer delay above this, %
	FailVerdict       bool    `json:"fail_verdict,omitempty"`         // a fail verdict is an alert
}

// Check refuses limits that cannot be meant; field names the JSON field.
func (t Thresholds) Check() error {
	for _, f := range []struct {
		field string
		v     float64
		max   float64
	}{
		{"min_throughput_pct", t.MinThroughputPct, 100},
		{"min_throughput_bps", t.MinThroughputBps, 1e15},
		{"max_rtt_ms", t.MaxRTTMs, 1e6},
		{"max_rtt_loaded_ms", t.MaxRTTLoadedMs, 1e6},
		{"max_loss_pct", t.MaxLossPct, 100},
		{"max_buffer_delay_pct", t.MaxBufferDelayPct, 1e6},
	} {
		if f.v < 0 || f.v > f.max || math.IsNaN(f.v) {
			return &FieldError{Field: "thresholds." + f.field, Msg: fmt.Sprintf("%g: want 0 (none) to %g", f.v, f.max)}
		}
	}
	return nil
}

// Judge is one direction's health and, when alert, which limits it
// crossed ("throughput 41.2 Mbit/s is 44 % of ideal 94.1 Mbit/s, below
// 90 %"). A figure not measured (zero) is not judged; a result none of
// whose judged figures was measured is not judged ("").
func (t Thresholds) Judge(d Direction) (Health, []string) {
	var why []string
	judged := false
	low := func(name string, v, limit float64, unit string) {
		if limit <= 0 || v <= 0 {
			return
		}
		judged = true
		if v < limit {
			why = append(why, fmt.Sprintf("%s %.4g %s is below %.4g %s", name, v, unit, limit, unit))
		}
	}
	high := func(name string, v, limit float64, unit string, measured bool) {
		if limit <= 0 || !measured {
			return
		}
		judged = true
		if v > limit {
			why = append(why, fmt.Sprintf("%s %.4g %s is above %.4g %s", name, v, unit, limit, unit))
		}
	}
	if d.IdealBps > 0 && d.ThroughputBps > 0 {
		low("throughput as % of ideal", d.ThroughputBps/d.IdealBps*100, t.MinThroughputPct, "%")
	}
	low("throughput", d.ThroughputBps/1e6, t.MinThroughputBps/1e6, "Mbit/s")
	high("RTT", d.RTTMs, t.MaxRTTMs, "ms", d.RTTMs > 0)
	high("loaded RTT", d.RTTLoadedMs, t.MaxRTTLoadedMs, "ms", d.RTTLoadedMs > 0)
	high("loss", d.LossPct, t.MaxLossPct, "%", d.ThroughputBps > 0 || d.RTTMs > 0)
	high("buffer delay", d.BufferDelayPct, t.MaxBufferDelayPct, "%", d.ThroughputBps > 0)
	if t.FailVerdict && d.Verdict != "" {
		judged = true
		if d.Verdict == "fail" {
			why = append(why, "verdict fail")
		}
	}
	switch {
	case len(why) > 0:
		return HealthAlert, why
	case judged:
		return HealthOK, nil
	}
	return "", nil
}

// Health is a result's health: the worse of its directions.
func (t Thresholds) Health(f Figures) Health {
	h, _ := t.Judge(f.Up())
	if d, ok := f.Down(); ok {
		if hd, _ := t.Judge(d); hd == HealthAlert || h == "" {
			h = hd
		}
	}
	return h
}

// FieldError is a refused input that names its field (a JSON path such
// as "test.config.trial_ns" or "thresholds.max_rtt_ms"), so a form can
// show the message beside it: the configs' own type (result.FieldError,
// both package field's Error), whose fields are the config's, named
// here at the schedule's.
type FieldError = field.Error
