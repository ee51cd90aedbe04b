package jsondoc

import (
	"strings"
	"testing"
)

type inner struct {
	Rate float64 `json:"rate_bps"`
}

type outer struct {
	inner
	Name  string  `json:"name"`
	Items []inner `json:"items"`
	Skip  int     `json:"-"`
}

// TestMissing: a key is found in each documented form and reported when
// absent; embedded keys are walked unless skipped.
func TestMissing(t *testing.T) {
	if m := Missing("`name`, `items[]` (`rate_bps`)", false, outer{}); len(m) != 0 {
		t.Errorf("all documented, got %v", m)
	}
	m := Missing("`name` only", false, outer{})
	if len(m) != 2 || !strings.Contains(m[0], `"rate_bps"`) {
		t.Errorf("want rate_bps reported (embedded and in items), got %v", m)
	}
	if m := Missing("`name`, `items[]`", true, outer{}); len(m) != 1 {
		t.Errorf("embedded skipped, items' rate_bps still missing: got %v", m)
	}
}

func TestSection(t *testing.T) {
	doc := "# a\n## one\nx `k`\n## two\ny\n"
	if s := Section(doc, "## one", "## "); s != "## one\nx `k`" {
		t.Errorf("section %q", s)
	}
	if Section(doc, "## three", "## ") != "" {
		t.Error("a missing section must be empty")
	}
}
