package kinds

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocsNameEveryKind: the lists of kinds a reader meets in the docs
// (the schemas and the documents' "test" values in docs/json.md, a
// schedule's --kind in docs/fleet.md, the API's Kind enum in
// docs/openapi.yaml) name every row of the table: a new kind that
// forgets one fails here (rfc2544 was missing from all three docs lists
// for months).
func TestDocsNameEveryKind(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", "docs", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	between := func(s, from, to string) string {
		i := strings.Index(s, from)
		if i < 0 {
			t.Fatalf("no %q", from)
		}
		j := strings.Index(s[i:], to)
		if j < 0 {
			t.Fatalf("no %q after %q", to, from)
		}
		return s[i : i+j]
	}
	json, fleet := read("json.md"), read("fleet.md")
	lists := []struct {
		where, text string
		word        func(Kind) string
	}{
		{"docs/json.md's schemas", between(json, "[schema/](schema/):", "KIND.schema.json"), func(k Kind) string { return "`" + k.File + "`" }},
		{"docs/json.md's test values", between(json, "| `test` | string |", "\n"), func(k Kind) string { return "`" + k.Test + "`" }},
		{"docs/fleet.md's --kind", between(fleet, "(`--kind`:", "with its config"), func(k Kind) string { return " " + k.File + "," }},
	}
	for _, l := range lists {
		for _, k := range All() {
			if !strings.Contains(strings.ReplaceAll(l.text, "\n", " "), l.word(k)) {
				t.Errorf("%s lack %s", l.where, k.File)
			}
		}
	}
	m := regexp.MustCompile(`(?m)^    Kind:\n\s+type: string\n\s+enum: \[([^\]]*)\]`).FindStringSubmatch(read("openapi.yaml"))
	if m == nil {
		t.Fatal("no Kind enum in docs/openapi.yaml")
	}
	var want []string
	for _, k := range All() {
		want = append(want, k.File)
	}
	if got := strings.Split(m[1], ", "); !slices.Equal(got, want) {
		t.Errorf("docs/openapi.yaml's Kind enum %q, want the table's %q", got, want)
	}
}
