package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/fleet/client"
	"github.com/fullpipe/fullpipe/internal/kinds"
)

func schedulesSpec() spec {
	return spec{
		name: "schedules", usage: "list|show|add|pause|resume|rm", summary: "tests between agents, once or repeating",
		example: `  fullpipe fleet schedules list --token-file ops.token`,
		sub: []spec{
			{name: "list", usage: "[flags]", summary: "every schedule", example: `  fullpipe fleet schedules list --token-file ops.token`,
				new: schedulesList},
			{name: "show", usage: "ID [flags]", pos: argOne, summary: "one schedule", example: `  fullpipe fleet schedules show 78fe5a59184eedb3d007bf198dd9ad6d --token-file ops.token`,
				new: schedulesShow},
			{name: "add", usage: "--kind KIND --from... --to... [flags]", summary: "add a schedule (operate)", example: `  fullpipe fleet schedules add --kind rtt --from paris-1 --to lyon-1 --repeat "*/5 * * * *" --token-file ops.token
  fullpipe fleet schedules add --kind tcp --config '{"duration_ns":10000000000}' --from-label role=edge --to-site core --both --repeat R/PT1H --slip 10m --token-file ops.token`,
				new: schedulesAdd},
			{name: "pause", usage: "ID [flags]", pos: argOne, summary: "stop booking a schedule's runs; those booked stay (operate)", example: `  fullpipe fleet schedules pause 78fe5a59184eedb3d007bf198dd9ad6d --token-file ops.token`,
				new: func() command { return schedulesEnable(false) }},
			{name: "resume", usage: "ID [flags]", pos: argOne, summary: "book a paused schedule's runs again, from its next occurrence after now (operate)", example: `  fullpipe fleet schedules resume 78fe5a59184eedb3d007bf198dd9ad6d --token-file ops.token`,
				new: func() command { return schedulesEnable(true) }},
			{name: "rm", usage: "ID [flags]", pos: argOne, summary: "remove a schedule and cancel its runs not yet started (operate)", example: `  fullpipe fleet schedules rm 78fe5a59184eedb3d007bf198dd9ad6d --token-file ops.token`,
				new: schedulesRm},
		},
	}
}

func scheduleTable(w io.Writer, ss []fleet.Schedule) {
	var rows [][]string
	for _, s := range ss {
		pairs := selText(s.From) + " -> " + selText(s.To)
		if s.Both {
			pairs = selText(s.From) + " <-> " + selText(s.To)
		}
		rows = append(rows, []string{s.ID, dash(s.Name), s.Test.Kind, pairs, dash(s.Repeat), when(s.NextDue), fmt.Sprint(s.Enabled)})
	}
	tabulate(w, "ID NAME KIND AGENTS REPEAT NEXT-DUE ENABLED", rows)
}

// selText is a selector for a table.
func selText(s fleet.Selector) string {
	var parts []string
	if len(s.Agents) > 0 {
		parts = append(parts, strings.Join(s.Agents, ","))
	}
	if s.Site != "" {
		parts = append(parts, "site="+s.Site)
	}
	for k, v := range s.Labels {
		parts = append(parts, k+"="+v)
	}
	return dash(strings.Join(parts, " "))
}

func schedulesList() command {
	return &leaf{
		do:   func(ctx context.Context, cl *client.Client, _ []string) (any, error) { return cl.Schedules(ctx) },
		text: func(w io.Writer, v any) { scheduleTable(w, v.([]fleet.Schedule)) },
	}
}

func schedulesShow() command {
	return &leaf{nargs: 1,
		do: func(ctx context.Context, cl *client.Client, a []string) (any, error) { return cl.Schedule(ctx, a[0]) },
		text: func(w io.Writer, v any) {
			s := v.(fleet.Schedule)
			scheduleTable(w, []fleet.Schedule{s})
			fmt.Fprintf(w, "config %s; start %s; slip %v; created %s\n", dash(string(s.Test.Config)), when(s.Start), s.Slip, when(s.Created))
			if s.Thresholds != nil {
				th, _ := json.Marshal(s.Thresholds)
				fmt.Fprintf(w, "thresholds %s\n", th)
			}
		},
	}
}

