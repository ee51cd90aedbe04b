package result_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/result/resulttest"
)

// TestDecodeTestdata: the documents an earlier fullpipe emitted
// (testdata: one per kind, and more where a kind had shapes its first
// lacked) validate against the schema of their version and decode into
// today's types key for key: encoding what Decode returned gives every
// key of theirs back with its value (and any key added since), so none
// is lost or renamed, but for what their schema's upgrade renames
// (upgraded, below); that encoding validates against today's schema.
func TestDecodeTestdata(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range files {
		t.Run(filepath.Base(p), func(t *testing.T) {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			resulttest.Validate(t, b)
			d, err := result.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			k, ok := result.KindOf(d.Head().Test)
			if !ok {
				t.Fatalf("decoded test %q, no kind", d.Head().Test)
			}
			seen[k.File] = true
			if got, want := reflect.TypeOf(d), reflect.TypeOf(k.New()); got != want {
				t.Fatalf("decoded a %v, want %v", got, want)
			}
			if d.Head().Schema != result.Schema || d.Head().UpgradedFrom != 1 {
				t.Errorf("head %+v: want schema %d, upgraded from 1", d.Head(), result.Schema)
			}
			again, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range lost(t, b, again) {
				if !upgraded1.MatchString(p) {
					t.Errorf("decoding and encoding again lost or changed %s", p)
				}
			}
			resulttest.Validate(t, again)
		})
	}
	for _, k := range result.Kinds() {
		if !seen[k.File] {
			t.Errorf("no document of kind %q in testdata (%s.json)", k.Test, k.File)
		}
	}
}

// upgraded1 matches the paths (as lost names them) of what the upgrade
// from schema 1 renames or removes (docs/json.md, schema 2): the schema
// itself, an RTTStats' median_us (now p50_us), rtt's summary.interval_ms,
// Y.1564's delay in ns (now µs). TestUpgradeFigures checks the values.
var upgraded1 = regexp.MustCompile(`^(\.schema|.*\.median_us|\.summary\.interval_ms|.*\.figures\.delay\.(min|mean|p99|max)_ns) \(`)

// lost lists the paths of the values of JSON document a that b lacks or
// holds otherwise (b may have more keys).
func lost(t *testing.T, a, b []byte) []string {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(path string, x, y any)
	walk = func(path string, x, y any) {
		switch xv := x.(type) {
		case map[string]any:
			yv, ok := y.(map[string]any)
			if !ok {
				out = append(out, path)
				return
			}
			for k, v := range xv {
				walk(path+"."+k, v, yv[k])
			}
		case []any:
			yv, ok := y.([]any)
			if !ok || len(yv) != len(xv) {
				out = append(out, path)
				return
			}
			for i := range xv {
				walk(fmt.Sprintf("%s[%d]", path, i), xv[i], yv[i])
			}
		default:
			if !reflect.DeepEqual(x, y) {
				out = append(out, fmt.Sprintf("%s (%v, now %v)", path, x, y))
			}
		}
	}
	walk("", x, y)
	return out
}

// edit decodes a testdata document into a map, lets f change it and
// encodes it again.
func edit(t *testing.T, file string, f func(m map[string]any)) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDecodeFutureKeys: keys a newer fullpipe adds within the same schema
// are ignored, at the top and inside.
func TestDecodeFutureKeys(t *testing.T) {
	b := edit(t, "tcp.json", func(m map[string]any) {
		m["future_key"] = map[string]any{"x": 1}
		m["summary"].(map[string]any)["future_bps"] = 1e9
	})
	resulttest.Validate(t, b) // the schema allows them too
	d, err := result.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if d.(*result.TCP).Summary.ThroughputBps == 0 {
		t.Errorf("known keys lost beside unknown ones: %+v", d.(*result.TCP).Summary)
	}
}

// TestDecodeRefuses: a newer schema, no schema and an unknown test are
// refused, each with an error that says which.
func TestDecodeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		doc    string
		schema int // the *SchemaError's Got, or -1 for none
		unk    bool
		says   string
	}{
		{"newer schema", fmt.Sprintf(`{"schema": %d, "test": "tcp", "summary": {"renamed": 1}}`, result.Schema+1), result.Schema + 1, false, "newer"},
		{"no schema", `{"test": "tcp"}`, 0, false, "no \"schema\""},
		{"demo wrapper", `{"rtt": {"schema": 1, "test": "rtt"}}`, 0, false, "demo"},
		{"unknown test", `{"schema": 1, "test": "teleport"}`, -1, true, "teleport"},
		{"not JSON", `schema: 1`, -1, false, "decode document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := result.Decode(strings.NewReader(tc.doc))
			if err == nil {
				t.Fatal("decoded")
			}
			var se *result.SchemaError
			if got := errors.As(err, &se); got != (tc.schema >= 0) || got && se.Got != tc.schema {
				t.Errorf("error %v: SchemaError %v (%+v), want Got %d", err, got, se, tc.schema)
			}
			if errors.Is(err, result.ErrUnknownTest) != tc.unk {
				t.Errorf("error %v: unknown test %v, want %v", err, !tc.unk, tc.unk)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not say %q", err, tc.says)
			}
		})
	}
}
