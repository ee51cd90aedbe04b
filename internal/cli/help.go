package cli

// Help text, and the help, completion and version commands.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/version"
)

const unitsHelp = `
Units: rates are bits per second with SI suffixes (50M = 50,000,000 bit/s,
1.5G); sizes are bytes, a plain number being bytes, with explicit binary
or decimal suffixes (64KiB = 65,536 B, 250kB = 250,000 B); durations are
seconds (10, 2.5) or Go durations (40ms, 10s, 1m30s).
`

const exitHelp = `
Exit status: 0 success; 1 the test failed (an RFC 6349 verdict of FAIL) or
stopped early (the partial figures are printed, marked PARTIAL); 2 bad
command line (one line on stderr says what); 3 the responder could not be
reached or refused the test.
`

const rootExample = `  fullpipe serve                        the responder, on the far end (port 6349)
  fullpipe tcp HOST -t 10 -P 4          10 s of TCP, 4 streams (iperf3's -c HOST -p PORT -J work too)
  fullpipe rfc6349 HOST --cir 100M      the RFC 6349 method, verdict and diagnosis
  fullpipe demo                         a lab path and tests across it, on this machine alone
  source <(fullpipe completion bash)    complete commands and flags in bash`

// helpText is a command's --help: usage, what it does, its verbs,
// examples, flags with their units, and the units' conventions.
func helpText(c *cobra.Command) string {
	var b strings.Builder
	if !c.HasParent() {
		fmt.Fprintf(&b, "fullpipe %s: network tests at the TCP layer (RFC 6349).\n\nUsage: fullpipe COMMAND [flags]\n", version.Release)
	} else {
		_, usage, _ := strings.Cut(c.Use, " ")
		fmt.Fprintf(&b, "Usage: %s %s\n\n%s\n", c.CommandPath(), strings.TrimSpace(usage), c.Long)
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\nCommands:\n")
		for _, s := range inOrder(c.Commands()) {
			if s.IsAvailableCommand() || s.Name() == "help" {
				fmt.Fprintf(&b, "  %-10s %s\n", s.Name(), s.Short)
			}
		}
	}
	if c.Example != "" {
		fmt.Fprintf(&b, "\nExamples:\n%s\n", c.Example)
	}
	if u := flagUsages(c.LocalFlags()); u != "" {
		fmt.Fprintf(&b, "\nFlags:\n%s", u)
	}
	if !c.HasParent() {
		b.WriteString("\nRun `fullpipe help COMMAND` or `fullpipe COMMAND --help` for its flags.\n")
		b.WriteString(exitHelp)
	}
	b.WriteString(unitsHelp)
	return b.String()
}

// flagUsages lists the visible flags of fs, one per line: the flag, its
// unit (the value's Type) unless it is a bool, what it does and its
// default unless that is zero. pflag's own FlagUsages writes
// "--json[=true|false]" for every bool since v1.1.0; this does not.
func flagUsages(fs *pflag.FlagSet) string {
	var heads, tails []string
	width := 0
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		head := "      --" + f.Name
		if f.Shorthand != "" {
			head = "  -" + f.Shorthand + ", --" + f.Name
		}
		if f.Value.Type() != "bool" {
			head += " " + f.Value.Type()
		}
		tail := f.Usage
		switch f.DefValue {
		case "", "0", "false", "0s":
		default:
			tail += " (default " + f.DefValue + ")"
		}
		heads, tails = append(heads, head), append(tails, tail)
		width = max(width, len(head))
	})
	var b strings.Builder
	for i := range heads {
		fmt.Fprintf(&b, "%-*s   %s\n", width, heads[i], tails[i])
	}
	return b.String()
}

func versionSpec() spec {
	return spec{
		name: "version", summary: "print version, Go and kernel",
		long:    "Prints fullpipe's version, the Go toolchain it was built with, this host's kernel and its default congestion control.",
		example: "  fullpipe version\n  fullpipe -v        the same",
		new:     func() command { return &versionArgs{} },
	}
}

