package arch

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// held are the packages that must stay small, however their imports
// grow: what a responder is built from (wire, flow, serve: it runs on
// every test host and links no method) and the fleet's contract (fleet,
// store: the API's types and their keeping, which every agent, the
// controller and the CLI share).
var held = []string{"internal/wire", "internal/flow", "internal/serve", "internal/fleet", "internal/store"}

// methodMaths is what no held package may compile, directly or through
// another: the methods' judgements and documents (a responder that
// linked them grew with every method) and gonum (BER's likelihood). A
// path ending in "/" is a whole tree. train's judgement is here, a
// train's reading (dispersion, which the protocol carries) is not; the
// configs reach the fleet through the table of kinds (kinds.Decode,
// schedule.Costed's reader), never through fleet or schedule.
var methodMaths = []string{
	module + "internal/result", module + "internal/rfc2544", module + "internal/rfc6349",
	module + "internal/y1564", module + "internal/ber", module + "internal/train",
	module + "internal/sweep", module + "internal/ping", module + "internal/pathmtu",
	"gonum.org/v1/gonum/",
}

// listed is one package as `go list -json` reports it: its path and
// its own imports, as the go command resolves them for the build.
type listed struct {
	ImportPath string
	Imports    []string
}

// TestDeps: no held package compiles any of methodMaths, however
// indirectly, as the go command resolves it for a Linux build (as
// tailscale's tstest/deptest holds its binaries' dependencies). It
// asks `go list -deps`, so build tags, platform files and other modules
// count exactly as they do in the binary; test files do not. Each
// failure names the shortest chain of imports to cut.
func TestDeps(t *testing.T) {
	pkgs := goList(t, held)
	for _, h := range held {
		order, by := walk(pkgs, module+h)
		for _, m := range methodMaths {
			if i := slices.IndexFunc(order, func(p string) bool { return within(p, m) }); i >= 0 {
				t.Errorf("%s compiles %s: %s", h, strings.TrimPrefix(m, module), chain(by, order[i]))
			}
		}
	}
}

// within says whether package pkg is m, or in m's tree when m ends in
// "/".
func within(pkg, m string) bool {
	if strings.HasSuffix(m, "/") {
		return strings.HasPrefix(pkg+"/", m)
	}
	return pkg == m
}

// goList runs `go list -deps -json` on the module's packages pkgs
// (module-relative) and returns every package they compile, themselves
// included, by import path. GOOS is Linux's, the platform a responder
// and an agent run on; without cgo, as the tool is built.
func goList(t *testing.T, pkgs []string) map[string]listed {
	t.Helper()
	args := []string{"list", "-deps", "-json=ImportPath,Imports"}
	for _, p := range pkgs {
		args = append(args, "./"+p)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root(t)
	cmd.Env = append(os.Environ(), "GOOS=linux", "CGO_ENABLED=0")
	out, err := cmd.Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		t.Fatalf("go list: %v\n%s", err, ee.Stderr)
	} else if err != nil {
		t.Fatalf("go list: %v", err)
	}
	all := map[string]listed{}
	for d := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := d.Decode(&p); err == io.EOF {
			return all
		} else if err != nil {
			t.Fatalf("go list's output: %v", err)
		}
		all[p.ImportPath] = p
	}
}

// walk is every package from compiles, breadth first (nearest first),
// and the package that imported each on the way.
func walk(pkgs map[string]listed, from string) (order []string, by map[string]string) {
	by = map[string]string{from: ""}
	order = []string{from}
	for i := 0; i < len(order); i++ {
		for _, im := range pkgs[order[i]].Imports {
			if _, ok := by[im]; !ok {
				by[im] = order[i]
				order = append(order, im)
			}
		}
	}
	return order, by
}

// chain is the imports from walk's start to pkg, "a → b → pkg".
func chain(by map[string]string, pkg string) string {
	var c []string
	for p := pkg; p != ""; p = by[p] {
		c = append(c, strings.TrimPrefix(p, module))
	}
	slices.Reverse(c)
	return strings.Join(c, " → ")
}
