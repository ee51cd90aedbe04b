package resulttest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/fullpipe/fullpipe/internal/result"
)

// TestCheck: the schemas refuse what a document of their kind cannot be
// (a word outside its enum, a required key missing, a wrong type, a
// negative count, a bad time, another test's document) and accept what a
// document may be (keys from a newer fullpipe, an omitempty key left out,
// a nil list written as null).
func TestCheck(t *testing.T) {
	summary := func(m map[string]any) map[string]any { return m["summary"].(map[string]any) }
	stream := func(m map[string]any) map[string]any { return summary(m)["streams"].([]any)[0].(map[string]any) }
	for _, tc := range []struct {
		name string
		edit func(m map[string]any)
		ok   bool
	}{
		{"as emitted", func(map[string]any) {}, true},
		{"direction not a direction", func(m map[string]any) { stream(m)["direction"] = "sideways" }, false},
		{"directions keyed by a non-direction", func(m map[string]any) { summary(m)["directions"].(map[string]any)["left"] = map[string]any{} }, false},
		{"summary missing", func(m map[string]any) { delete(m, "summary") }, false},
		{"required key in a stream missing", func(m map[string]any) { delete(stream(m), "bytes_retrans") }, false},
		{"schema a string", func(m map[string]any) { m["schema"] = "1" }, false},
		{"schema 2", func(m map[string]any) { m["schema"] = 2 }, false},
		{"negative unsigned", func(m map[string]any) { stream(m)["bytes_sent"] = -1 }, false},
		{"fractional integer", func(m map[string]any) { stream(m)["bytes"] = 1.5 }, false},
		{"started not a time", func(m map[string]any) { m["started"] = "yesterday" }, false},
		{"udp keys under test tcp", func(m map[string]any) { m["test"] = "udp" }, false},
		{"a newer fullpipe's keys", func(m map[string]any) { m["new"] = 1; stream(m)["new_bps"] = 2.5 }, true},
		{"omitempty key left out", func(m map[string]any) { delete(summary(m), "latency_idle") }, true},
		{"nil list", func(m map[string]any) { m["intervals"] = nil }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(edit(t, tc.edit))
			if (err == nil) != tc.ok {
				t.Errorf("Check = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// edit is result's testdata/tcp.json changed by f.
func edit(t *testing.T, f func(m map[string]any)) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "tcp.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCheckByVersion: a document is checked against the schemas of its
// own version: testdata's tcp.json (schema 1) passes Check against
// docs/schema/1 though today's schema refuses it (it has median_us, no
// p50_us), and what result.Decode makes of it passes today's.
func TestCheckByVersion(t *testing.T) {
	old := edit(t, func(map[string]any) {})
	if err := Check(old); err != nil {
		t.Errorf("schema 1 document against schema 1's schema: %v", err)
	}
	sch, err := Compile("tcp")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	if sch.Validate(inst) == nil {
		t.Errorf("today's schema (%d) accepts a schema 1 document", result.Schema)
	}
	d, err := result.Decode(bytes.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	now, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(now); err != nil {
		t.Errorf("the upgraded document against today's schema: %v", err)
	}
}
