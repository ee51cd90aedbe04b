// Package resulttest checks fullpipe's JSON documents against the JSON
// Schemas checked in under docs/schema (generated from package result by
// `go generate ./internal/result`), with
// github.com/santhosh-tekuri/jsonschema: each document against the schema
// of the version it names, today's in docs/schema, an older one's as it
// was generated in docs/schema/VERSION. Only tests import it: the cli's
// and the lab's, which run the real binary, and result's own.
package resulttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/fullpipe/fullpipe/internal/result"
)

// SchemaDir is docs/schema in the source tree this package was built
// from (tests run from the source): today's schemas (result.Schema).
func SchemaDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "docs", "schema")
}

// VersionDir is where the schemas of version v are: SchemaDir for
// today's, its subdirectory named v for an older one (kept as that
// version's generator wrote them, so that its documents still validate).
func VersionDir(v int) string {
	if v == result.Schema {
		return SchemaDir()
	}
	return filepath.Join(SchemaDir(), strconv.Itoa(v))
}

// Compile compiles today's schema of the document kind whose test is
// test, asserting formats (date-time) too.
func Compile(test string) (*jsonschema.Schema, error) {
	return CompileVersion(test, result.Schema)
}

// CompileVersion is Compile for the schema of version v.
func CompileVersion(test string, v int) (*jsonschema.Schema, error) {
	k, ok := result.KindOf(test)
	if !ok {
		return nil, fmt.Errorf("test %q: %w", test, result.ErrUnknownTest)
	}
	path := filepath.Join(VersionDir(v), k.File+".schema.json")
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	id, _ := doc.(map[string]any)["$id"].(string)
	if id == "" {
		return nil, fmt.Errorf("%s: no $id", path)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(id, doc); err != nil {
		return nil, err
	}
	return c.Compile(id)
}

// Check validates one JSON document against the schema of its kind (by
// its "test" key) and version (its "schema" key; today's when that is no
// version of the past, which today's schema then refuses) and decodes it
// with result.Decode.
func Check(doc []byte) error {
	var head struct {
		Test   string `json:"test"`
		Schema any    `json:"schema"`
	}
	if err := json.Unmarshal(doc, &head); err != nil {
		return err
	}
	v := result.Schema
	if n, ok := head.Schema.(float64); ok && n >= 1 && n < float64(result.Schema) && n == math.Trunc(n) {
		v = int(n)
	}
	sch, err := CompileVersion(head.Test, v)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	if err := sch.Validate(inst); err != nil {
		// %#v lists every failed keyword with the key it failed at.
		return fmt.Errorf("%s document: %#v", head.Test, err)
	}
	if _, err := result.Decode(bytes.NewReader(doc)); err != nil {
		return err
	}
	return nil
}

// Validate is Check in a test: an error fails t, with the document.
func Validate(t testing.TB, doc []byte) {
	t.Helper()
	if err := Check(doc); err != nil {
		t.Errorf("document does not validate against its schema in docs/schema (of its version): %v\n%s", err, doc)
	}
}
