package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/fleet/client"
	"github.com/fullpipe/fullpipe/internal/units"
)

// leaf is one `fullpipe fleet NOUN VERB`: its own flags (in closures
// over its own variables), a check of them, one API call and its text.
type leaf struct {
	connArgs
	nargs int
	extra func(fs *pflag.FlagSet)
	check func(args []string) error
	do    func(ctx context.Context, cl *client.Client, args []string) (any, error)
	text  func(w io.Writer, v any)
}

func (l *leaf) flags(fs *pflag.FlagSet) {
	if l.extra != nil {
		l.extra(fs)
	}
	l.connArgs.flags(fs, true)
}

func (l *leaf) validate(in input) error {
	if len(in.args) < l.nargs {
		return usagef("missing an argument (see the usage line)")
	}
	if l.check != nil {
		if err := l.check(in.args); err != nil {
			return err
		}
	}
	return l.resolve()
}

func (l *leaf) run(e env) error {
	cl, err := l.dial()
	if err != nil {
		return err
	}
	defer cl.Close()
	v, err := l.do(e.ctx, cl, e.cmd.Flags().Args())
	if err != nil {
		return call(err)
	}
	if l.json || l.text == nil {
		return printJSON(e.stdout, v)
	}
	l.text(e.stdout, v)
	return nil
}

