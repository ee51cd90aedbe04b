package fleet

import (
	"bytes"
	"encoding/json"
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
// what method.Execute takes.
func (t Test) Decode() (any, error) {
	switch t.Kind {
	case "tcp":
		return decode[result.TCPConfig](t)
	case "udp":
		return decode[result.UDPConfig](t)
	case "rtt":
		return decode[result.RTTConfig](t)
	case "mtu":
		return decode[result.PMTUConfig](t)
	case "trains":
		return decode[result.TrainsConfig](t)
	case "rfc6349":
		return decode[result.RFC6349Config](t)
	case "sweep-window":
		return decode[result.WindowSweepConfig](t)
	case "sweep-msglen":
		return decode[result.MsgLenSweepConfig](t)
	case "ping":
		return decode[result.PingConfig](t)
	case "stamp":
		c, err := decode[result.STAMPConfig](t)
		if err != nil {
			return nil, err
		}
		if err := scheduledSTAMP(c.(result.STAMPConfig)); err != nil {
			return nil, err
		}
		return c, nil
	case "rfc2544":
		return decode[result.RFC2544Config](t)
	case "y1564":
		return decode[result.Y1564Config](t)
	}
	return nil, fmt.Errorf("test kind %q: want one of %v", t.Kind, Kinds())
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

// config is what every config type can do.
type config[C any] interface {
	WithDefaults() C
	Validate() error
}

func decode[C config[C]](t Test) (any, error) {
	var c C
	if len(bytes.TrimSpace(t.Config)) > 0 && !bytes.Equal(bytes.TrimSpace(t.Config), []byte("null")) {
		d := json.NewDecoder(bytes.NewReader(t.Config))
		d.DisallowUnknownFields()
		if err := d.Decode(&c); err != nil {
			return nil, fmt.Errorf("%s config: %w", t.Kind, err)
		}
		if d.More() {
			return nil, fmt.Errorf("%s config: more than one JSON value", t.Kind)
		}
	}
	c = c.WithDefaults()
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s config: %w", t.Kind, err)
	}
	return c, nil
}

// KnownKind says whether kind is one a schedule may name.
func KnownKind(kind string) bool { return slices.Contains(Kinds(), kind) }
