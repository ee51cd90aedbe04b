// Package resulttest checks fullpipe's JSON documents against the JSON
// Schemas checked in under docs/schema (generated from package result by
// `go generate ./internal/result`), with
// github.com/santhosh-tekuri/jsonschema. Only tests import it: the cli's
// and the lab's, which run the real binary, and result's own.
package resulttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/fullpipe/fullpipe/internal/result"
)

// SchemaDir is docs/schema in the source tree this package was built
// from (tests run from the source).
func SchemaDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "docs", "schema")
}

// Compile compiles the schema of the document kind whose test is test,
// asserting formats (date-time) too.
func Compile(test string) (*jsonschema.Schema, error) {
	k, ok := result.KindOf(test)
	if !ok {
		return nil, fmt.Errorf("test %q: %w", test, result.ErrUnknownTest)
	}
	path := filepath.Join(SchemaDir(), k.File+".schema.json")
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
// its "test" key) and decodes it with result.Decode.
func Check(doc []byte) error {
	var head struct {
		Test string `json:"test"`
	}
	if err := json.Unmarshal(doc, &head); err != nil {
		return err
	}
	sch, err := Compile(head.Test)
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
		t.Errorf("document does not validate against its schema in docs/schema: %v\n%s", err, doc)
	}
}