// schedulesEnable pauses (false) or resumes (true) a schedule: the
// schedule as stored, with Enabled changed, put back.
func schedulesEnable(enabled bool) command {
	return &leaf{nargs: 1,
		do: func(ctx context.Context, cl *client.Client, a []string) (any, error) {
			s, err := cl.Schedule(ctx, a[0])
			if err != nil {
				return nil, err
			}
			s.Enabled = enabled
			return cl.UpdateSchedule(ctx, s)
		},
		text: func(w io.Writer, v any) { scheduleTable(w, []fleet.Schedule{v.(fleet.Schedule)}) },
	}
}

func schedulesRm() command {
	return &leaf{nargs: 1,
		do: func(ctx context.Context, cl *client.Client, a []string) (any, error) {
			return map[string]string{"removed": a[0]}, cl.DeleteSchedule(ctx, a[0])
		},
		text: func(w io.Writer, v any) { fmt.Fprintf(w, "removed schedule %s\n", v.(map[string]string)["removed"]) },
	}
}

// selFlags are one side's selector flags (--from, --from-site, --from-label).
type selFlags struct {
	agents, site string
	labels       []string
}

func (s *selFlags) flags(fs *pflag.FlagSet, side, what string) {
	fs.Var(text(&s.agents, "", "NAME[,NAME]"), side, what+" by name")
	fs.Var(text(&s.site, "", "SITE"), side+"-site", what+": every agent of a site")
	fs.Var(texts(&s.labels, "KEY=VALUE"), side+"-label", what+": agents with this label KEY=VALUE (repeat: all must match)")
}

func (s *selFlags) selector(side string) (fleet.Selector, error) {
	sel := fleet.Selector{Site: s.site}
	if s.agents != "" {
		sel.Agents = strings.Split(s.agents, ",")
	}
	for _, l := range s.labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return sel, usagef("--%s-label %q: want KEY=VALUE", side, l)
		}
		if sel.Labels == nil {
			sel.Labels = map[string]string{}
		}
		sel.Labels[k] = v
	}
	if len(sel.Agents) == 0 && sel.Site == "" && len(sel.Labels) == 0 {
		return sel, usagef("say which agents: --%s NAME, --%s-site SITE or --%s-label KEY=VALUE", side, side, side)
	}
	return sel, nil
}

// thFlags are a schedule's thresholds flags.
type thFlags struct {
	th                  fleet.Thresholds
	maxRTT, maxLoadedRT time.Duration
	minBps              int64
}

func (f *thFlags) flags(fs *pflag.FlagSet) {
	fs.Var(pct(&f.th.MinThroughputPct, 0), "min-throughput-pct", "alert when goodput is below this % of the ideal rate (RFC 6349's)")
	fs.Var(rate(&f.minBps, 0), "min-throughput", "alert when goodput is below this (e.g. 90M)")
	fs.Var(dur(&f.maxRTT, 0), "max-rtt", "alert when the idle (minimum or baseline) RTT is above this")
	fs.Var(dur(&f.maxLoadedRT, 0), "max-loaded-rtt", "alert when the RTT under load is above this")
	fs.Var(pct(&f.th.MaxLossPct, 0), "max-loss", "alert when loss is above this %")
	fs.Var(pct(&f.th.MaxBufferDelayPct, 0), "max-buffer-delay", "alert when RFC 6349's buffer delay is above this %")
	fs.BoolVar(&f.th.FailVerdict, "fail-verdict", false, "alert on a fail verdict")
}

