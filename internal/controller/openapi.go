package controller

import (
	_ "embed"
	"net/http"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// openapi is docs/openapi.yaml, copied here to be embedded (go generate
// copies it; TestOpenAPICopy checks the two are the same).
//
//go:generate cp ../../docs/openapi.yaml openapi.yaml
//go:embed openapi.yaml
var openapi []byte

// OpenAPI is the API's description (OpenAPI 3.1, YAML).
func OpenAPI() []byte { return openapi }

func serveOpenAPI(w http.ResponseWriter, _ *http.Request, _ fleet.Token) error {
	w.Header().Set("Content-Type", "application/yaml")
	w.Write(openapi)
	return nil
}
