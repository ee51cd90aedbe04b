// Package cli is fullpipe's command line: one table of subcommands, each a
// flag set (pflag, for GNU-style -P/--streams) and a run function. Main
// returns the process exit code so tests can drive it in-process.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/version"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailed  = 1 // the test failed or stopped early (partial result)
	ExitUsage   = 2 // bad command line
	ExitRefused = 3 // could not reach or use the responder
)

// env is what a command runs with.
type env struct {
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
	args   []string // the full command line, for the result's meta
}

type command struct {
	name    string
	summary string
	usage   string // after "fullpipe NAME "
	long    string
	flags   func(fs *pflag.FlagSet) func(e env, args []string) error
}

var commands []*command

func register(c *command) { commands = append(commands, c) }

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// usageError is a bad command line; Main prints it with a hint.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// exitError carries a specific exit code with its message.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// Main runs fullpipe with args (without the program name) and returns the
// exit code. SIGINT/SIGTERM cancel the running test, which then prints
// what it measured, marked partial; a second signal kills the process.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop) // restore default handling: a second Ctrl-C kills
	return Run(ctx, args, stdout, stderr)
}

// Run is Main with a caller's context.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		topUsage(stderr)
		return ExitUsage
	}
	name := args[0]
	switch name {
	case "-h", "--help", "help":
		if len(args) > 1 {
			if c := lookup(args[1]); c != nil {
				fs := newFlagSet(c)
				c.flags(fs)
				fmt.Fprint(stdout, helpText(c, fs))
				return ExitOK
			}
		}
		topUsage(stdout)
		return ExitOK
	case "-v", "--version":
		name = "version"
	}
	c := lookup(name)
	if c == nil {
		fmt.Fprintf(stderr, "fullpipe: unknown command %q (try `fullpipe help`)\n", name)
		return ExitUsage
	}
	fs := newFlagSet(c)
	run := c.flags(fs)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(stdout, helpText(c, fs))
			return ExitOK
		}
		fmt.Fprintf(stderr, "fullpipe %s: %v (see `fullpipe %s --help`)\n", c.name, err, c.name)
		return ExitUsage
	}
	err := run(env{ctx: ctx, stdout: stdout, stderr: stderr, args: append([]string{"fullpipe"}, args...)}, fs.Args())
	if err == nil {
		return ExitOK
	}
	var ue usageError
	var ee exitError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "fullpipe %s: %v (see `fullpipe %s --help`)\n", c.name, err, c.name)
		return ExitUsage
	case errors.As(err, &ee):
		fmt.Fprintf(stderr, "fullpipe %s: %v\n", c.name, oneLine(err))
		return ee.code
	}
	fmt.Fprintf(stderr, "fullpipe %s: %v\n", c.name, oneLine(err))
	return ExitFailed
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }

func newFlagSet(c *command) *pflag.FlagSet {
	fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
	fs.SortFlags = false
	return fs
}

func helpText(c *command, fs *pflag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: fullpipe %s %s\n\n%s\n", c.name, c.usage, strings.TrimSpace(c.long))
	if u := fs.FlagUsages(); u != "" {
		fmt.Fprintf(&b, "\nFlags:\n%s", u)
	}
	b.WriteString(unitsHelp)
	return b.String()
}

const unitsHelp = `
Units: rates are bits per second with SI suffixes (50M = 50,000,000 bit/s,
1.5G); sizes are bytes, a plain number being bytes, with explicit binary
or decimal suffixes (64KiB = 65,536 B, 250kB = 250,000 B); durations are
seconds (10, 2.5) or Go durations (40ms, 10s, 1m30s).
`

func topUsage(w io.Writer) {
	fmt.Fprintf(w, "fullpipe %s: network tests at the TCP layer (RFC 6349).\n\nUsage: fullpipe COMMAND [flags]\n\nCommands:\n", version.Release)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\nRun `fullpipe help COMMAND` or `fullpipe COMMAND --help` for its flags.\n")
}
