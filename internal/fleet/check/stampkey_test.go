package check

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// A scheduled stamp test names its key by a name each agent resolves in
// its own key directory: any path is refused, the field named (issue 22).
func TestScheduleSTAMPKey(t *testing.T) {
	for _, c := range []struct {
		name, config, field string // field "": accepted
	}{
		{"no key", `{}`, ""},
		{"a key name", `{"key": "lab-2026.key"}`, ""},
		{"key_file /dev/zero", `{"key_file": "/dev/zero"}`, "test.config.key_file"},
		{"key_file relative", `{"key_file": "stamp.key"}`, "test.config.key_file"},
		{"key_file beside a key", `{"key": "a", "key_file": "/etc/passwd"}`, "test.config.key_file"},
		{"key a path", `{"key": "/etc/shadow"}`, "test.config.key"},
		{"key up a directory", `{"key": "../spool/cert.pem"}`, "test.config.key"},
		{"key ..", `{"key": ".."}`, "test.config.key"},
		{"key hidden", `{"key": ".secret"}`, "test.config.key"},
		{"key with a slash", `{"key": "a/b"}`, "test.config.key"},
		{"key too long", `{"key": "` + strings.Repeat("k", 65) + `"}`, "test.config.key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := valid()
			s.Test = fleet.Test{Kind: "stamp", Config: json.RawMessage(c.config)}
			_, err := Schedule(&s, t0)
			if c.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var fe *fleet.FieldError
			if !errors.As(err, &fe) || fe.Field != c.field {
				t.Fatalf("error %v, want a FieldError of %q", err, c.field)
			}
			if !strings.Contains(fe.Msg, "--stamp-key-dir") {
				t.Errorf("message %q does not name the fix (--stamp-key-dir)", fe.Msg)
			}
		})
	}
}
