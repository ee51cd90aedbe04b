package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

//go:generate go run ./internal/schemagen

// Doc is one document the tool emits, of a kind Kinds lists (*TCP,
// *UDP, ..., *Y1564). Each embeds Meta.
type Doc interface {
	Head() *Meta
}

// Head is the document's common keys.
func (m *Meta) Head() *Meta { return m }

// Kind is one kind of document: the test it names, the file of its JSON
// Schema under docs/schema (and the kind's name in a schedule), a new
// empty document to decode into, and how to read its config.
type Kind struct {
	Test string     // Meta.Test
	File string     // docs/schema/File.schema.json; a schedule's test kind
	New  func() Doc // a pointer to the zero document
	// Config reads the kind's config from JSON (a value: TCPConfig,
	// RFC6349Config, ...) with its defaults filled, and validates it
	// (ConfigOf).
	Config func(raw json.RawMessage) (any, error)
}

// Kinds lists every document the tool emits, as `fullpipe COMMAND --json`
// prints it. Train is not among them: no command prints a train alone.
func Kinds() []Kind {
	return []Kind{
		{"tcp", "tcp", func() Doc { return new(TCP) }, ConfigOf[TCPConfig]},
		{"udp", "udp", func() Doc { return new(UDP) }, ConfigOf[UDPConfig]},
		{"rtt", "rtt", func() Doc { return new(RTT) }, ConfigOf[RTTConfig]},
		{"mtu", "mtu", func() Doc { return new(PMTU) }, ConfigOf[PMTUConfig]},
		{"trains", "trains", func() Doc { return new(Trains) }, ConfigOf[TrainsConfig]},
		{"rfc6349", "rfc6349", func() Doc { return new(RFC6349) }, ConfigOf[RFC6349Config]},
		{"sweep window", "sweep-window", func() Doc { return new(WindowSweep) }, ConfigOf[WindowSweepConfig]},
		{"sweep msglen", "sweep-msglen", func() Doc { return new(MsgLenSweep) }, ConfigOf[MsgLenSweepConfig]},
		{"ping", "ping", func() Doc { return new(Ping) }, ConfigOf[PingConfig]},
		{"stamp", "stamp", func() Doc { return new(STAMP) }, ConfigOf[STAMPConfig]},
		{"rfc2544", "rfc2544", func() Doc { return new(RFC2544) }, ConfigOf[RFC2544Config]},
		{"y1564", "y1564", func() Doc { return new(Y1564) }, ConfigOf[Y1564Config]},
	}
}

// KindOf is the kind of document whose Meta.Test is test.
func KindOf(test string) (Kind, bool) {
	for _, k := range Kinds() {
		if k.Test == test {
			return k, true
		}
	}
	return Kind{}, false
}

// KindNamed is the kind a schedule names (its File: "sweep-window").
func KindNamed(name string) (Kind, bool) {
	for _, k := range Kinds() {
		if k.File == name {
			return k, true
		}
	}
	return Kind{}, false
}

// Config is what every config type does: fill its defaults, check
// itself.
type Config[C any] interface {
	WithDefaults() C
	Validate() error
}

// ConfigOf reads one JSON object into a C, refusing keys C does not have
// (a misspelt key would otherwise run the test with a default) and
// anything after it; an empty or null config is the zero config. Then it
// fills C's defaults and validates it, as the engine does before it
// runs one. It returns the C as a value.
func ConfigOf[C Config[C]](raw json.RawMessage) (any, error) {
	var c C
	if raw = bytes.TrimSpace(raw); len(raw) > 0 && string(raw) != "null" {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		if err := d.Decode(&c); err != nil {
			return nil, err
		}
		if _, err := d.Token(); err != io.EOF {
			return nil, errors.New("more than one JSON value")
		}
	}
	c = c.WithDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// SchemaError is a document of a schema this build does not read: newer
// (a key it relies on may be renamed or gone), or none at all.
type SchemaError struct {
	Got int // the document's schema; 0 when it has none
}

func (e *SchemaError) Error() string {
	if e.Got < 1 {
		return "not a fullpipe document: no \"schema\" key (demo --json wraps documents; decode each of its keys)"
	}
	return fmt.Sprintf("document schema %d is newer than this fullpipe reads (%d): read it with a newer fullpipe", e.Got, Schema)
}

// ErrUnknownTest is a document whose test no kind names (a test a newer
// fullpipe added, or not a fullpipe document).
var ErrUnknownTest = errors.New("unknown test")

// Decode reads one document as any fullpipe since schema 1 emitted it and
// returns it typed by its "test" key (see Kinds). A document of an older
// schema is upgraded to today's as it is read (upgrade.go): its Schema is
// then today's and UpgradedFrom its own. Keys this build does not know are
// ignored, keys it knows but the document lacks stay zero; a document of
// a newer schema is refused with a *SchemaError.
func Decode(r io.Reader) (Doc, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var head struct {
		Schema int    `json:"schema"`
		Test   string `json:"test"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("decode document: %w", err)
	}
	if head.Schema < 1 || head.Schema > Schema {
		return nil, &SchemaError{Got: head.Schema}
	}
	k, ok := KindOf(head.Test)
	if !ok {
		return nil, fmt.Errorf("decode document: test %q: %w", head.Test, ErrUnknownTest)
	}
	d := k.New()
	if err := json.Unmarshal(b, d); err != nil {
		return nil, fmt.Errorf("decode %s document: %w", head.Test, err)
	}
	if head.Schema < Schema {
		if err := upgrade(b, d, head.Schema); err != nil {
			return nil, fmt.Errorf("decode %s document of schema %d: %w", head.Test, head.Schema, err)
		}
	}
	return d, nil
}
