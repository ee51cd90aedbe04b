package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
)

// Bounds of a document decoded from a peer (an agent's upload, a stored
// result rendered for a page): JSON whose text is small can decode into
// far more memory (16 MiB of `{"streams":[{},{},…]}` is 5.6 million
// streams of about 300 bytes each: 3.9 GiB), so the decoded size is
// estimated from the text against the kind's own types before decoding.
const (
	MaxDepth = 32 // nesting of objects and arrays; the model's deepest is under 10
	// DecodeFactor is how many times its text a document may take once
	// decoded (a legitimate one takes less: its numbers are 8 bytes as
	// floats and 10-20 as text), with at least MinDecodeBudget.
	DecodeFactor    = 4
	MinDecodeBudget = 1 << 20
)

// ErrTooLarge is a document whose decoded form would pass its budget or
// whose nesting passes MaxDepth.
var ErrTooLarge = errors.New("document too large")

// DecodeBounded is Decode for a document from a peer: it refuses one
// nested deeper than MaxDepth or whose decoded form the kind's types
// would make larger than DecodeFactor times its text (ErrTooLarge,
// saying where), before decoding it.
func DecodeBounded(b []byte) (Doc, error) {
	var head struct {
		Test string `json:"test"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("decode document: %w", err)
	}
	if k, ok := KindOf(head.Test); ok {
		budget := max(int64(len(b))*DecodeFactor, MinDecodeBudget)
		if err := checkSize(b, reflect.TypeOf(k.New()), budget); err != nil {
			return nil, err
		}
	}
	return Decode(bytes.NewReader(b))
}

// sizer walks a JSON text with the Go type each value decodes into and
// adds up what decoding would allocate: each slice element's size, each
// pointer's target, each string's and map entry's bytes.
type sizer struct {
	dec           *json.Decoder
	total, budget int64
	path          []string
}

func checkSize(b []byte, t reflect.Type, budget int64) error {
	s := &sizer{dec: newTokenDecoder(b), budget: budget}
	return s.value(t)
}

// newTokenDecoder reads b's tokens, numbers as text (not converted).
func newTokenDecoder(b []byte) *json.Decoder {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d
}

func (s *sizer) add(n int64) error {
	s.total += n
	if s.total > s.budget {
		return fmt.Errorf("%w: decoding it would take more than %d bytes (%d times its text) at %s", ErrTooLarge,
			s.budget, DecodeFactor, s.where())
	}
	return nil
}

func (s *sizer) where() string {
	if len(s.path) == 0 {
		return "its top"
	}
	return strings.Join(s.path, "")
}

// value reads one value, decoded into t (nil: not kept, as an unknown
// key is), and adds its allocations.
func (s *sizer) value(t reflect.Type) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
		if err := s.add(int64(t.Size())); err != nil {
			return err
		}
	}
	tok, err := s.dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("decode document: %w", err)
	}
	switch tok := tok.(type) {
	case json.Delim:
		if len(s.path) >= MaxDepth {
			return fmt.Errorf("%w: nested deeper than %d at %s", ErrTooLarge, MaxDepth, s.where())
		}
		if tok == '[' {
			return s.array(t)
		}
		return s.object(t)
	case string:
		if t != nil && (t.Kind() == reflect.String || t.Kind() == reflect.Slice || t.Kind() == reflect.Interface) {
			return s.add(int64(len(tok)))
		}
	}
	return nil
}

func (s *sizer) array(t reflect.Type) error {
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	} else if t != nil && t.Kind() == reflect.Interface {
		elem = t
	}
	for i := 0; s.dec.More(); i++ {
		s.path = append(s.path, fmt.Sprintf("[%d]", i))
		err := s.add(elemSize(elem))
		if err == nil {
			err = s.value(elem)
		}
		s.path = s.path[:len(s.path)-1]
		if err != nil {
			return err
		}
	}
	_, err := s.dec.Token() // ]
	return err
}

func (s *sizer) object(t reflect.Type) error {
	for s.dec.More() {
		tok, err := s.dec.Token()
		if err != nil {
			return fmt.Errorf("decode document: %w", err)
		}
		key, _ := tok.(string)
		var ft reflect.Type
		switch {
		case t == nil:
		case t.Kind() == reflect.Struct:
			ft = fieldsOf(t)[strings.ToLower(key)]
		case t.Kind() == reflect.Map:
			ft = t.Elem()
			err = s.add(int64(len(key)) + elemSize(ft) + 16) // the key, the value, the bucket's share
		case t.Kind() == reflect.Interface:
			ft = t
			err = s.add(int64(len(key)) + 32)
		}
		if err != nil {
			return err
		}
		s.path = append(s.path, "."+key)
		err = s.value(ft)
		s.path = s.path[:len(s.path)-1]
		if err != nil {
			return err
		}
	}
	_, err := s.dec.Token() // }
	return err
}

// elemSize is what one element of a slice of t takes (an interface's
// element: a map's header, as encoding/json makes).
func elemSize(t reflect.Type) int64 {
	if t == nil {
		return 0
	}
	if t.Kind() == reflect.Interface {
		return 48
	}
	return int64(t.Size())
}

// fields maps each struct type's JSON keys (lower-cased: encoding/json
// matches them without case) to their field types, embedded structs'
// keys inline.
var fields sync.Map // reflect.Type → map[string]reflect.Type

func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if m, ok := fields.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		ft := f.Type
		if f.Anonymous && name == "" {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range fieldsOf(ft) {
					if _, ok := m[k]; !ok {
						m[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[strings.ToLower(name)] = ft
	}
	fields.Store(t, m)
	return m
}
