// Package arch holds the tests of the code's shape: the layers its
// packages form (docs/architecture.md) and the length of its functions.
package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/fullpipe/fullpipe/"

// layers, lowest first. A package imports only packages of lower layers
// (a sub-package may import its parent): data flows from the CLI through
// the methods and the engine down to the documents, never back up.
var layers = [][]string{
	// Numbers: the arithmetic of packets and frames, below everything
	// that counts bytes (the emulator's links, the tests' forged packets).
	{"internal/frame"},
	// Words and tools: no fullpipe imports of their own.
	{"internal/vocab", "internal/field", "internal/units", "internal/stats", "internal/cpuload", "internal/version", "internal/jsondoc",
		"internal/testkit", "internal/testkit/pgtest", "internal/testkit/chrome", "internal/tcpinfo", "internal/sockopt", "internal/link", "internal/certs", "internal/ctxtime"},
	// One packet train's reading: the engine's arithmetic (the responder
	// reads the trains it receives), below the judgement made of many.
	{"internal/dispersion", "internal/dispersion/dispersiontest"},
	// The methods' mathematics: pure, no sockets; RFC 6349's judgement
	// reads the trains'.
	{"internal/train", "internal/sweep", "internal/pathmtu", "internal/ber", "internal/ping", "internal/y1564"},
	{"internal/rfc6349", "internal/rfc2544"},
	// The control protocol's messages and rules; STAMP's (RFC 8762)
	// packets, with its small UDP reflector and sender, which need only
	// the words and tools below (sockopt's receive stamps, stats).
	{"internal/wire", "internal/stamp"},
	// The documents and the configs they record.
	{"internal/result"},
	// The fleet's timetable: pure; the table of kinds gives it each
	// kind's config reader and cost, so it compiles no config.
	{"internal/schedule"},
	// What reads documents (renders, validates against the schemas,
	// generates them), and the data path.
	{"internal/report", "internal/result/resulttest", "internal/result/internal/schemagen", "internal/flow", "internal/icmpping",
		"internal/fleet"},
	// The fleet's API client: the agent's, the CLI's and the tests'.
	{"internal/fleet/client", "internal/fleet/fleettest"},
	// What keeps the fleet: its Store on SQLite and PostgreSQL.
	{"internal/store"},
	// The engine's two ends, and the lab.
	{"internal/tester", "internal/serve", "internal/serve/servetest", "internal/lab", "internal/lab/labtest"},
	// The methods, over the Network seam, and the scripted network.
	{"internal/method", "internal/method/fakenet"},
	// The one table of test kinds: a row per kind, its columns from
	// the packages below.
	{"internal/kinds"},
	// The checks of what operators ask, the API's and the web page's: a
	// schedule's test through the table (its length).
	{"internal/fleet/check"},
	// The controller's web page: reads the store, renders documents,
	// asks the controller (through its Ops) to change schedules.
	{"internal/web"},
	// The fleet's agent (runs methods as its controller orders) and
	// controller (the API, the scheduler, metrics and the results
	// webhook over a store): neither imports the other.
	{"internal/agent", "internal/controller"},
	// The command line, and the tests of what the binary emits.
	{"internal/cli"},
	{"cmd/fullpipe", "internal/doctest", "internal/fleetlab", "bench/fleetload", "bench/webrender"},
}

// root is the module's directory.
func root(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(wd, "..", "..")
}

// packages maps each package (module-relative path) to its non-test
// fullpipe imports.
func packages(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fs := token.NewFileSet()
	base := root(t)
	for _, top := range []string{"internal", "cmd", "bench"} {
		err := filepath.WalkDir(filepath.Join(base, top), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fs, p, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(base, filepath.Dir(p))
			out[rel] = append(out[rel], []string{}...)
			for _, im := range f.Imports {
				if path := strings.Trim(im.Path.Value, `"`); strings.HasPrefix(path, module) {
					out[rel] = append(out[rel], strings.TrimPrefix(path, module))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func rank(pkg string) int {
	for i, l := range layers {
		if slices.Contains(l, pkg) {
			return i
		}
	}
	return -1
}

// TestLayers: every package has a layer, and imports only downwards.
func TestLayers(t *testing.T) {
	for pkg, imports := range packages(t) {
		if strings.HasPrefix(pkg, "bench/") {
			continue // benchmarks and soak tools may use anything
		}
		r := rank(pkg)
		if r < 0 {
			t.Errorf("%s has no layer: add it to layers and to docs/architecture.md", pkg)
			continue
		}
		for _, im := range imports {
			if ir := rank(im); ir >= r && !strings.HasPrefix(pkg, im+"/") {
				t.Errorf("%s (layer %d) imports %s (layer %d): upward or sideways", pkg, r, im, ir)
			}
		}
	}
}

// long are the functions allowed past maxLines, each with its reason.
var long = map[string]string{
	"internal/tester/tcp.go measure":  "the TCP test's one select loop over intervals, frames, samples and the end; split by concern it would pass its state around",
	"internal/tester/udp.go measure":  "the UDP test's select loop, as tcp's",
	"internal/cli/lab.go linkOptions": "one data table: a row per lab link option, its flag, unit and help",
}

const maxLines = 80

// TestFunctionLength: no function body runs past maxLines without a
// reason in long.
func TestFunctionLength(t *testing.T) {
	base := root(t)
	fs := token.NewFileSet()
	seen := map[string]bool{}
	err := filepath.WalkDir(filepath.Join(base, "internal"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fs, p, nil, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, p)
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := fs.Position(fd.Body.End()).Line - fs.Position(fd.Body.Pos()).Line
			key := rel + " " + fd.Name.Name
			if n > maxLines {
				seen[key] = true
				if long[key] == "" {
					t.Errorf("%s:%d %s runs %d lines (over %d): split it, or give the reason in long", rel, fs.Position(fd.Pos()).Line, fd.Name.Name, n, maxLines)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for key := range long {
		if !seen[key] {
			t.Errorf("%s is no longer long: remove it from long", key)
		}
	}
}
