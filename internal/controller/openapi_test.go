package controller

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v4"
)

// docPath is the checked-in description.
const docPath = "../../docs/openapi.yaml"

// loadDoc is docs/openapi.yaml as JSON values.
func loadDoc(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	var y any
	if err := yaml.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", docPath, err)
	}
	j, err := json.Marshal(y)
	if err != nil {
		t.Fatalf("%s as JSON: %v", docPath, err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return doc.(map[string]any)
}

// TestOpenAPIRoutes: every route the controller serves is in the
// document, and every operation of the document is served.
func TestOpenAPIRoutes(t *testing.T) {
	doc := loadDoc(t)
	var documented, served []string
	for path, item := range doc["paths"].(map[string]any) {
		for method := range item.(map[string]any) {
			if method != "parameters" {
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	for _, rt := range (&Controller{}).table() {
		served = append(served, rt.method+" "+rt.path)
	}
	slices.Sort(documented)
	slices.Sort(served)
	for _, s := range served {
		if !slices.Contains(documented, s) {
			t.Errorf("%s is served but not in %s", s, docPath)
		}
	}
	for _, d := range documented {
		if !slices.Contains(served, d) {
			t.Errorf("%s is in %s but not served", d, docPath)
		}
	}
	if len(served) < 25 {
		t.Errorf("only %d routes: the table lost some", len(served))
	}
}

// TestOpenAPICopy: the embedded copy is docs/openapi.yaml (go generate
// ./internal/controller copies it), and it is what the controller serves.
func TestOpenAPICopy(t *testing.T) {
	want, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(OpenAPI(), want) {
		t.Fatal("internal/controller/openapi.yaml differs from docs/openapi.yaml: run go generate ./internal/controller")
	}
	e := start(t, Config{})
	got, err := e.admin.Raw(ctx(t), "/v1/openapi.yaml")
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("served document differs (%v)", err)
	}
}

// recorder keeps every answer of the API a test provoked, to validate
// each against the document when the test ends.
type recorder struct {
	mu   sync.Mutex
	seen []answer
}

type answer struct {
	method, path string // the route's pattern; "" when no route matched
	status       int
	ctype        string
	body         []byte
	request      []byte // the request's body, when JSON and at most maxBody
}

// routes is c's handler with every answer recorded under its route.
func (rc *recorder) routes(c *Controller) http.Handler {
	patterns := http.NewServeMux()
	for _, rt := range c.table() {
		patterns.Handle(rt.method+" "+rt.path, http.NotFoundHandler())
	}
	h := c.routes()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pattern := patterns.Handler(r)
		var req []byte
		if r.Header.Get("Content-Type") == "application/json" && r.ContentLength >= 0 && r.ContentLength <= maxBody {
			req, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(req))
		}
		tw := &tee{ResponseWriter: w}
		h.ServeHTTP(tw, r)
		a := answer{status: tw.code, ctype: w.Header().Get("Content-Type"), body: tw.body.Bytes(), request: req}
		if m, p, ok := strings.Cut(pattern, " "); ok {
			a.method, a.path = m, p
		}
		rc.mu.Lock()
		rc.seen = append(rc.seen, a)
		rc.mu.Unlock()
	})
}

type tee struct {
	http.ResponseWriter
	code int
	body bytes.Buffer
}

func (t *tee) WriteHeader(code int) {
	if t.code == 0 {
		t.code = code
	}
	t.ResponseWriter.WriteHeader(code)
}

func (t *tee) Write(b []byte) (int, error) {
	if t.code == 0 {
		t.code = http.StatusOK
	}
	t.body.Write(b)
	return t.ResponseWriter.Write(b)
}

// validate checks each JSON answer against the schema the document
// gives its route and status (the Error schema when no route matched).
func (rc *recorder) validate(t *testing.T) {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	doc := loadDoc(t)
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	comp.AssertFormat()
	if err := comp.AddResource("openapi.json", doc); err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*jsonschema.Schema{}
	n := 0
	for _, a := range rc.seen {
		if !strings.HasPrefix(a.ctype, "application/json") {
			continue
		}
		loc, err := schemaOf(doc, a)
		if err != nil {
			t.Errorf("%s %s → %d: %v", a.method, a.path, a.status, err)
			continue
		}
		s, ok := schemas[loc]
		if !ok {
			if s, err = comp.Compile(loc); err != nil {
				t.Fatalf("%s: %v", loc, err)
			}
			schemas[loc] = s
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(a.body))
		if err != nil {
			t.Errorf("%s %s → %d: body is not JSON: %v", a.method, a.path, a.status, err)
			continue
		}
		if err := s.Validate(v); err != nil {
			t.Errorf("%s %s → %d: answer does not match %s: %v\n%s", a.method, a.path, a.status, loc, err, a.body)
		}
		n++
		if a.status < 300 && len(a.request) > 0 {
			validateRequest(t, comp, schemas, a)
		}
	}
	t.Logf("validated %d JSON answers against %s", n, docPath)
}

// validateRequest checks an accepted request's body against the
// operation's requestBody schema.
func validateRequest(t *testing.T, comp *jsonschema.Compiler, schemas map[string]*jsonschema.Schema, a answer) {
	t.Helper()
	loc := "openapi.json#/paths/" + escape(a.path) + "/" + strings.ToLower(a.method) + "/requestBody/content/application~1json/schema"
	s, ok := schemas[loc]
	if !ok {
		var err error
		if s, err = comp.Compile(loc); err != nil {
			t.Errorf("%s %s: the document gives no request schema: %v", a.method, a.path, err)
			return
		}
		schemas[loc] = s
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(a.request))
	if err == nil {
		err = s.Validate(v)
	}
	if err != nil {
		t.Errorf("%s %s: accepted request does not match %s: %v\n%s", a.method, a.path, loc, err, a.request)
	}
}

// schemaOf is the location of a's schema in the document.
func schemaOf(doc map[string]any, a answer) (string, error) {
	if a.path == "" {
		return "openapi.json#/components/schemas/Error", nil
	}
	op, ok := dig(doc, "paths", a.path, strings.ToLower(a.method)).(map[string]any)
	if !ok {
		return "", fmt.Errorf("no operation in the document")
	}
	resp, ok := dig(op, "responses", strconv.Itoa(a.status)).(map[string]any)
	if !ok {
		return "", fmt.Errorf("status %d is not documented", a.status)
	}
	ptr := "/paths/" + escape(a.path) + "/" + strings.ToLower(a.method) + "/responses/" + strconv.Itoa(a.status)
	if ref, ok := resp["$ref"].(string); ok {
		ptr = strings.TrimPrefix(ref, "#")
		resp = dig(doc, strings.Split(strings.TrimPrefix(ptr, "/"), "/")...).(map[string]any)
	}
	if dig(resp, "content", "application/json", "schema") == nil {
		return "", fmt.Errorf("status %d documents no JSON body", a.status)
	}
	return "openapi.json#" + ptr + "/content/application~1json/schema", nil
}

func escape(p string) string { return strings.ReplaceAll(strings.ReplaceAll(p, "~", "~0"), "/", "~1") }

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
