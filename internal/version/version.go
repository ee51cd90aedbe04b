// Package version names this build and the host it runs on, for the
// self-description every result carries.
package version

import (
	"runtime/debug"
	"strings"

	"golang.org/x/sys/unix"
)

// Release is fullpipe's version.
const Release = "0.1.0-dev"

// Software is "fullpipe RELEASE (go VERSION)".
func Software() string {
	gov := "go"
	if bi, ok := debug.ReadBuildInfo(); ok {
		gov = bi.GoVersion
	}
	return "fullpipe " + Release + " (" + gov + ")"
}

// Kernel is the running kernel's "sysname release", e.g. "Linux 6.18.4".
func Kernel() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "unknown"
	}
	return strings.TrimRight(string(u.Sysname[:]), "\x00") + " " + strings.TrimRight(string(u.Release[:]), "\x00")
}
