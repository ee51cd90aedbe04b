package result

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/y1564"
)

// TestFieldErrorsNameFields: a kind's config refused by its own rules
// says so with a *FieldError whose field is one of the config's JSON
// fields (a list's or a nested config's with its path): a form can put
// the message beside the field, the CLI beside its flag.
func TestFieldErrorsNameFields(t *testing.T) {
	svc := y1564.Service{Name: "voice", CIRBps: 1e6, FrameBytes: 200}
	for _, c := range []struct {
		name  string
		cfg   interface{ Validate() error }
		field string
	}{
		{"tcp negative duration", TCPConfig{Streams: 1, Duration: -1}.WithDefaults(), "duration_ns"},
		{"tcp window past 1 GiB", TCPConfig{Window: MaxWindow + 1}.WithDefaults(), "window_bytes"},
		{"tcp dscp 64", TCPConfig{DSCP: 64}.WithDefaults(), "dscp"},
		{"tcp reverse and bidir", TCPConfig{Reverse: true, Bidir: true}.WithDefaults(), "bidir"},
		{"udp negative drain", UDPConfig{Drain: -1}.WithDefaults(), "drain_ns"},
		{"rtt count 0", RTTConfig{Count: -1}.WithDefaults(), "count"},
		{"pmtu max below min", PMTUConfig{MinBytes: 1400, MaxBytes: 1300}.WithDefaults(), "max_bytes"},
		{"train negative drain", TrainConfig{Drain: -1}.WithDefaults(), "drain_ns"},
		{"rfc6349 no cir", RFC6349Config{}.WithDefaults(), "cir_bps"},
		{"rfc6349 unknown link", RFC6349Config{CIRBps: 1e8, Link: "fddi"}.WithDefaults(), "link"},
		{"rfc2544 trial 1ns", RFC2544Config{LineRateBps: 1e8, Trial: 1}.WithDefaults(), "trial_ns"},
		{"rfc2544 latency alone", RFC2544Config{LineRateBps: 1e8, Tests: []string{BenchLatency}}.WithDefaults(), "tests"},
		{"sweep mss 87", WindowSweepConfig{MSS: 87}.WithDefaults(), "mss_bytes"},
		{"msglen size 0", MsgLenSweepConfig{Sizes: []int{0}}.WithDefaults(), "sizes_bytes"},
		{"trains no rtt", TrainsConfig{RateBps: 1e8}.WithDefaults(), "rtt_ns"},
		{"y1564 no service", Y1564Config{}.WithDefaults(), "services"},
		{"y1564 service twice", Y1564Config{Services: []y1564.Service{svc, svc}}.WithDefaults(), "services[1]"},
		{"y1564 perf time 1ns", Y1564Config{Services: []y1564.Service{svc}, PerfTime: 1}.WithDefaults(), "perf_time_ns"},
		{"stamp timestamps", STAMPConfig{Timestamps: "gps"}.WithDefaults(), "timestamps"},
		{"ping wait 0", PingConfig{Probe: ProbeEcho, Wait: -time.Second}.WithDefaults(), "wait_ns"},
	} {
		err := c.cfg.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s: %v, want a *FieldError at %q", c.name, err, c.field)
			continue
		}
		base, _, _ := strings.Cut(strings.SplitN(fe.Field, "[", 2)[0], ".")
		if !slices.Contains(jsonNames(reflect.TypeOf(c.cfg)), base) {
			t.Errorf("%s: field %q is not one of %T's JSON fields %v", c.name, fe.Field, c.cfg, jsonNames(reflect.TypeOf(c.cfg)))
		}
		if fe.Msg == "" || !strings.HasPrefix(err.Error(), fe.Field+": ") {
			t.Errorf("%s: %q says nothing beyond its field", c.name, err)
		}
	}
}

// jsonNames are a struct type's JSON field names.
func jsonNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if tag != "" && tag != "-" {
			out = append(out, tag)
		}
	}
	return out
}

// TestWithin: a nested config's refusal gets its parent's name; a plain
// error becomes one at the parent; nil stays nil.
func TestWithin(t *testing.T) {
	if err := within("tcp", fieldErr("mss_bytes", "87")); err.Error() != "tcp.mss_bytes: 87" {
		t.Errorf("nested: %v", err)
	}
	if err := within("link", errors.New("unknown")); err.Error() != "link: unknown" {
		t.Errorf("plain: %v", err)
	}
	wrapped := within("services[0]", fmt.Errorf("service %q, step %s: %w", "voice", "150 %", fieldErr("dscp", "64")))
	if wrapped.Error() != `services[0]: service "voice", step 150 %: dscp: 64` {
		t.Errorf("wrapped: %v (the words around a nested refusal are kept)", wrapped)
	}
	if within("x", nil) != nil {
		t.Error("nil became an error")
	}
}
