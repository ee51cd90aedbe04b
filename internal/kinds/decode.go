package kinds

import (
	"errors"
	"fmt"
	"slices"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/result"
)

// The kinds as the fleet names them: what a schedule, an agent's
// capabilities and a results filter may say, and a scheduled test read
// into the config its runner takes. They are here, above the table, and
// not in package fleet, so that the fleet's contract (fleet, store)
// compiles no kind's config and through it no method's maths.

// Names are the test kinds a schedule may name: each row's file name,
// in the order the tool lists them.
func Names() []string {
	var ns []string
	for _, k := range table {
		ns = append(ns, k.File)
	}
	return ns
}

// Known says whether name is a kind a schedule may name.
func Known(name string) bool { return slices.Contains(Names(), name) }

// Decode reads a scheduled test's config into its kind's config type (a
// value: result.TCPConfig, result.RFC6349Config, ...), with the kind's
// defaults applied, and validates it. Unknown fields are refused: a
// misspelt key would otherwise run the default silently. The value is
// what Execute takes.
func Decode(t fleet.Test) (any, error) {
	k, ok := Named(t.Kind)
	if !ok {
		return nil, fmt.Errorf("test kind %q: want one of %v", t.Kind, Names())
	}
	c, err := k.Config(t.Config)
	if fe := (*result.FieldError)(nil); errors.As(err, &fe) {
		return nil, &fleet.FieldError{Field: "test.config." + fe.Field, Msg: fe.Msg} // a form shows it beside the field
	}
	if err != nil {
		return nil, fmt.Errorf("%s config: %w", t.Kind, err)
	}
	if sc, ok := c.(result.STAMPConfig); ok {
		if err := scheduledSTAMP(sc); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// scheduledSTAMP refuses what a scheduled STAMP config may not name: a
// path on the agents (key_file: any file they can read, /dev/zero among
// them), or a key name that is a path (issue 22).
func scheduledSTAMP(c result.STAMPConfig) error {
	if c.KeyFile != "" {
		return &fleet.FieldError{Field: "test.config.key_file", Msg: "a path on the agents is refused in a scheduled test: name the key with key, a file in each agent's --stamp-key-dir"}
	}
	if c.Key != "" {
		if err := result.CheckSTAMPKeyName(c.Key); err != nil {
			return &fleet.FieldError{Field: "test.config.key", Msg: fmt.Sprintf("%q: %v", c.Key, err)}
		}
	}
	return nil
}
