package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/fleet/client"
	"github.com/fullpipe/fullpipe/internal/kinds"
)

func runsSpec() spec {
	return spec{
		name: "runs", usage: "list|show|cancel|events", summary: "booked, running and ended runs",
		example: `  fullpipe fleet runs list --state running --token-file ops.token`,
		sub: []spec{
			{name: "list", usage: "[--agent NAME] [--state S] [flags]", summary: "runs, newest slot first", example: `  fullpipe fleet runs list --agent paris-1 --state failed,missed --from -24h --token-file ops.token`,
				new: runsList},
			{name: "show", usage: "ID [flags]", pos: argOne, summary: "one run", example: `  fullpipe fleet runs show d0f64744e4a3f5adc493879fe08be3a1 --token-file ops.token`,
				new: runsShow},
			{name: "cancel", usage: "ID [flags]", pos: argOne, summary: "cancel a run not yet ended (operate)", example: `  fullpipe fleet runs cancel d0f64744e4a3f5adc493879fe08be3a1 --token-file ops.token`,
				new: runsCancel},
			{name: "events", usage: "ID [flags]", pos: argOne, summary: "a run's progress as its agent streamed it", example: `  fullpipe fleet runs events d0f64744e4a3f5adc493879fe08be3a1 --token-file ops.token`,
				new: runsEvents},
		},
	}
}

func runTable(w io.Writer, rs []fleet.Run) {
	var rows [][]string
	for _, r := range rs {
		rows = append(rows, []string{r.ID, string(r.State), r.Test.Kind, r.Source + " -> " + r.Dest, when(r.Start), r.End.Sub(r.Start).Round(time.Second).String(), dash(r.Error)})
	}
	tabulate(w, "ID STATE KIND PAIR SLOT-START SLOT ERROR", rows)
}

func runsList() command {
	var f fleet.RunFilter
	var states, from, to string
	return &leaf{
		extra: func(fs *pflag.FlagSet) {
			fs.Var(text(&f.Agent, "", "NAME"), "agent", "runs of this agent, as source or destination")
			fs.Var(text(&f.Schedule, "", "ID"), "schedule", "runs of this schedule")
			fs.Var(text(&states, "", "STATE[,STATE]"), "state", "scheduled, running, finished, failed, missed, cancelled")
			fs.Var(text(&from, "", "TIME"), "from", "slots starting at or after: RFC 3339, now, or +/-DURATION")
			fs.Var(text(&to, "", "TIME"), "to", "slots starting before")
			fs.Var(count(&f.Limit, 100), "limit", "at most this many (up to 10,000)")
		},
		check: func([]string) error {
			for _, s := range splitList(states) {
				if !validState(s) {
					return usagef("--state %q: want scheduled, running, finished, failed, missed or cancelled", s)
				}
				f.States = append(f.States, fleet.RunState(s))
			}
			return checkTimes(from, to)
		},
		do: func(ctx context.Context, cl *client.Client, _ []string) (any, error) {
			now := time.Now()
			if from != "" {
				f.From, _ = parseTime(from, now)
			}
			if to != "" {
				f.To, _ = parseTime(to, now)
			}
			return cl.Runs(ctx, f)
		},
		text: func(w io.Writer, v any) { runTable(w, v.([]fleet.Run)) },
	}
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func validState(s string) bool {
	switch fleet.RunState(s) {
	case fleet.RunScheduled, fleet.RunRunning, fleet.RunFinished, fleet.RunFailed, fleet.RunMissed, fleet.RunCancelled:
		return true
	}
	return false
}

func runsShow() command {
	return &leaf{nargs: 1,
		do:   func(ctx context.Context, cl *client.Client, a []string) (any, error) { return cl.Run(ctx, a[0]) },
		text: func(w io.Writer, v any) { runTable(w, []fleet.Run{v.(fleet.Run)}) },
	}
}

func runsCancel() command {
	return &leaf{nargs: 1,
		do:   func(ctx context.Context, cl *client.Client, a []string) (any, error) { return cl.CancelRun(ctx, a[0]) },
		text: func(w io.Writer, v any) { runTable(w, []fleet.Run{v.(fleet.Run)}) },
	}
}

func runsEvents() command {
	return &leaf{nargs: 1,
		do: func(ctx context.Context, cl *client.Client, a []string) (any, error) {
			return cl.RunEvents(ctx, a[0], 0)
		},
		text: func(w io.Writer, v any) {
			for _, e := range v.([]fleet.Event) {
				fmt.Fprintf(w, "%s %4d %s\n", e.Time.UTC().Format("15:04:05.000"), e.Seq, e.Event)
			}
		},
	}
}

func resultsSpec() spec {
	return spec{
		name: "results", usage: "list|show", summary: "stored results with their headline figures",
		example: `  fullpipe fleet results list --kind rtt --token-file ops.token`,
		sub: []spec{
			{name: "list", usage: "[--source NAME] [--dest NAME] [--kind KIND] [flags]", summary: "results, newest first", example: `  fullpipe fleet results list --source paris-1 --kind tcp --since -24h --token-file ops.token`,
				new: resultsList},
			{name: "show", usage: "RUN-ID [flags]", pos: argOne, summary: "one result with its whole document (--json)", example: `  fullpipe fleet results show d0f64744e4a3f5adc493879fe08be3a1 -J --token-file ops.token > result.json`,
				new: resultsShow},
		},
	}
}

func resultTable(w io.Writer, rs []fleet.Result) {
	var rows [][]string
	for _, r := range rs {
		f := r.Figures
		rtt, loss := "-", "-"
		if f.RTTMs > 0 {
			rtt = fmt.Sprintf("%.3f ms", f.RTTMs)
		}
		if f.LossPct > 0 {
			loss = fmt.Sprintf("%.3f %%", f.LossPct)
		}
		rows = append(rows, []string{r.RunID, r.Kind, r.Source + " -> " + r.Dest, rateText(f.ThroughputBps), rtt, loss, dash(f.Verdict),
			dash(string(r.Health)), when(r.Received)})
	}
	tabulate(w, "RUN KIND PAIR THROUGHPUT MIN-RTT LOSS VERDICT HEALTH RECEIVED", rows)
}

func resultsList() command {
	var f fleet.ResultFilter
	var since string
	return &leaf{
		extra: func(fs *pflag.FlagSet) {
			fs.Var(text(&f.Source, "", "NAME"), "source", "results whose tester was this agent")
			fs.Var(text(&f.Dest, "", "NAME"), "dest", "results whose responder was this agent")
			fs.Var(oneOf(&f.Kind, "", kinds.Names()...), "kind", "results of this kind")
			fs.Var(text(&f.Schedule, "", "ID"), "schedule", "results of this schedule's runs")
			fs.Var(text(&since, "", "TIME"), "since", "received at or after: RFC 3339, or -DURATION")
			fs.Var(count(&f.Limit, 100), "limit", "at most this many (up to 10,000)")
		},
		check: func([]string) error { return checkTimes(since) },
		do: func(ctx context.Context, cl *client.Client, _ []string) (any, error) {
			if since != "" {
				f.Since, _ = parseTime(since, time.Now())
			}
			return cl.Results(ctx, f, false)
		},
		text: func(w io.Writer, v any) { resultTable(w, v.([]fleet.Result)) },
	}
}

func resultsShow() command {
	return &leaf{nargs: 1,
		do:   func(ctx context.Context, cl *client.Client, a []string) (any, error) { return cl.Result(ctx, a[0]) },
		text: func(w io.Writer, v any) { resultTable(w, []fleet.Result{v.(fleet.Result)}) },
	}
}