type versionArgs struct{}

func (*versionArgs) flags(*pflag.FlagSet) {}
func (*versionArgs) validate(input) error { return nil }
func (*versionArgs) run(e env) error {
	fmt.Fprintf(e.stdout, "%s, kernel %s, default congestion control %s\n", version.Software(), version.Kernel(), defaultCC())
	return nil
}

func helpSpec() spec {
	return spec{
		name: "help", usage: "[COMMAND [SUBCOMMAND]]", summary: "help about any command",
		long:    "Prints the help of a command, as COMMAND --help does; without one, the list of commands.",
		example: "  fullpipe help tcp\n  fullpipe help lab up",
		pos:     argRest,
		new:     func() command { return &helpArgs{} },
	}
}

type helpArgs struct{ path []string }

func (*helpArgs) flags(*pflag.FlagSet) {}
func (a *helpArgs) validate(in input) error {
	a.path = in.args
	return nil
}
func (a *helpArgs) run(e env) error {
	target, rest, err := e.cmd.Root().Find(a.path)
	if err != nil || len(rest) > 0 {
		return usagef("unknown command %q", strings.Join(a.path, " "))
	}
	fmt.Fprint(e.stdout, helpText(target))
	return nil
}

// shells are the shells completion writes scripts for.
func shells() []string { return []string{"bash", "zsh", "fish", "powershell"} }

func completionSpec() spec {
	return spec{
		name: "completion", usage: strings.Join(shells(), "|"), summary: "shell completion script for bash, zsh, fish or powershell",
		long: `Prints a script that completes fullpipe's commands, flags, and the
choices of flags that have a fixed set (--direction, --cc, --profile,
--log-format...) in the shell named. The script asks fullpipe itself
(a hidden __complete command), so it stays right as fullpipe changes.`,
		example: `  source <(fullpipe completion bash)          bash, this shell only
  fullpipe completion bash > /etc/bash_completion.d/fullpipe
                                              bash, every new shell (needs bash-completion)
  fullpipe completion zsh > "${fpath[1]}/_fullpipe"
                                              zsh (with compinit)
  fullpipe completion fish > ~/.config/fish/completions/fullpipe.fish
  fullpipe completion powershell | Out-String | Invoke-Expression`,
		pos: argOne, choices: shells(),
		new: func() command { return &completionArgs{} },
	}
}

type completionArgs struct {
	shell  string
	noDesc bool
}

func (a *completionArgs) flags(fs *pflag.FlagSet) {
	fs.BoolVar(&a.noDesc, "no-descriptions", false, "complete names only, without each one's description")
}

func (a *completionArgs) validate(in input) error {
	if len(in.args) == 0 {
		return usagef("missing the shell: %s", strings.Join(shells(), ", "))
	}
	a.shell = in.args[0]
	for _, s := range shells() {
		if s == a.shell {
			return nil
		}
	}
	return usagef("unknown shell %q: want %s", a.shell, strings.Join(shells(), ", "))
}

func (a *completionArgs) run(e env) error {
	root, desc := e.cmd.Root(), !a.noDesc
	switch a.shell {
	case "bash":
		return root.GenBashCompletionV2(e.stdout, desc)
	case "zsh":
		if desc {
			return root.GenZshCompletion(e.stdout)
		}
		return root.GenZshCompletionNoDesc(e.stdout)
	case "fish":
		return root.GenFishCompletion(e.stdout, desc)
	}
	if desc {
		return root.GenPowerShellCompletionWithDesc(e.stdout)
	}
	return root.GenPowerShellCompletion(e.stdout)
}

// inOrder sorts commands as the table lists them.
func inOrder(cs []*cobra.Command) []*cobra.Command {
	out := slices.Clone(cs)
	slices.SortStableFunc(out, func(a, b *cobra.Command) int {
		i, _ := strconv.Atoi(a.Annotations[orderKey])
		j, _ := strconv.Atoi(b.Annotations[orderKey])
		return i - j
	})
	return out
}
