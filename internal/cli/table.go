package cli

import (
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// spec is one row of the command table.
type spec struct {
	name    string
	usage   string // after "fullpipe NAME " in the help's first line
	summary string // one line, in the parent's list of commands
	long    string // what it does and how to read its output
	example string // lines of "  fullpipe ...", each with what it shows
	pos     argShape
	choices []string       // what the shell completes the argument with
	new     func() command // a leaf: its args struct; nil for a group
	sub     []spec         // a group's verbs (lab up, sweep window)
}

// argShape is what positional arguments a command takes; build refuses
// more than it allows, and TestBadInput leaves out each required one.
type argShape int

const (
	argNone      argShape = iota // none
	argTarget                    // HOST[:PORT], or -c HOST
	argOptTarget                 // an optional HOST[:PORT] (rfc6349: without it, a lab)
	argOne                       // exactly one word (completion SHELL)
	argCommand                   // client|server -- CMD [ARGS] (lab exec)
	argRest                      // any number, none needed (help's COMMAND path)
)

// maxArgs is the most positional arguments a shape allows, -1 for any.
func (a argShape) maxArgs() int {
	switch a {
	case argNone:
		return 0
	case argTarget, argOptTarget, argOne:
		return 1
	}
	return -1
}

// required says whether the command needs a positional argument (for
// argTarget, or its -c HOST).
func (a argShape) required() bool { return a == argTarget || a == argOne || a == argCommand }

// table is fullpipe's commands, in the order the overview lists them.
func table() []spec {
	return []spec{
		serveSpec(),
		tcpSpec(),
		udpSpec(),
		rttSpec(),
		mtuSpec(),
		rfc6349Spec(),
		sweepSpec(),
		trainsSpec(),
		pingSpec(), unreachSpec(),
		stampSpec(),
		reflectorSpec(),
		rfc2544Spec(),
		y1564Spec(),
		controllerSpec(),
		agentSpec(),
		fleetSpec(),
		labSpec(),
		demoSpec(),
		versionSpec(),
		completionSpec(),
		helpSpec(),
	}
}

// Annotations of each cobra command: its place in the table, which the
// help keeps (cobra's own list is alphabetical), and its argShape.
const (
	orderKey = "fullpipe.order"
	argsKey  = "fullpipe.args"
)

// build turns a row into a cobra command for one run with e.
func (s spec) build(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:         s.name + " " + s.usage,
		Short:       s.summary,
		Long:        strings.TrimSpace(s.long),
		Example:     strings.TrimRight(s.example, "\n"),
		Args:        cobra.ArbitraryArgs,
		ValidArgs:   s.choices,
		Annotations: map[string]string{argsKey: strconv.Itoa(int(s.pos))},
	}
	c.Flags().SortFlags = false
	for i, sub := range s.sub {
		sc := sub.build(e)
		sc.Annotations[orderKey] = strconv.Itoa(i)
		c.AddCommand(sc)
	}
	if s.new == nil { // a group: name a verb
		c.RunE = func(_ *cobra.Command, args []string) error { return ranError{s.missingVerb(args)} }
		return c
	}
	cmd := s.new()
	cmd.flags(c.Flags())
	completeChoices(c)
	c.RunE = func(c *cobra.Command, args []string) error {
		if max := s.pos.maxArgs(); max >= 0 && len(args) > max {
			return ranError{usagef("unexpected argument %q", args[max])}
		}
		if err := cmd.validate(input{args: args, changed: c.Flags().Changed}); err != nil {
			return ranError{err}
		}
		if cc, ok := cmd.(configured); ok {
			if err := cc.config(); err != nil {
				return ranError{flagged(err, c.Flags(), renames(cmd))}
			}
		}
		run := *e
		run.cmd = c
		run.lab = watchLab(e.inLab)
		if err := cmd.run(run); err != nil {
			return ranError{err}
		}
		return nil
	}
	return c
}

// missingVerb is a group run without one of its verbs.
func (s spec) missingVerb(args []string) error {
	var verbs []string
	for _, v := range s.sub {
		verbs = append(verbs, v.name)
	}
	want := strings.Join(verbs[:len(verbs)-1], ", ") + " or " + verbs[len(verbs)-1]
	if len(args) == 0 {
		return usagef("missing a subcommand: %s", want)
	}
	return usagef("unknown subcommand %q: want %s", args[0], want)
}

// completeChoices lets the shell complete every flag that has a fixed set
// of choices (--direction up|down|both), and file names for FILE flags.
func completeChoices(c *cobra.Command) {
	c.Flags().VisitAll(func(f *pflag.Flag) {
		v, ok := f.Value.(textValue)
		switch {
		case ok && len(v.choices) > 0:
			choices := v.choices
			_ = c.RegisterFlagCompletionFunc(f.Name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				return choices, cobra.ShellCompDirectiveNoFileComp
			})
		case ok && v.meta == "FILE":
			_ = c.MarkFlagFilename(f.Name)
		case ok && v.meta == "DIR":
			_ = c.MarkFlagDirname(f.Name)
		}
	})
}

// renames is cmd's renamer's map, nil when its flags follow the fields.
func renames(cmd command) map[string]string {
	if r, ok := cmd.(renamer); ok {
		return r.renamed()
	}
	return nil
}

// configured is a command whose flags fill an engine or method config:
// after its own checks of the flags, the config's Validate (package
// result, the same rules the engine applies before any connection, and
// through them the request's) has the last word.
type configured interface{ config() error }

// checkConfig is c's Validate with its defaults, as the engine runs it.
func checkConfig[C interface {
	WithDefaults() C
	Validate() error
}](c C) error {
	return c.WithDefaults().Validate()
}

func (a *tcpArgs) config() error         { return checkConfig(a.cfg) }
func (a *udpArgs) config() error         { return checkConfig(a.cfg) }
func (a *mtuArgs) config() error         { return checkConfig(a.cfg) }
func (a *trainsArgs) config() error      { return checkConfig(a.cfg) }
func (a *windowSweepArgs) config() error { return checkConfig(a.cfg) }
func (a *msgLenSweepArgs) config() error { return checkConfig(a.cfg) }
func (a *rfc2544Args) config() error     { return checkConfig(a.cfg) }
func (a *stampArgs) config() error       { return checkConfig(a.cfg) }
func (a *rfcArgs) config() error {
	if a.inLab {
		return nil // the run inside the lab checks it
	}
	return checkConfig(a.cfg)
}
