package cli

import (
	"errors"
	"strings"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/result"
)

// A config's Validate (package result) names a refused value by its
// JSON field; the CLI says it at the flag that sets that field, so the
// rule lives once, in result, and the user reads "--mss: ...". A field's
// flag is its name less the unit suffix, with dashes ("duration_ns" →
// --duration), unless the command names it otherwise (renamer).

// renamer is a command whose flags do not all follow the fields' names:
// a JSON field (its name before any "[" or ".") → its flag, "" for a
// field no flag sets.
type renamer interface{ renamed() map[string]string }

// unitSuffixes are the JSON fields' unit suffixes, which flags leave out
// (their values carry the unit: 10s, 64K, 100M).
var unitSuffixes = []string{"_ns", "_bytes", "_bps", "_pct", "_pps"}

// flagged is err said as a usage error: a *result.FieldError at the flag
// that sets its field ("--window: 2147483648 bytes is above ..."), with
// the field's path when it is inside a list or a nested config (as it
// is when its message starts with the flag already); any other error,
// or a field no flag sets, as it is.
func flagged(err error, fs *pflag.FlagSet, renamed map[string]string) error {
	var fe *result.FieldError
	if !errors.As(err, &fe) {
		return usagef("%v", err)
	}
	name := flagOf(fe.Field, fs, renamed)
	switch {
	case name == "":
		return usagef("%v", err)
	case strings.HasPrefix(fe.Msg, "--"+name+" "): // rfc6349.LinkByName's
		return usagef("%s", fe.Msg)
	case strings.ContainsAny(fe.Field, "[."): // which of the flag's values, or which part
		return usagef("--%s: %s: %s", name, fe.Field, fe.Msg)
	}
	return usagef("--%s: %s", name, fe.Msg)
}

// flagOf is the flag of fs that sets field, "" when none does.
func flagOf(field string, fs *pflag.FlagSet, renamed map[string]string) string {
	base := baseField(field)
	if f, ok := renamed[base]; ok {
		return f
	}
	name := base
	for _, u := range unitSuffixes {
		name = strings.TrimSuffix(name, u)
	}
	name = strings.ReplaceAll(name, "_", "-")
	if fs.Lookup(name) == nil {
		return ""
	}
	return name
}

// A config reads 0 in most of its fields as "not given": the default,
// or no bound. A flag the user set to 0 would then run the default
// without a word, so the command refuses it before the config is
// checked; any other value is the config's to judge (config, said at
// the flag by flagged), so no range lives here twice.

// zeroed is one flag whose config field reads 0 as "not given": zero
// says its value is 0, want what to give instead.
type zeroed struct {
	flag string
	zero bool
	want string
}

// refuseZeros is a usage error at the first of flags the user set to 0,
// or nil.
func refuseZeros(in input, flags ...zeroed) error {
	for _, f := range flags {
		if f.zero && in.changed(f.flag) {
			return usagef("--%s 0: %s", f.flag, f.want)
		}
	}
	return nil
}

// baseField is a field path's first name: "services" of "services[1]",
// "tcp" of "tcp.duration_ns".
func baseField(field string) string {
	if i := strings.IndexAny(field, "[."); i >= 0 {
		return field[:i]
	}
	return field
}

// The commands whose flags do not all follow their config's fields.

func (a *tcpArgs) renamed() map[string]string {
	return map[string]string{"pacing_bps": "pacing-rate", "write_size_bytes": "length"}
}

func (a *rfcArgs) renamed() map[string]string {
	return map[string]string{"directions": "direction", "throughput_duration_ns": "duration",
		"thresholds": "min-actual-pct", "sweep_points": "sweep"}
}

func (a *windowSweepArgs) renamed() map[string]string {
	return map[string]string{"windows_bytes": "from", "mss_bytes": "segment", "reverse": "direction",
		"probe_dscps": "dscp-probes", "settle_ns": ""} // settle: a third of --duration
}

func (a *trainsArgs) renamed() map[string]string { return map[string]string{"directions": "direction"} }

func (a *pingArgs) renamed() map[string]string {
	port := ""
	if a.probe == result.ProbeUnreach {
		port = "port"
	}
	return map[string]string{"probe": "", "port": port} // the command is the probe
}

func (a *rfc2544Args) renamed() map[string]string {
	return map[string]string{"line_rate_bps": "rate", "frame_sizes": "sizes", "directions": "direction",
		"drain_ns": "", "echo_every": "", "burst_time_ns": ""} // the run's defaults, not flags
}

func (a *stampArgs) renamed() map[string]string {
	return map[string]string{"wait_ns": "timeout", "key": ""} // a key by name: scheduled tests only
}
