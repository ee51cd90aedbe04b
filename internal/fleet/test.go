package fleet

import (
	"errors"
	"fmt"
	"slices"

	"github.com/fullpipe/fullpipe/internal/result"
)

// Kinds are the test kinds a schedule may name: the result package's
// documents' file names.
func Kinds() []string {
	var ks []string
	for _, k := range result.Kinds() {
		ks = append(ks, k.File)
	}
	return ks
}

// Decode reads a test's config into its result package type (a value:
// result.TCPConfig, result.RFC6349Config, ...), with the kind's
// defaults applied, and validates it. Unknown fields are refused: a
// misspelt key would otherwise run the default silently. The value is
// what kinds.Execute takes.
func (t Test) Decode() (any, error) {
	k, ok := result.KindNamed(t.Kind)
	if !ok {
		return nil, fmt.Errorf("test kind %q: want one of %v", t.Kind, Kinds())
	}
	c, err := k.Config(t.Config)
	if fe := (*result.FieldError)(nil); errors.As(err, &fe) {
		return nil, &FieldError{Field: "test.config." + fe.Field, Msg: fe.Msg} // a form shows it beside the field
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
		return &FieldError{Field: "test.config.key_file", Msg: "a path on the agents is refused in a scheduled test: name the key with key, a file in each agent's --stamp-key-dir"}
	}
	if c.Key != "" {
		if err := result.CheckSTAMPKeyName(c.Key); err != nil {
			return &FieldError{Field: "test.config.key", Msg: fmt.Sprintf("%q: %v", c.Key, err)}
		}
	}
	return nil
}

// KnownKind says whether kind is one a schedule may name.
func KnownKind(kind string) bool { return slices.Contains(Kinds(), kind) }
