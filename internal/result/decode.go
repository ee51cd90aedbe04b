package result

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

//go:generate go run ./internal/schemagen

// Doc is one document the tool emits: *TCP, *UDP, *RTT, *PMTU, *Trains,
// *RFC6349, *WindowSweep or *MsgLenSweep. Each embeds Meta.
type Doc interface {
	Head() *Meta
}

// Head is the document's common keys.
func (m *Meta) Head() *Meta { return m }

// Kind is one kind of document: the test it names, the file of its JSON
// Schema under docs/schema, and a new empty document to decode into.
type Kind struct {
	Test string     // Meta.Test
	File string     // docs/schema/File.schema.json
	New  func() Doc // a pointer to the zero document
}

// Kinds lists every document the tool emits, as `fullpipe COMMAND --json`
// prints it. Train is not among them: no command prints a train alone.
func Kinds() []Kind {
	return []Kind{
		{"tcp", "tcp", func() Doc { return new(TCP) }},
		{"udp", "udp", func() Doc { return new(UDP) }},
		{"rtt", "rtt", func() Doc { return new(RTT) }},
		{"mtu", "mtu", func() Doc { return new(PMTU) }},
		{"trains", "trains", func() Doc { return new(Trains) }},
		{"rfc6349", "rfc6349", func() Doc { return new(RFC6349) }},
		{"sweep window", "sweep-window", func() Doc { return new(WindowSweep) }},
		{"sweep msglen", "sweep-msglen", func() Doc { return new(MsgLenSweep) }},
		{"ping", "ping", func() Doc { return new(Ping) }},
		{"stamp", "stamp", func() Doc { return new(STAMP) }},
		{"rfc2544", "rfc2544", func() Doc { return new(RFC2544) }},
		{"y1564", "y1564", func() Doc { return new(Y1564) }},
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
// returns it typed by its "test" key (see Kinds). Keys this build does not
// know are ignored, keys it knows but the document lacks stay zero; a
// document of a newer schema is refused with a *SchemaError.
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
	return d, nil
}
