package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

func generate(t *testing.T) (string, map[string][]byte) {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	return root, files
}

// TestCheckedIn: docs/schema holds exactly what the generator writes
// from today's types, so a change of a document's type that was not
// regenerated fails here.
func TestCheckedIn(t *testing.T) {
	root, files := generate(t)
	dir := filepath.Join(root, Dir)
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s/%s is not what the types give (%v): run go generate ./internal/result", Dir, name, err)
		}
	}
	old, _ := filepath.Glob(filepath.Join(dir, "*.schema.json"))
	for _, p := range old {
		if _, ok := files[filepath.Base(p)]; !ok {
			t.Errorf("%s: no document kind has this schema: run go generate ./internal/result", p)
		}
	}
}

// TestSchemaShape: the words are enums (from their constants), omitempty
// keys are optional and the others required, definitions of two packages
// with the same type name do not collide, and field comments become
// descriptions.
func TestSchemaShape(t *testing.T) {
	_, files := generate(t)
	var rfc map[string]any
	if err := json.Unmarshal(files["rfc6349.schema.json"], &rfc); err != nil {
		t.Fatal(err)
	}
	defs := rfc["$defs"].(map[string]any)
	prop := func(def, key string) map[string]any {
		t.Helper()
		d, ok := defs[def].(map[string]any)
		if !ok {
			t.Fatalf("no definition %s", def)
		}
		p, ok := d["properties"].(map[string]any)[key].(map[string]any)
		if !ok {
			t.Fatalf("%s has no key %s", def, key)
		}
		return p
	}
	for _, tc := range []struct{ def, key, want string }{
		{"WalkRow", "direction", `["up","down"]`},
		{"ShapingRow", "verdict", `["policed","shaped","none","undecided"]`},
		{"sweep.WindowPoint", "region", `["linear","transition","saturation","overflow"]`},
		{"rfc6349.Finding", "cause", `["window","host","policer","loss","buffer","mtu"]`},
		{"train.Verdict", "kind", `["clean","queue","policer","lossy","unknown","undecided"]`},
	} {
		if got, _ := json.Marshal(prop(tc.def, tc.key)["enum"]); string(got) != tc.want {
			t.Errorf("%s.%s enum %s, want %s", tc.def, tc.key, got, tc.want)
		}
	}
	req := func(def string) []any { return defs[def].(map[string]any)["required"].([]any) }
	if r := req("ThroughputRow"); !slices.Contains(r, "window_bytes") || slices.Contains(r, "sender_cpu") || slices.Contains(r, "series") {
		t.Errorf("ThroughputRow requires %v: want window_bytes, not the omitempty sender_cpu and series", r)
	}
	if _, ok := defs["Verdict"]; !ok || defs["train.Verdict"] == nil {
		t.Errorf("result.Verdict and train.Verdict should be two definitions")
	}
	if d, _ := prop("Baseline", "baseline_ms")["description"].(string); d == "" {
		t.Errorf("Baseline.baseline_ms has no description from its field comment")
	}
}

// TestOptional: a key added within a schema version without omitempty is
// kept out of required by `jsonschema:"optional"`, so that the documents
// older fullpipes wrote, which lack it, still validate.
func TestOptional(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	g := &generator{root: root, types: map[string]reflect.Type{}, enums: map[reflect.Type][]any{}}
	type doc struct {
		Old   int   `json:"old"`
		Added int   `json:"added" jsonschema:"optional"`
		Maybe []int `json:"maybe,omitempty"`
	}
	s, err := g.reflect(reflect.TypeFor[doc]())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Required, []string{"old"}) {
		t.Errorf("required %v, want [old]", s.Required)
	}
}
