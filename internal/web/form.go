package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// form is the schedule form's fields as typed, kept to show again with
// the errors beside them.
type form struct {
	Name, Kind, Duration, Config                   string
	FromAgents, FromSite, FromLabels               string
	ToAgents, ToSite, ToLabels                     string
	Both                                           bool
	Repeat, Start, Slip                            string
	MinPct, MinMbps, MaxRTT, MaxRTTLoaded, MaxLoss string
	MaxDelay                                       string
	FailVerdict                                    bool
}

// readForm reads the posted form (bounded: 64 KiB).
func readForm(r *http.Request) form {
	g := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	return form{Name: g("name"), Kind: g("kind"), Duration: g("duration"), Config: g("config"),
		FromAgents: g("from_agents"), FromSite: g("from_site"), FromLabels: g("from_labels"),
		ToAgents: g("to_agents"), ToSite: g("to_site"), ToLabels: g("to_labels"), Both: g("both") != "",
		Repeat: g("repeat"), Start: g("start"), Slip: g("slip"),
		MinPct: g("thr_min_pct"), MinMbps: g("thr_min_mbps"), MaxRTT: g("thr_max_rtt"), MaxRTTLoaded: g("thr_max_rtt_loaded"),
		MaxLoss: g("thr_max_loss"), MaxDelay: g("thr_max_delay"), FailVerdict: g("thr_fail_verdict") != ""}
}

// schedule is the form as a schedule, or the fields it cannot read.
func (f form) schedule() (fleet.Schedule, map[string]string) {
	errs := map[string]string{}
	sc := fleet.Schedule{Name: f.Name, Test: fleet.Test{Kind: f.Kind}, Both: f.Both, Repeat: f.Repeat}
	sc.From, sc.To = selector(f.FromAgents, f.FromSite, f.FromLabels, "from", errs), selector(f.ToAgents, f.ToSite, f.ToLabels, "to", errs)
	cfg := map[string]any{}
	if f.Config != "" {
		if err := json.Unmarshal([]byte(f.Config), &cfg); err != nil {
			errs["config"] = "not a JSON object: " + err.Error()
		}
	}
	if f.Duration != "" {
		if d, err := time.ParseDuration(f.Duration); err != nil || d <= 0 {
			errs["duration"] = fmt.Sprintf("%q: want a duration such as 10s or 1m", f.Duration)
		} else {
			cfg["duration_ns"] = d.Nanoseconds()
		}
	}
	if len(cfg) > 0 {
		sc.Test.Config, _ = json.Marshal(cfg)
	}
	if f.Start != "" {
		t, err := time.Parse(time.RFC3339, f.Start)
		if err != nil {
			errs["start"] = fmt.Sprintf("%q: want a UTC time such as 2026-11-24T12:00:00Z, or nothing for now", f.Start)
		}
		sc.Start = t
	}
	if f.Slip != "" {
		d, err := time.ParseDuration(f.Slip)
		if err != nil {
			errs["slip"] = fmt.Sprintf("%q: want a duration such as 30s", f.Slip)
		}
		sc.Slip = d
	}
	sc.Thresholds = f.thresholds(errs)
	return sc, errs
}

// thresholds are the form's limits (nil: none given).
func (f form) thresholds(errs map[string]string) *fleet.Thresholds {
	var t fleet.Thresholds
	for _, x := range []struct {
		field, v string
		dst      *float64
		scale    float64
	}{
		{"thr_min_pct", f.MinPct, &t.MinThroughputPct, 1}, {"thr_min_mbps", f.MinMbps, &t.MinThroughputBps, 1e6},
		{"thr_max_rtt", f.MaxRTT, &t.MaxRTTMs, 1}, {"thr_max_rtt_loaded", f.MaxRTTLoaded, &t.MaxRTTLoadedMs, 1},
		{"thr_max_loss", f.MaxLoss, &t.MaxLossPct, 1}, {"thr_max_delay", f.MaxDelay, &t.MaxBufferDelayPct, 1},
	} {
		if x.v == "" {
			continue
		}
		n, err := strconv.ParseFloat(x.v, 64)
		if err != nil {
			errs[x.field] = fmt.Sprintf("%q: want a number", x.v)
			continue
		}
		*x.dst = n * x.scale
	}
	t.FailVerdict = f.FailVerdict
	if t == (fleet.Thresholds{}) {
		return nil
	}
	return &t
}

// selector reads one side's agents (names apart by commas or spaces),
// site and labels (k=v, apart by commas or spaces).
func selector(agents, site, labels, which string, errs map[string]string) fleet.Selector {
	sel := fleet.Selector{Agents: words(agents), Site: site}
	for _, kv := range words(labels) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			errs[which] = fmt.Sprintf("label %q: want key=value", kv)
			continue
		}
		if sel.Labels == nil {
			sel.Labels = map[string]string{}
		}
		sel.Labels[k] = v
	}
	return sel
}

func words(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '\r' })
}

// formOf is a stored schedule as the form shows it.
func formOf(sc fleet.Schedule) form {
	f := form{Name: sc.Name, Kind: sc.Test.Kind, Both: sc.Both, Repeat: sc.Repeat,
		FromAgents: strings.Join(sc.From.Agents, ", "), FromSite: sc.From.Site, FromLabels: labelsOf(sc.From.Labels),
		ToAgents: strings.Join(sc.To.Agents, ", "), ToSite: sc.To.Site, ToLabels: labelsOf(sc.To.Labels)}
	if len(sc.Test.Config) > 0 {
		f.Config = string(sc.Test.Config)
	}
	if !sc.Start.IsZero() {
		f.Start = sc.Start.UTC().Format(time.RFC3339Nano) // to the millisecond, as stored: an edit that keeps it does not move it
	}
	if sc.Slip > 0 {
		f.Slip = sc.Slip.String()
	}
	if t := sc.Thresholds; t != nil {
		g := func(v, scale float64) string {
			if v == 0 {
				return ""
			}
			return strconv.FormatFloat(v/scale, 'g', -1, 64)
		}
		f.MinPct, f.MinMbps, f.MaxRTT, f.MaxRTTLoaded = g(t.MinThroughputPct, 1), g(t.MinThroughputBps, 1e6), g(t.MaxRTTMs, 1), g(t.MaxRTTLoadedMs, 1)
		f.MaxLoss, f.MaxDelay, f.FailVerdict = g(t.MaxLossPct, 1), g(t.MaxBufferDelayPct, 1), t.FailVerdict
	}
	return f
}

func labelsOf(m map[string]string) string {
	var ls []string
	for k, v := range m {
		ls = append(ls, k+"="+v)
	}
	return strings.Join(sortStrings(ls), ", ")
}

// formFields maps a refused JSON field to the form field it came from.
var formFields = map[string]string{
	"name": "name", "test.kind": "kind", "test.config": "config", "test": "config", "from": "from", "to": "to",
	"repeat": "repeat", "start": "start", "slip_ns": "slip",
	"thresholds.min_throughput_pct": "thr_min_pct", "thresholds.min_throughput_bps": "thr_min_mbps",
	"thresholds.max_rtt_ms": "thr_max_rtt", "thresholds.max_rtt_loaded_ms": "thr_max_rtt_loaded",
	"thresholds.max_loss_pct": "thr_max_loss", "thresholds.max_buffer_delay_pct": "thr_max_delay",
}

func formField(jsonField string) string {
	if f, ok := formFields[jsonField]; ok {
		return f
	}
	if strings.HasPrefix(jsonField, "test.") {
		return "config"
	}
	return "form"
}
