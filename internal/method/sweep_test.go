package method

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestSweepJSONDocumented: every key of the sweep results is in the
// sweep sections of docs/json.md (not merely somewhere in the file).
func TestSweepJSONDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "## `sweep window`")
	j := strings.Index(doc, "## Example")
	if i < 0 || j < i {
		t.Fatal("docs/json.md has no sweep section before the example")
	}
	section := doc[i:j]
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] || !strings.HasPrefix(typ.PkgPath(), "github.com/fullpipe/") {
			return
		}
		seen[typ] = true
		for k := range typ.NumField() {
			f := typ.Field(k)
			if f.Anonymous {
				continue // result.Meta: the common keys
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			if !strings.Contains(section, "`"+name+"`") && !strings.Contains(section, "`"+name+"[]`") && !strings.Contains(section, ", `"+name) {
				t.Errorf("%s.%s: key %q is not documented in the sweep sections of docs/json.md", typ.Name(), f.Name, name)
			}
			walk(f.Type)
		}
	}
	for _, v := range []any{WindowSweep{}, WindowSweepConfig{}, MsgLenSweep{}, MsgLenSweepConfig{}} {
		walk(reflect.TypeOf(v))
	}
}
