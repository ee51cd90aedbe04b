package testkit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// BuildBinary builds cmd/fullpipe (CGO_ENABLED=0) into a new temporary
// directory for tests that run the real binary as a second process. It
// returns the binary's path and a cleanup that removes the directory.
func BuildBinary() (bin string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "fullpipe-test")
	if err != nil {
		return "", nil, err
	}
	bin = filepath.Join(dir, "fullpipe")
	build := exec.Command("go", "build", "-o", bin, "github.com/fullpipe/fullpipe/cmd/fullpipe")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("building fullpipe: %v\n%s", err, out)
	}
	return bin, func() { os.RemoveAll(dir) }, nil
}

// MainWithBinary is a TestMain for tests that run the real binary: it
// builds it into *bin, runs the tests, removes it and exits with their
// code. A build failure exits 1 with the compiler's words.
func MainWithBinary(m interface{ Run() int }, bin *string) {
	b, cleanup, err := BuildBinary()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*bin = b
	code := m.Run()
	cleanup()
	os.Exit(code)
}
