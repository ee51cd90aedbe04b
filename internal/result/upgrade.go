package result

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// A document of an older schema is read by upgrading its JSON, one
// schema at a time, into today's keys before it is decoded: the upgrade
// renames what was renamed and converts what changed unit, so today's
// types, renderers and figures read it as if emitted today. Each step
// knows where its kind of document kept what changed; docs/json.md
// lists the changes of each version.

// upgrades[v] takes a document of schema v to schema v+1, in place.
var upgrades = map[int]func(test string, doc map[string]any){1: upgrade1}

// upgrade returns b, a document of schema from, as a document of
// today's schema that records from as UpgradedFrom. Numbers keep their
// text (json.Number), so counts above 2^53 are not rounded.
func upgrade(b []byte, test string, from int) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var doc map[string]any
	if err := d.Decode(&doc); err != nil {
		return nil, err
	}
	for v := from; v < Schema; v++ {
		step, ok := upgrades[v]
		if !ok {
			return nil, fmt.Errorf("no upgrade from schema %d", v)
		}
		step(test, doc)
	}
	doc["schema"], doc["upgraded_from"] = Schema, from
	return json.Marshal(doc)
}

// upgrade1 takes schema 1 to 2, where every delay distribution took the
// shape of stats.Delays (count, min_us, mean_us, p50_us, p90_us, p99_us,
// max_us, stddev_us). In schema 1 an RTTStats (tcp's latency_idle and
// latency_loaded, rtt's and ping's summary) had median_us, no count and
// no p90_us (but ping's); a udp stream's latency (also RFC 2544's latency
// trials and their summary) had no count and no stddev_us; Y.1564's
// delay was in ns (min_ns, mean_ns, p99_ns, max_ns) with no count, p50,
// p90 or stddev; STAMP's delays lacked only stddev_us. rtt's
// summary.interval_ms, the config's interval_ns in ms, is gone. Figures
// schema 1 did not record stay absent, and read 0.
func upgrade1(test string, doc map[string]any) {
	rttStats := func(o map[string]any) {
		rename(o, "median_us", "p50_us")
		copyKey(o, "received", "count")
	}
	latency := func(o map[string]any) { copyKey(o, "replies", "count") }
	switch test {
	case "tcp":
		each(doc, "summary.latency_idle", rttStats)
		each(doc, "summary.latency_loaded", rttStats)
	case "rtt":
		each(doc, "summary", rttStats)
		each(doc, "summary", func(o map[string]any) { delete(o, "interval_ms") })
	case "ping":
		each(doc, "summary", rttStats)
	case "udp":
		each(doc, "summary.latency", latency)
	case "rfc2544":
		each(doc, "directions.*.sizes.[].latency.trials.[]", latency)
		each(doc, "directions.*.sizes.[].latency.summary", latency)
	case "y1564":
		each(doc, "services.[].config_steps.[].figures.delay", y1564Delay1)
		each(doc, "services.[].performance.figures.delay", y1564Delay1)
	}
}

// y1564Delay1 is a schema-1 Y.1564 delay in today's keys: µs from ns.
func y1564Delay1(o map[string]any) {
	for _, k := range []string{"min", "mean", "p99", "max"} {
		if v, ok := o[k+"_ns"].(json.Number); ok {
			if ns, err := v.Float64(); err == nil {
				o[k+"_us"] = ns / 1e3
			}
			delete(o, k+"_ns")
		}
	}
	copyKey(o, "replies", "count")
}

// each calls f on every object at path in v: a dotted list of keys, where
// "[]" steps into each element of an array and "*" into each value of an
// object. A path that is not there calls nothing.
func each(v any, path string, f func(map[string]any)) {
	if path == "" {
		if o, ok := v.(map[string]any); ok {
			f(o)
		}
		return
	}
	step, rest, _ := strings.Cut(path, ".")
	switch step {
	case "[]":
		a, _ := v.([]any)
		for _, e := range a {
			each(e, rest, f)
		}
	case "*":
		o, _ := v.(map[string]any)
		for _, e := range o {
			each(e, rest, f)
		}
	default:
		if o, ok := v.(map[string]any); ok {
			each(o[step], rest, f)
		}
	}
}

// rename moves o's key from to key to, if o has it.
func rename(o map[string]any, from, to string) {
	if v, ok := o[from]; ok {
		o[to] = v
		delete(o, from)
	}
}

// copyKey sets o's key to to the value of its key from, if o has that
// and not to.
func copyKey(o map[string]any, from, to string) {
	if _, ok := o[to]; ok {
		return
	}
	if v, ok := o[from]; ok {
		o[to] = v
	}
}
