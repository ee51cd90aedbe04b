package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/invopop/jsonschema"
)

// What the schemas take from the Go sources rather than from reflection:
// doc comments, and the values of the words.

// addComments reads the doc comments of the package in dir (from the
// module root) into r's comment map, keyed by import path as the
// reflector looks them up.
func (g *generator) addComments(r *jsonschema.Reflector, dir string) error {
	abs := filepath.Join(g.root, dir)
	tmp := &jsonschema.Reflector{}
	// The library keys each comment by base + the walked directory; walk
	// the absolute directory with no base, then swap the root for the
	// module path.
	if err := tmp.AddGoComments("", abs); err != nil {
		return fmt.Errorf("comments of %s: %w", dir, err)
	}
	if r.CommentMap == nil {
		r.CommentMap = map[string]string{}
	}
	prefix := filepath.ToSlash(g.root) + "/"
	for k, v := range tmp.CommentMap {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			r.CommentMap[module+"/"+rest] = v
		}
	}
	return nil
}

// enum is the values of the typed string constants of t's package that
// have type t (vocab.Up and vocab.Down for vocab.Direction), in source
// order; nil for a type of another module or one without constants.
func (g *generator) enum(t reflect.Type) []any {
	if t.Kind() != reflect.String || t.Name() == "" || !strings.HasPrefix(t.PkgPath(), module+"/") {
		return nil
	}
	if v, ok := g.enums[t]; ok {
		return v
	}
	dir := filepath.Join(g.root, strings.TrimPrefix(t.PkgPath(), module+"/"))
	vals, err := constants(dir, t.Name())
	if err != nil && g.err == nil {
		g.err = err
	}
	g.enums[t] = vals
	return vals
}

// constants parses the non-test Go files in dir for constants declared
// with type typ and a string literal value.
func constants(dir, typ string) ([]any, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var vals []any
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != typ {
					continue
				}
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						return nil, fmt.Errorf("%s: a constant of type %s is not a string literal", fset.Position(v.Pos()), typ)
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						return nil, err
					}
					vals = append(vals, s)
				}
			}
		}
	}
	return vals, nil
}