// table writes rows under a header, aligned.
func tabulate(w io.Writer, header string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.ReplaceAll(header, " ", "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

func fleetSpec() spec {
	return spec{
		name: "fleet", usage: "agents|tokens|schedules|runs|results VERB [flags]",
		summary: "operate a controller: agents, tokens, schedules, runs, results",
		long: `Talks to a fullpipe controller's API (docs/fleet.md), so that an operator
never needs curl. Every verb takes --controller https://HOST:PORT, a token
(--token-file FILE, or the environment's ` + envToken + `), and, for a
controller with its self-signed certificate, --pin with the fingerprint it
logs at start. --json prints the API's own JSON.

Roles: a read token lists and shows; an operate token also adds and
removes schedules and cancels runs; an admin token also enrols agents and
issues and revokes tokens. Exit codes: 0 done, 2 bad command line, 3 the
controller could not be reached or refused (the line says why).`,
		example: `  export FULLPIPE_CONTROLLER=https://ctl.example.net:8443 FULLPIPE_PIN=3f2a...
  fullpipe fleet agents enrol paris-1 --token-file admin.token > paris-1.token
                                  enrol an agent; its token is printed once
  fullpipe fleet agents list --token-file ops.token
  fullpipe fleet schedules add --name hourly-mesh --kind tcp --config '{"duration_ns":10000000000}' \
      --from-site paris --to-site lyon --both --repeat R/PT1H --slip 5m --token-file ops.token
                                  every Paris agent with every Lyon agent, both ways, hourly
  fullpipe fleet agents busy paris-1 --token-file ops.token
                                  its booked slots in the next hour and when it is next free
  fullpipe fleet results list --source paris-1 --kind tcp --token-file ops.token`,
		sub: []spec{agentsSpec(), tokensSpec(), schedulesSpec(), runsSpec(), resultsSpec()},
	}
}

func agentsSpec() spec {
	return spec{
		name: "agents", usage: "list|show|enrol|approve|revoke|busy", summary: "the test hosts: list, show, enrol, approve, revoke, busy",
		example: `  fullpipe fleet agents list --token-file ops.token`,
		sub: []spec{
			{name: "list", usage: "[flags]", summary: "every agent with its state (up, down, new, revoked)", example: `  fullpipe fleet agents list --token-file ops.token
  fullpipe fleet agents list -J | jq -r '.[] | select(.state=="down") | .name'`,
				new: agentsList},
			{name: "show", usage: "NAME [flags]", pos: argOne, summary: "one agent", example: `  fullpipe fleet agents show paris-1 --token-file ops.token`,
				new: agentsShow},
			{name: "enrol", usage: "NAME [--note TEXT] [flags]", pos: argOne, summary: "enrol an agent and print its token (admin)", example: `  fullpipe fleet agents enrol paris-1 --note "rack 4" --token-file admin.token > paris-1.token`,
				new: agentsEnrol},
			{name: "approve", usage: "NAME [flags]", pos: argOne, summary: "let peers dial the agent's pending addresses (admin)", example: `  fullpipe fleet agents approve paris-1 --token-file admin.token

An agent's advertised address is dialled only when it is the address the
agent connects from; another (behind NAT: the forwarded address) waits,
shown as PENDING, until an admin approves it. It stays approved.`,
				new: agentsApprove},
			{name: "revoke", usage: "NAME [flags]", pos: argOne, summary: "revoke an agent's token and cancel its runs (admin)", example: `  fullpipe fleet agents revoke paris-1 --token-file admin.token`,
				new: agentsRevoke},
			{name: "busy", usage: "NAME [--from T] [--to T] [flags]", pos: argOne, summary: "an agent's booked slots and when it is next free", example: `  fullpipe fleet agents busy paris-1 --to +6h --token-file ops.token`,
				new: agentsBusy},
		},
	}
}

func agentsList() command {
	return &leaf{
		do:   func(ctx context.Context, cl *client.Client, _ []string) (any, error) { return cl.Agents(ctx) },
		text: func(w io.Writer, v any) { agentTable(w, v.([]fleet.Agent)) },
	}
}

func agentTable(w io.Writer, as []fleet.Agent) {
	var rows [][]string
	for _, a := range as {
		rows = append(rows, []string{a.Name, string(a.State), dash(a.Site), dash(a.Version), when(a.LastSeen), dash(strings.Join(a.Addresses, ",")),
			dash(strings.Join(a.PendingAddresses, ","))})
	}
	tabulate(w, "NAME STATE SITE VERSION LAST-SEEN RESPONDER PENDING", rows)
}

func agentsApprove() command {
	return &leaf{nargs: 1,
		do: func(ctx context.Context, cl *client.Client, a []string) (any, error) {
			return cl.ApproveAgent(ctx, a[0])
		},
		text: func(w io.Writer, v any) {
			a := v.(fleet.Agent)
			fmt.Fprintf(w, "agent %s: peers dial %s\n", a.Name, dash(strings.Join(a.Addresses, ", ")))
		},
	}
}

func agentsShow() command {
	return &leaf{nargs: 1,
		do: func(ctx context.Context, cl *client.Client, a []string) (any, error) { return cl.Agent(ctx, a[0]) },
		text: func(w io.Writer, v any) {
			a := v.(fleet.Agent)
			agentTable(w, []fleet.Agent{a})
			fmt.Fprintf(w, "labels %v; runs %s; enrolled %s; registered %s\n", a.Labels, strings.Join(a.Capabilities, ","), when(a.Enrolled), when(a.Registered))
		},
	}
}

func agentsEnrol() command {
	var note string
	return &leaf{nargs: 1,
		extra: func(fs *pflag.FlagSet) { fs.Var(text(&note, "", "TEXT"), "note", "a note kept with the token") },
		do: func(ctx context.Context, cl *client.Client, a []string) (any, error) {
			return cl.Enrol(ctx, fleet.Enrolment{Name: a[0], Note: note})
		},
		text: func(w io.Writer, v any) { fmt.Fprintln(w, v.(fleet.Issued).Secret) },
	}
}

func agentsRevoke() command {
	return &leaf{nargs: 1,
		do: func(ctx context.Context, cl *client.Client, a []string) (any, error) {
			return map[string]string{"revoked": a[0]}, cl.RevokeAgent(ctx, a[0])
		},
		text: func(w io.Writer, v any) {
			fmt.Fprintf(w, "revoked the token of agent %s\n", v.(map[string]string)["revoked"])
		},
	}
}

func agentsBusy() command {
	var from, to string
	return &leaf{nargs: 1,
		extra: func(fs *pflag.FlagSet) {
			fs.Var(text(&from, "now", "TIME"), "from", "window start: RFC 3339, now, or +/-DURATION")
			fs.Var(text(&to, "+1h", "TIME"), "to", "window end")
		},
		check: func([]string) error { return checkTimes(from, to) },
		do: func(ctx context.Context, cl *client.Client, a []string) (any, error) {
			now := time.Now()
			f, _ := parseTime(from, now)
			t, _ := parseTime(to, now)
			return cl.Busy(ctx, a[0], f, t)
		},
		text: func(w io.Writer, v any) {
			b := v.(fleet.Busy)
			fmt.Fprintf(w, "%s: %.0f %% of %s .. %s booked by exclusive runs; next free %s\n", b.Agent, 100*b.Fraction, when(b.From), when(b.To), when(b.NextFree))
			var rows [][]string
			for _, s := range b.Slots {
				rows = append(rows, []string{s.RunID, when(s.Start), when(s.End), fmt.Sprint(s.Exclusive)})
			}
			tabulate(w, "RUN START END EXCLUSIVE", rows)
		},
	}
}

func checkTimes(ts ...string) error {
	for _, s := range ts {
		if _, err := parseTime(s, time.Now()); err != nil {
			return usagef("%v", err)
		}
	}
	return nil
}

func tokensSpec() spec {
	return spec{
		name: "tokens", usage: "list|issue|revoke", summary: "API tokens and their roles (admin)",
		example: `  fullpipe fleet tokens issue read --token-file admin.token > grafana.token`,
		sub: []spec{
			{name: "list", usage: "[flags]", summary: "every token (never its secret)", example: `  fullpipe fleet tokens list --token-file admin.token`,
				new: tokensList},
			{name: "issue", usage: "read|operate|admin [--note TEXT] [flags]", pos: argOne, choices: []string{"read", "operate", "admin"}, summary: "issue a token of a role and print it once", example: `  fullpipe fleet tokens issue operate --note "NOC" --token-file admin.token > ops.token`,
				new: tokensIssue},
			{name: "revoke", usage: "ID [flags]", pos: argOne, summary: "revoke a token", example: `  fullpipe fleet tokens revoke 7461ebce074777e3b7a7e3c992c98ccf --token-file admin.token`,
				new: tokensRevoke},
		},
	}
}

func tokensList() command {
	return &leaf{
		do: func(ctx context.Context, cl *client.Client, _ []string) (any, error) { return cl.Tokens(ctx) },
		text: func(w io.Writer, v any) {
			var rows [][]string
			for _, t := range v.([]fleet.Token) {
				rows = append(rows, []string{t.ID, string(t.Role), dash(t.Agent), when(t.Created), fmt.Sprint(t.Revoked), dash(t.Note)})
			}
			tabulate(w, "ID ROLE AGENT CREATED REVOKED NOTE", rows)
		},
	}
}

func tokensIssue() command {
	var note string
	return &leaf{nargs: 1,
		extra: func(fs *pflag.FlagSet) { fs.Var(text(&note, "", "TEXT"), "note", "a note kept with the token") },
		check: func(a []string) error {
			switch fleet.Role(a[0]) {
			case fleet.RoleRead, fleet.RoleOperate, fleet.RoleAdmin:
				return nil
			}
			return usagef("role %q: want read, operate or admin (agent tokens come from `fleet agents enrol`)", a[0])
		},
		do: func(ctx context.Context, cl *client.Client, a []string) (any, error) {
			return cl.IssueToken(ctx, fleet.TokenRequest{Role: fleet.Role(a[0]), Note: note})
		},
		text: func(w io.Writer, v any) { fmt.Fprintln(w, v.(fleet.Issued).Secret) },
	}
}

func tokensRevoke() command {
	return &leaf{nargs: 1,
		do: func(ctx context.Context, cl *client.Client, a []string) (any, error) {
			return map[string]string{"revoked": a[0]}, cl.RevokeToken(ctx, a[0])
		},
		text: func(w io.Writer, v any) { fmt.Fprintf(w, "revoked token %s\n", v.(map[string]string)["revoked"]) },
	}
}

// dash is s, or "-" for nothing.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// rateText is a rate for a table, "-" for none.
func rateText(bps float64) string {
	if bps <= 0 {
		return "-"
	}
	return units.FormatRate(bps)
}