// thFlag is the flag of each threshold, by its JSON path.
var thFlag = map[string]string{"thresholds.min_throughput_pct": "min-throughput-pct", "thresholds.min_throughput_bps": "min-throughput",
	"thresholds.max_rtt_ms": "max-rtt", "thresholds.max_rtt_loaded_ms": "max-loaded-rtt", "thresholds.max_loss_pct": "max-loss",
	"thresholds.max_buffer_delay_pct": "max-buffer-delay"}

// thresholds are the flags' thresholds, nil when none is set.
func (f *thFlags) thresholds() (*fleet.Thresholds, error) {
	th := f.th
	th.MinThroughputBps = float64(f.minBps)
	th.MaxRTTMs = float64(f.maxRTT) / float64(time.Millisecond)
	th.MaxRTTLoadedMs = float64(f.maxLoadedRT) / float64(time.Millisecond)
	if th == (fleet.Thresholds{}) {
		return nil, nil
	}
	if err := th.Check(); err != nil {
		var fe *fleet.FieldError
		if errors.As(err, &fe) && thFlag[fe.Field] != "" {
			return nil, usagef("--%s: %s (%s)", thFlag[fe.Field], fe.Msg, fe.Field)
		}
		return nil, usagef("thresholds: %v", err)
	}
	return &th, nil
}

type schedAdd struct {
	s               fleet.Schedule
	config, cfgFile string
	start           string
	from, to        selFlags
	th              thFlags
}

func schedulesAdd() command {
	var a schedAdd
	return &leaf{
		extra: a.flags,
		check: func([]string) error { return a.check() },
		do: func(ctx context.Context, cl *client.Client, _ []string) (any, error) {
			a.s.Start, _ = parseTime(a.start, time.Now())
			return cl.CreateSchedule(ctx, a.s)
		},
		text: func(w io.Writer, v any) { scheduleTable(w, []fleet.Schedule{v.(fleet.Schedule)}) },
	}
}

func (a *schedAdd) flags(fs *pflag.FlagSet) {
	fs.Var(text(&a.s.Name, "", "TEXT"), "name", "a name for lists and the web page")
	fs.Var(oneOf(&a.s.Test.Kind, "", kinds.Names()...), "kind", "the test or method to run")
	fs.Var(text(&a.config, "", "JSON"), "config", `its config as JSON, the result document's "config" keys (e.g. {"duration_ns":10000000000}); default: the kind's defaults`)
	fs.Var(text(&a.cfgFile, "", "FILE"), "config-file", "read the config from a JSON file")
	a.from.flags(fs, "from", "sources (testers)")
	a.to.flags(fs, "to", "destinations (responders)")
	fs.BoolVar(&a.s.Both, "both", false, "also every destination to every source")
	fs.Var(text(&a.s.Repeat, "", "SPEC"), "repeat", `"" once; ISO 8601 R/PT1H, R5/2026-11-24T10:00:00Z/PT15M; or cron "*/15 * * * *" (UTC)`)
	fs.Var(text(&a.start, "now", "TIME"), "start", "not before: RFC 3339, now, or +DURATION")
	fs.Var(dur(&a.s.Slip, 0), "slip", "start each run up to this much later, at random (spreads a mesh's load)")
	a.th.flags(fs)
}

func (a *schedAdd) check() error {
	if a.s.Test.Kind == "" {
		return usagef("--kind: want one of %s", strings.Join(kinds.Names(), ", "))
	}
	if a.cfgFile != "" {
		b, err := os.ReadFile(a.cfgFile)
		if err != nil {
			return usagef("--config-file: %v", err)
		}
		a.config = string(b)
	}
	if a.config != "" {
		a.s.Test.Config = json.RawMessage(a.config)
	}
	if _, err := kinds.Decode(a.s.Test); err != nil {
		return usagef("%v", err)
	}
	var err error
	if a.s.From, err = a.from.selector("from"); err != nil {
		return err
	}
	if a.s.To, err = a.to.selector("to"); err != nil {
		return err
	}
	if a.s.Thresholds, err = a.th.thresholds(); err != nil {
		return err
	}
	a.s.Enabled = true
	return checkTimes(a.start)
}
