// Package cli is fullpipe's command line: one table of commands (table.go),
// each with its own args struct whose fields its flags fill, a validate
// method that checks them, and a run method. cobra (on pflag) parses,
// nests the verbs (lab up, sweep window) and completes in the shell; the
// help text is our own (help.go). Main returns the process exit code so
// tests can drive it in-process; nothing here is package-level state.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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
	args   []string       // the full command line, for the result's meta
	cmd    *cobra.Command // the command being run (for help and completion)
	inLab  string         // the lab the command runs in ($FULLPIPE_LAB, set by lab exec), or ""
	lab    *labWatch      // that lab, marked as the command started
}

// command is one leaf of the table: an args struct whose fields the flags
// fill. validate checks them and the positional arguments, and prepares
// what run needs; its errors are usage errors (exit 2). Engine-side
// validation may later replace validate.
type command interface {
	flags(fs *pflag.FlagSet)
	validate(in input) error
	run(e env) error
}

// input is what validate sees besides the flags' values.
type input struct {
	args    []string               // positional arguments
	changed func(flag string) bool // whether the user gave this flag
}

// usageError is a bad command line; Run prints it with a hint, exit 2.
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

// ranError marks an error of a command's validate or run, as opposed to
// one cobra found on the command line (an unknown flag, a bad value).
type ranError struct{ err error }

func (e ranError) Error() string { return e.err.Error() }

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
	if len(args) > 0 && (args[0] == "-v" || args[0] == "--version") {
		args = append([]string{"version"}, args[1:]...)
	}
	e := env{ctx: ctx, stdout: stdout, stderr: stderr, args: append([]string{"fullpipe"}, args...), inLab: os.Getenv(envLab)}
	root := newRoot(&e)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return ExitOK
	}
	name := cmd.CommandPath()
	var ran ranError
	if !errors.As(err, &ran) { // cobra's: the command line itself
		fmt.Fprintf(stderr, "%s: %s (see `%s --help`)\n", name, oneLine(err), name)
		return ExitUsage
	}
	err = ran.err
	var ue usageError
	var ee exitError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: %s (see `%s --help`)\n", name, oneLine(err), name)
		return ExitUsage
	case errors.As(err, &ee):
		fmt.Fprintf(stderr, "%s: %s\n", name, oneLine(err))
		return ee.code
	}
	fmt.Fprintf(stderr, "%s: %s\n", name, oneLine(err))
	return ExitFailed
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }

// newRoot builds the command tree from the table, for one run with e.
func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:           "fullpipe",
		Short:         "network tests at the TCP layer (RFC 6349)",
		Example:       rootExample,
		SilenceErrors: true, // Run prints one line
		SilenceUsage:  true,
		Args:          cobra.ArbitraryArgs,
		RunE:          func(c *cobra.Command, args []string) error { return ranError{rootRun(e, c, args)} },
		// Unknown flags before a command name are reported as the unknown
		// command they come with (rootRun), not as a flag of no command.
		FParseErrWhitelist:         cobra.FParseErrWhitelist{UnknownFlags: true},
		CompletionOptions:          cobra.CompletionOptions{DisableDefaultCmd: true}, // ours is in the table
		DisableFlagsInUseLine:      true,
		SuggestionsMinimumDistance: 2,
	}
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetContext(e.ctx)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err.Error()} })
	root.SetHelpFunc(func(c *cobra.Command, _ []string) { fmt.Fprint(c.OutOrStdout(), helpText(c)) })
	for i, s := range table() {
		c := s.build(e)
		c.Annotations[orderKey] = strconv.Itoa(i)
		if s.name == "help" {
			root.SetHelpCommand(c)
			continue
		}
		root.AddCommand(c)
	}
	root.InitDefaultHelpCmd() // adds ours now, not at Execute, so that tests walk it
	return root
}

// rootRun is `fullpipe` without a known command: the overview (on stderr,
// exit 2) when nothing was given, else one line naming what was wrong.
func rootRun(e *env, c *cobra.Command, args []string) error {
	if len(args) > 0 {
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			return usagef("unknown command %q; did you mean %s?", args[0], strings.Join(s, " or "))
		}
		return usagef("unknown command %q (try `fullpipe help`)", args[0])
	}
	if len(e.args) > 1 {
		return usagef("unknown flag %s (flags come after the command)", e.args[1])
	}
	fmt.Fprint(e.stderr, helpText(c))
	return exitError{ExitUsage, errors.New("missing command")}
}
