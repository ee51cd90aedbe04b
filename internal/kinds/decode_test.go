package kinds

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/result"
)

func TestDecode(t *testing.T) {
	for _, k := range Names() {
		c, err := Decode(fleet.Test{Kind: k})
		switch k {
		case "trains", "rfc6349", "rfc2544", "y1564": // the path's rate (y1564: its services) is theirs to say
			if err == nil || !strings.Contains(err.Error(), "required") {
				t.Errorf("%s with no config: %v; want an error naming what is required", k, err)
			}
		default:
			if err != nil || c == nil {
				t.Errorf("%s with no config: %v, %v; want the defaults", k, c, err)
			}
		}
	}
	c, err := Decode(fleet.Test{Kind: "tcp", Config: json.RawMessage(`{"duration_ns": 3000000000, "streams": 2}`)})
	if err != nil {
		t.Fatal(err)
	}
	tc, ok := c.(result.TCPConfig)
	if !ok || tc.Duration != 3*time.Second || tc.Streams != 2 {
		t.Errorf("tcp config read as %#v", c)
	}
	bad := []struct{ kind, cfg, want string }{
		{"ftp", ``, "want one of"},
		{"tcp", `{"duraton_ns": 1}`, "unknown field"},
		{"tcp", `{"duration_ns": -1}`, "duration"},
		{"tcp", `{} {}`, "more than one"},
		{"rtt", `[1]`, "cannot unmarshal"},
	}
	for _, b := range bad {
		_, err := Decode(fleet.Test{Kind: b.kind, Config: json.RawMessage(b.cfg)})
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s %s: %v, want an error with %q", b.kind, b.cfg, err, b.want)
		}
	}
	// A value the kind refuses is named by its field, for the form.
	_, err = Decode(fleet.Test{Kind: "rfc2544", Config: json.RawMessage(`{"line_rate_bps": 100000000, "trial_ns": 1}`)})
	if fe := (*fleet.FieldError)(nil); !errors.As(err, &fe) || fe.Field != "test.config.trial_ns" {
		t.Errorf("rfc2544 with a 1 ns trial: %v, want a *FieldError at test.config.trial_ns", err)
	}
}
