// Package jsondoc checks that every JSON key of fullpipe's result types is
// named in docs/json.md. Only tests use it.
package jsondoc

import (
	"fmt"
	"reflect"
	"strings"
)

// module is the import path prefix of the types walked; others (time,
// net) are leaves.
const module = "github.com/fullpipe/"

// Missing walks the JSON keys reachable from each value's type (structs of
// this module, through pointers, slices and maps) and returns one line
// "Type.Field: key" for each key that doc does not name: as `key`,
// `key[]`, `key.… (a path from it), or .key`, .key[]`, .key. (a path
// through it). A key that only starts another word (`bytes` in
// `bytes_sent`) does not count. Embedded structs are walked as their keys
// appear inline, unless skipEmbedded (the caller's doc section documents
// them elsewhere, like the common keys of result.Meta).
func Missing(doc string, skipEmbedded bool, values ...any) []string {
	var out []string
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] || !strings.HasPrefix(typ.PkgPath(), module) {
			return
		}
		seen[typ] = true
		for i := range typ.NumField() {
			f := typ.Field(i)
			if f.Anonymous {
				if !skipEmbedded {
					walk(f.Type)
				}
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			if !named(doc, name) {
				out = append(out, fmt.Sprintf("%s.%s: key %q", typ.Name(), f.Name, name))
			}
			walk(f.Type)
		}
	}
	for _, v := range values {
		walk(reflect.TypeOf(v))
	}
	return out
}

func named(doc, key string) bool {
	for _, form := range []string{"`" + key + "`", "`" + key + "[]`", "`" + key + ".", "." + key + "`", "." + key + "[]`", "." + key + "."} {
		if strings.Contains(doc, form) {
			return true
		}
	}
	return false
}

// Section is the part of doc from the line that starts with from up to
// the next line that starts with to ("" when from is missing).
func Section(doc, from, to string) string {
	i := strings.Index(doc, "\n"+from)
	if i < 0 {
		return ""
	}
	rest := doc[i+1:]
	if j := strings.Index(rest[len(from):], "\n"+to); j >= 0 {
		return rest[:len(from)+j]
	}
	return rest
}
