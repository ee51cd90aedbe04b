package cli

import (
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/result"
)

// TestFieldFlags: every JSON field of every configured command's config
// is set by a flag of that command (by the field's name less its unit,
// or the command's renamed map) or named there as set by none: a
// config's refusal is always said at a flag the user can find.
func TestFieldFlags(t *testing.T) {
	n := 0
	var leaves func([]spec, string)
	leaves = func(ss []spec, path string) {
		for _, s := range ss {
			name := strings.TrimSpace(path + " " + s.name)
			leaves(s.sub, name)
			if s.new == nil {
				continue
			}
			cmd := s.new()
			if _, ok := cmd.(configured); !ok {
				continue
			}
			cfg := reflect.ValueOf(cmd).Elem().FieldByName("cfg")
			if !cfg.IsValid() {
				t.Errorf("%s: configured, but its args have no cfg", name)
				continue
			}
			fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
			cmd.flags(fs)
			renamed := renames(cmd)
			for _, f := range jsonFields(cfg.Type()) {
				n++
				if r, ok := renamed[f]; ok && r == "" {
					continue // set by no flag, and said so
				}
				flag := flagOf(f, fs, renamed)
				if flag == "" || fs.Lookup(flag) == nil {
					t.Errorf("fullpipe %s: config field %q has no flag (%q): name it in the command's renamed()", name, f, flag)
				}
			}
		}
	}
	leaves(table(), "")
	if n < 50 {
		t.Errorf("checked %d fields; the configs have more", n)
	}
}

// jsonFields are a struct type's JSON field names (embedded structs'
// fields as their own, "-" and unexported left out).
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && tag == "" {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if tag != "-" && tag != "" {
			out = append(out, tag)
		}
	}
	return out
}

// TestFlagged: a config refusal is said at its flag; a nested one with
// its path; a plain error as it is.
func TestFlagged(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.Int("mss", 0, "")
	fs.Int("service", 0, "")
	for _, c := range []struct {
		err     error
		renamed map[string]string
		want    string
	}{
		{&result.FieldError{Field: "mss_bytes", Msg: "87: Linux accepts 88 to 65495 bytes"}, nil, "--mss: 87: Linux accepts 88 to 65495 bytes"},
		{&result.FieldError{Field: "services[1]", Msg: `service "a" named twice`}, map[string]string{"services": "service"}, `--service: services[1]: service "a" named twice`},
		{&result.FieldError{Field: "link", Msg: "x"}, nil, "link: x"},
		{&result.FieldError{Field: "seed", Msg: "y"}, map[string]string{"seed": ""}, "seed: y"},
		{&result.FieldError{Field: "mss_bytes", Msg: "--mss 1: z"}, nil, "--mss 1: z"},
	} {
		if got := flagged(c.err, fs, c.renamed).Error(); got != c.want {
			t.Errorf("%v: %q, want %q", c.err, got, c.want)
		}
	}
}
