package testkit

import (
	"strings"
	"testing"
)

// CheckValid runs cfg's Validate as subtest name: want "" wants nil,
// anything else an error containing it.
func CheckValid(t *testing.T, name string, cfg interface{ Validate() error }, want string) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		err := cfg.Validate()
		switch {
		case want == "" && err != nil:
			t.Fatalf("refused: %v", err)
		case want != "" && err == nil:
			t.Fatalf("accepted, want %q", want)
		case want != "" && !strings.Contains(err.Error(), want):
			t.Fatalf("err %q, want %q", err, want)
		}
	})
}
