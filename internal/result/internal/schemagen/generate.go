package main

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/fullpipe/fullpipe/internal/result"
)

const (
	module = "github.com/fullpipe/fullpipe"
	// Dir is where the schemas live, from the module root.
	Dir = "docs/schema"
	// idBase prefixes each schema's $id (its path in the repository).
	idBase = "https://" + module + "/" + Dir + "/"
)

// Generate returns each kind's schema file (name → contents), reading doc
// comments and the words' constants from the Go sources under root.
func Generate(root string) (map[string][]byte, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	g := &generator{root: root, types: map[string]reflect.Type{}, enums: map[reflect.Type][]any{}}
	c := &jsonschema.Reflector{}
	for _, dir := range []string{"internal/result", "internal/vocab", "internal/dispersion", "internal/train", "internal/sweep", "internal/rfc6349", "internal/cpuload", "internal/stats"} {
		if err := g.addComments(c, dir); err != nil {
			return nil, err
		}
	}
	g.comments = c.CommentMap
	out := map[string][]byte{}
	for _, k := range result.Kinds() {
		s, err := g.schema(k)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k.Test, err)
		}
		b, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k.Test, err)
		}
		out[k.File+".schema.json"] = append(b, '\n')
	}
	return out, nil
}

// generator reflects the documents' types. types maps each $defs name to
// its Go type (for the pass after reflection); enums caches each word
// type's values; comments is the doc comments, read once.
type generator struct {
	root     string
	types    map[string]reflect.Type
	enums    map[reflect.Type][]any
	comments map[string]string
	err      error // the first error of a hook (hooks cannot return one)
}

// schema reflects one kind: the library does the walk, hooks name the
// definitions, turn the words into enums and bound unsigned integers, and
// a pass after it fixes what the library cannot know (nullable keys, map
// keys that are words, the document's own constants).
func (g *generator) schema(k result.Kind) (*jsonschema.Schema, error) {
	s, err := g.reflect(reflect.TypeOf(k.New()).Elem())
	if err != nil {
		return nil, err
	}
	s.ID = jsonschema.ID(idBase + k.File + ".schema.json")
	s.Title = fmt.Sprintf("fullpipe %s --json, schema %d", k.Test, result.Schema)
	for key, v := range map[string]any{"schema": result.Schema, "tool": "fullpipe", "test": k.Test} {
		p, ok := s.Properties.Get(key)
		if !ok {
			return nil, fmt.Errorf("no %q key", key)
		}
		p.Const = v
	}
	return s, nil
}

// reflect is the schema of struct type t, its definitions fixed.
func (g *generator) reflect(t reflect.Type) (*jsonschema.Schema, error) {
	r := &jsonschema.Reflector{
		Anonymous: true,
		// Documents stay forward compatible: a newer fullpipe adds keys
		// within the same schema version.
		AllowAdditionalProperties: true,
		ExpandedStruct:            true,
		Namer:                     g.name,
		Mapper:                    g.mapType,
		CommentMap:                g.comments,
	}
	s := r.ReflectFromType(t)
	if g.err != nil {
		return nil, g.err
	}
	g.fix(t, s)
	for name, def := range s.Definitions {
		if dt, ok := g.types[name]; ok && dt.Kind() == reflect.Struct {
			g.fix(dt, def)
		}
	}
	return s, nil
}

// name names a definition: result's types by their own name, the other
// packages' qualified (train.Verdict beside result.Verdict).
func (g *generator) name(t reflect.Type) string {
	if t.Name() == "" {
		return ""
	}
	n := t.Name()
	if p := t.PkgPath(); strings.HasPrefix(p, module+"/") && p != module+"/internal/result" {
		n = path.Base(p) + "." + n
	}
	g.types[n] = t
	return n
}

// mapType maps a word (a named string type of this module with constants,
// such as vocab.Direction) to an enum of its constants' values, and
// unsigned integers to integers from 0. Each call returns a new schema:
// the library writes the field's description into it.
func (g *generator) mapType(t reflect.Type) *jsonschema.Schema {
	switch t.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &jsonschema.Schema{Type: "integer", Minimum: "0"}
	case reflect.String:
		if vals := g.enum(t); len(vals) > 0 {
			return &jsonschema.Schema{Type: "string", Enum: vals}
		}
	}
	return nil
}

// fix walks struct type t beside its schema s (embedded structs inline,
// as encoding/json writes them): a key without omitempty whose Go value
// can be nil (a slice, map or pointer) may be null, since encoding/json
// writes nil so; a map keyed by a word names its keys by the enum; a key
// tagged `jsonschema:"optional"` is not required (one added within a
// schema version without omitempty: older documents lack it).
func (g *generator) fix(t reflect.Type, s *jsonschema.Schema) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("json"), ",")
		if f.Anonymous && tag[0] == "" {
			if et := deref(f.Type); et.Kind() == reflect.Struct {
				g.fix(et, s)
			}
			continue
		}
		if !f.IsExported() || tag[0] == "-" {
			continue
		}
		name := f.Name
		if tag[0] != "" {
			name = tag[0]
		}
		p, ok := s.Properties.Get(name)
		if !ok {
			continue
		}
		if slices.Contains(strings.Split(f.Tag.Get("jsonschema"), ","), "optional") {
			s.Required = slices.DeleteFunc(s.Required, func(k string) bool { return k == name })
		}
		if f.Type.Kind() == reflect.Map {
			if vals := g.enum(f.Type.Key()); len(vals) > 0 {
				p.PropertyNames = &jsonschema.Schema{Enum: vals}
			}
		}
		switch f.Type.Kind() {
		case reflect.Slice, reflect.Map, reflect.Pointer:
			if !omitempty(tag) {
				desc := p.Description
				p.Description = ""
				s.Properties.Set(name, &jsonschema.Schema{Description: desc, AnyOf: []*jsonschema.Schema{p, {Type: "null"}}})
			}
		}
	}
}

func omitempty(tag []string) bool {
	for _, o := range tag[1:] {
		if o == "omitempty" || o == "omitzero" {
			return true
		}
	}
	return false
}

func deref(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		return t.Elem()
	}
	return t
}
