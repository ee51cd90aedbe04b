package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/serve"
	"github.com/fullpipe/fullpipe/internal/testkit"
)

// bin is the fullpipe binary TestMain builds, run as a second process by
// the tests that check exit codes.
var bin string

func TestMain(m *testing.M) { testkit.MainWithBinary(m, &bin) }

// runBin runs the binary with args and returns its exit code and output.
func runBin(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("fullpipe %v still running after 20 s", args)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errb.String()
	} else if err != nil {
		t.Fatalf("fullpipe %v: %v", args, err)
	}
	return 0, out.String(), errb.String()
}

// walk calls f for every command a user can run or ask help of, the root
// included, with its path (["sweep", "window"]).
func walk(c *cobra.Command, path []string, f func(c *cobra.Command, path []string)) {
	f(c, path)
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() || s.Name() == "help" {
			walk(s, append(append([]string{}, path...), s.Name()), f)
		}
	}
}

func tree() *cobra.Command {
	return newRoot(&env{ctx: context.Background(), stdout: io.Discard, stderr: io.Discard})
}

// goTypes are pflag's names of Go types: a flag showing one of them in
// the help says nothing of its unit.
var goTypes = map[string]bool{"int": true, "int64": true, "uint": true, "uint64": true, "float64": true,
	"string": true, "stringSlice": true, "strings": true, "durationSlice": true, "": true}

// TestCommandTable walks every command: its help has examples of itself
// and shows each flag's unit, bools without "[=true|false]"; every flag
// is one of our unit-carrying values (values.go) or a bool.
func TestCommandTable(t *testing.T) {
	n := 0
	walk(tree(), nil, func(c *cobra.Command, path []string) {
		n++
		name := strings.Join(append([]string{"fullpipe"}, path...), " ")
		code, out, errs := run(t, context.Background(), append(path, "--help")...)
		if code != 0 || errs != "" {
			t.Errorf("%s --help: exit %d, stderr %q", name, code, errs)
		}
		_, examples, ok := strings.Cut(out, "\nExamples:\n")
		if !ok {
			t.Errorf("%s --help has no Examples section", name)
		}
		examples, _, _ = strings.Cut(examples, "\n\n")
		if !regexp.MustCompile(regexp.QuoteMeta(name) + `(\s|$)`).MatchString(examples) {
			t.Errorf("%s --help: no example runs %q:\n%s", name, name, examples)
		}
		if strings.Contains(out, "[=") || strings.Contains(out, "true|false") {
			t.Errorf("%s --help shows a bool's value syntax:\n%s", name, out)
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) { checkFlag(t, name, f, out) })
	})
	if n < 20 {
		t.Errorf("walked %d commands; the table has more", n)
	}
}

// checkFlag checks one flag's value type and its line in the help.
func checkFlag(t *testing.T, cmd string, f *pflag.Flag, help string) {
	t.Helper()
	if f.Hidden {
		return
	}
	_, flags, _ := strings.Cut(help, "\nFlags:\n")
	flags, _, _ = strings.Cut(flags, "\n\n")
	line := ""
	for _, l := range strings.Split(flags, "\n") {
		if head := regexp.MustCompile(`^\s+(-\S, )?--` + regexp.QuoteMeta(f.Name) + `( |$)`); head.MatchString(l) {
			line = l
			break
		}
	}
	if line == "" {
		t.Errorf("%s --help does not list --%s", cmd, f.Name)
		return
	}
	var unit string
	switch v := f.Value.(type) {
	case rateValue:
		unit = "bit/s"
	case sizeValue:
		unit = "bytes"
	case durValue:
		unit = "duration"
	case intValue, seedValue, pctValue, textValue, listValue:
		unit = v.Type()
	default:
		if f.Value.Type() != "bool" {
			t.Errorf("%s --%s is a pflag %s: register it with a value that names its unit (values.go)", cmd, f.Name, f.Value.Type())
			return
		}
		if head, _, _ := strings.Cut(strings.TrimSpace(line), "   "); !strings.HasSuffix(head, "--"+f.Name) {
			t.Errorf("%s --%s is a bool but its help shows a value: %q", cmd, f.Name, line)
		}
		return
	}
	if goTypes[unit] || unit != f.Value.Type() || !strings.Contains(line, "--"+f.Name+" "+unit+" ") {
		t.Errorf("%s --%s: help line %q does not show its unit %q", cmd, f.Name, line, unit)
	}
}

// outOfRange are values each command refuses after parsing them: one
// per command with a number among its flags, at least.
var outOfRange = map[string][][]string{
	"serve":                  {{"--max-sessions", "0"}, {"-p", "70000"}, {"--log-format", "xml"}},
	"tcp":                    {{"127.0.0.1", "-P", "0"}, {"127.0.0.1", "--dscp", "64"}, {"-c", "127.0.0.1", "-p", "0"}, {"127.0.0.1", "-t", "0"}},
	"udp":                    {{"127.0.0.1", "--size", "10"}, {"127.0.0.1", "--rate", "0"}},
	"rtt":                    {{"127.0.0.1", "-n", "0"}, {"127.0.0.1", "-n", "10000", "-i", "1"}},
	"stamp":                  {{"127.0.0.1", "-n", "0"}, {"127.0.0.1", "--size", "43"}, {"127.0.0.1:70000"}, {"127.0.0.1", "--key-file", "/nonexistent"}, {"127.0.0.1", "--timestamps", "gps"}},
	"reflector":              {{"--rate", "0"}, {"--timestamps", "gps"}, {"--max-senders", "0"}, {"--refuse-ports", "1-2-3"}, {"--global-rate", "0"}, {"--key-file", "/nonexistent"}},
	"mtu":                    {{"127.0.0.1", "--min", "10"}, {"127.0.0.1", "--tries", "0"}},
	"rfc6349":                {{"127.0.0.1", "--cir", "100M", "--sweep", "65"}, {"127.0.0.1", "--cir", "0"}, {"127.0.0.1", "--cir", "1M", "-t", "0.5"}},
	"sweep window":           {{"127.0.0.1", "--baseline-probes", "1"}, {"127.0.0.1", "-t", "61"}},
	"sweep msglen":           {{"127.0.0.1", "--udp-rate", "0"}, {"127.0.0.1", "--sizes", "0"}},
	"trains":                 {{"127.0.0.1", "--rate", "10M", "--rtt", "20ms", "--mtu", "100"}, {"127.0.0.1", "--rate", "10M", "--rtt", "11"}},
	"ping":                   {{"127.0.0.1", "-n", "0"}, {"127.0.0.1", "-s", "8"}, {"127.0.0.1", "--rate-search", "--max-rate", "30000"}, {"127.0.0.1", "--rate-search", "--loss-ratio", "0"}},
	"unreach":                {{"127.0.0.1", "--port", "0"}, {"127.0.0.1", "-i", "10us"}},
	"rfc2544":                {{"127.0.0.1", "--rate", "0"}, {"127.0.0.1", "--rate", "10M", "--sizes", "32"}, {"127.0.0.1", "--rate", "10M", "--trial", "10ms"}, {"127.0.0.1", "--rate", "10M", "--tests", "latency"}},
	"y1564":                  {{"127.0.0.1"}, {"127.0.0.1", "--service", "name=a,cir=0"}, {"127.0.0.1", "--service", "name=a,cir=1M,frame=40"}, {"127.0.0.1", "--service", "name=a,cir=1M", "--steps", "150"}, {"127.0.0.1", "--service", "name=a,cir=1M,color=red"}},
	"lab up":                 {{"--loss", "2"}, {"--profile", "nosuch"}, {"--rate", "fast"}, {"--up-rtt", "soon"}},
	"lab exec":               {{"router", "--", "true"}},
	"demo":                   {{"-t", "0"}},
	"completion":             {{"tcsh"}},
	"version":                nil,
	"controller":             {{"--heartbeat", "0.5"}, {"--tls-cert", "x.pem"}, {"--log-format", "xml"}},
	"agent":                  {{}, {"--controller", "http://127.0.0.1:1", "--token", "x"}, {"--controller", "https://127.0.0.1:1", "--token", "x", "--label", "novalue"}, {"--controller", "https://127.0.0.1:1", "--token", "x", "--token-file", "f"}},
	"fleet":                  {{}, {"sideways"}},
	"fleet agents":           {{}, {"sideways"}},
	"fleet agents list":      {{"--controller", "https://127.0.0.1:1"}, {"--controller", "ftp://x", "--token", "x"}},
	"fleet agents show":      {{"x"}},
	"fleet agents enrol":     {{"x", "--controller", "https://127.0.0.1:1"}},
	"fleet agents revoke":    {{"x"}},
	"fleet agents approve":   {{"x"}},
	"fleet agents busy":      {{"x", "--from", "yesterday"}, {"x", "--to", "+soon"}},
	"fleet tokens":           {{}, {"sideways"}},
	"fleet tokens list":      {{"--token-file", "/nonexistent"}},
	"fleet tokens issue":     {{"agent"}, {"root"}},
	"fleet tokens revoke":    {{"x"}},
	"fleet schedules":        {{}, {"sideways"}},
	"fleet schedules list":   {{"--timeout", "bogus!"}},
	"fleet schedules show":   {{"x"}},
	"fleet schedules add":    {{"--kind", "ftp"}, {"--kind", "tcp", "--from", "a"}, {"--kind", "tcp", "--from", "a", "--to", "b", "--config", "{\"duration_ns\":-1}"}, {"--kind", "tcp", "--from", "a", "--to", "b", "--config", "{\"duraton_ns\":1}"}, {"--kind", "rtt", "--from", "a", "--to", "b", "--start", "tomorrow"}, {"--kind", "rtt", "--from-label", "novalue", "--to", "b"}, {"--kind", "rtt", "--from", "a", "--to", "b", "--max-loss", "150"}, {"--kind", "rtt", "--from", "a", "--to", "b", "--min-throughput-pct", "-5"}},
	"fleet schedules pause":  {{"x"}},
	"fleet schedules resume": {{"x"}},
	"fleet schedules rm":     {{"x"}},
	"fleet runs":             {{}, {"sideways"}},
	"fleet runs list":        {{"--state", "done"}, {"--from", "yesterday"}},
	"fleet runs show":        {{"x"}},
	"fleet runs cancel":      {{"x"}},
	"fleet runs events":      {{"x"}},
	"fleet results":          {{}, {"sideways"}},
	"fleet results list":     {{"--since", "last week"}},
	"fleet results show":     {{"x"}},

	"help":         {{"nosuch"}},
	"lab down":     nil,
	"lab stats":    nil,
	"lab profiles": nil,
	"sweep":        {{}, {"depth", "127.0.0.1"}},
	"lab":          {{}, {"sideways"}},
	"":             {{"nosuch"}, {"tpc", "127.0.0.1", "-t", "10"}, {"--nosuch"}},
}

// argFor is an argument that satisfies a command, so that only the input
// under test is wrong.
var argFor = map[argShape][]string{argTarget: {"127.0.0.1"}, argOptTarget: {"127.0.0.1"}, argOne: {"bash"}, argCommand: {"client", "true"}}

// TestBadInput runs the binary with bad input for every command: an
// unknown flag, a value each flag cannot parse, a missing or an extra
// argument, and out-of-range values. Each must exit 2 with exactly one
// line on stderr, naming the command, and nothing on stdout.
func TestBadInput(t *testing.T) {
	seen := map[string]bool{}
	walk(tree(), nil, func(c *cobra.Command, path []string) {
		key := strings.Join(path, " ")
		seen[key] = true
		cases, ok := outOfRange[key]
		if !ok {
			t.Errorf("fullpipe %s: no out-of-range cases in outOfRange (nil if it has nothing to range)", key)
		}
		var bad [][]string
		for _, cs := range cases {
			bad = append(bad, append(append([]string{}, path...), cs...))
		}
		shape := argShape(0)
		if s, ok := c.Annotations[argsKey]; ok {
			n, _ := strconv.Atoi(s)
			shape = argShape(n)
		}
		bad = append(bad, append(append([]string{}, path...), "--no-such-flag"))
		if shape.required() {
			bad = append(bad, path)
		}
		if max := shape.maxArgs(); max >= 0 && c.HasParent() && !c.HasSubCommands() {
			extra := append(append(append([]string{}, path...), argFor[shape]...), "extra", "extra")
			bad = append(bad, extra)
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			switch f.Value.(type) {
			case textValue, listValue:
			case rateValue, sizeValue, durValue, intValue, seedValue, pctValue:
				bad = append(bad, append(append([]string{}, path...), "--"+f.Name, "bogus!"))
			default:
				bad = append(bad, append(append([]string{}, path...), "--"+f.Name+"=maybe"))
			}
		})
		for _, args := range bad {
			t.Run(strings.Join(args, "_"), func(t *testing.T) {
				t.Parallel()
				code, out, errs := runBin(t, args...)
				prefix := strings.Join(append([]string{"fullpipe"}, path...), " ") + ": "
				if code != ExitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, prefix) {
					t.Errorf("fullpipe %q: exit %d, stdout %q, stderr %q; want exit 2 and one line %q...", args, code, out, errs, prefix)
				}
			})
		}
	})
	for key := range outOfRange {
		if !seen[key] {
			t.Errorf("outOfRange has %q, which is not a command", key)
		}
	}
}

// TestIperf3Habits: what an iperf3 user types works: -c HOST, -p PORT,
// -t in bare seconds, -J for --json, -C for --cc; a positional target too.
func TestIperf3Habits(t *testing.T) {
	type parsed struct {
		addr string
		dur  time.Duration
		json bool
		cc   string
	}
	tcp := func(args ...string) (parsed, error) {
		a := &tcpArgs{}
		fs := pflag.NewFlagSet("tcp", pflag.ContinueOnError)
		a.flags(fs)
		if err := fs.Parse(args); err != nil {
			return parsed{}, err
		}
		err := a.validate(input{args: fs.Args(), changed: fs.Changed})
		return parsed{a.target.Addr, a.cfg.Duration, a.json, a.cfg.CC}, err
	}
	cases := []struct {
		args []string
		want parsed
	}{
		{[]string{"-c", "127.0.0.1", "-p", "6349", "-t", "10", "-J", "-C", "reno"}, parsed{"127.0.0.1:6349", 10 * time.Second, true, "reno"}},
		{[]string{"198.18.0.2", "-t", "2.5"}, parsed{"198.18.0.2", 2500 * time.Millisecond, false, ""}},
		{[]string{"198.18.0.2:7000", "-t", "1m30s", "--json", "--cc", "cubic"}, parsed{"198.18.0.2:7000", 90 * time.Second, true, "cubic"}},
		{[]string{"-c", "::1", "-p", "7000"}, parsed{"[::1]:7000", 10 * time.Second, false, ""}},
		{[]string{"-c", "[::1]", "-p", "7000"}, parsed{"[::1]:7000", 10 * time.Second, false, ""}},
		{[]string{"198.18.0.2", "-p", "7000"}, parsed{"198.18.0.2:7000", 10 * time.Second, false, ""}},
	}
	for _, c := range cases {
		got, err := tcp(c.args...)
		if err != nil || got != c.want {
			t.Errorf("tcp %q: %+v, %v; want %+v", c.args, got, err, c.want)
		}
	}
	for _, bad := range [][]string{
		{"198.18.0.2:7000", "-p", "7001"},  // two ports
		{"198.18.0.2", "-c", "198.18.0.3"}, // two targets
		{"-c", "20"},                       // ping's -c COUNT
		{"-c", "127.0.0.1", "-p", "65536"},
	} {
		if _, err := tcp(bad...); err == nil {
			t.Errorf("tcp %q accepted", bad)
		}
	}
	// -t is bare seconds for every command that has it.
	for _, c := range []struct {
		cmd  command
		args []string
		dur  func(command) time.Duration
	}{
		{&udpArgs{}, []string{"h", "-t", "10"}, func(c command) time.Duration { return c.(*udpArgs).cfg.Duration }},
		{&windowSweepArgs{}, []string{"h", "-t", "10"}, func(c command) time.Duration { return c.(*windowSweepArgs).cfg.Duration }},
		{&msgLenSweepArgs{}, []string{"h", "-t", "10"}, func(c command) time.Duration { return c.(*msgLenSweepArgs).cfg.Duration }},
		{&rfcArgs{}, []string{"h", "--cir", "1M", "-t", "10"}, func(c command) time.Duration { return c.(*rfcArgs).cfg.Duration }},
		{&demoArgs{}, []string{"-t", "10"}, func(c command) time.Duration { return c.(*demoArgs).dur }},
	} {
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		c.cmd.flags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatalf("%T %q: %v", c.cmd, c.args, err)
		}
		if err := c.cmd.validate(input{args: fs.Args(), changed: fs.Changed}); err != nil || c.dur(c.cmd) != 10*time.Second {
			t.Errorf("%T %q: duration %v, %v; want 10s", c.cmd, c.args, c.dur(c.cmd), err)
		}
	}
	// serve -p PORT listens on that port.
	for args, want := range map[string]string{"-p 7000": ":7000", "-l 127.0.0.1 -p 7000": "127.0.0.1:7000", "": ":6349", "-l 127.0.0.1:7001": "127.0.0.1:7001"} {
		var a serveArgs
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		a.flags(fs)
		if err := fs.Parse(strings.Fields(args)); err != nil {
			t.Fatal(err)
		}
		if cfg, err := a.config(input{args: fs.Args(), changed: fs.Changed}); err != nil || cfg.Listen != want {
			t.Errorf("serve %s: listen %q, %v; want %q", args, cfg.Listen, err, want)
		}
	}
}

// TestIperf3HabitsBinary: `fullpipe tcp -c 127.0.0.1 -p PORT -t 1 -J -C
// reno` against a responder on loopback: one JSON document of a 1 s test
// with reno.
func TestIperf3HabitsBinary(t *testing.T) {
	addr := server(t, serve.Config{AllowCC: []string{"available"}})
	host, port, _ := strings.Cut(addr, ":")
	start := time.Now()
	code, out, errs := runBin(t, "tcp", "-c", host, "-p", port, "-t", "1", "-J", "-C", "reno")
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		Target string `json:"target"`
		Client struct {
			CC string `json:"cc"`
		} `json:"client"`
		Summary struct {
			Bytes int64 `json:"bytes"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not one JSON document: %v\n%s", err, out)
	}
	if doc.Target != addr || doc.Client.CC != "reno" || doc.Summary.Bytes == 0 {
		t.Errorf("target %q cc %q bytes %d; want %s, reno and some bytes", doc.Target, doc.Client.CC, doc.Summary.Bytes, addr)
	}
	if took < time.Second || took > 8*time.Second {
		t.Errorf("-t 1 took %v: not one second of test", took)
	}
}

// TestCompletion: each shell's script comes out, and the hidden
// completion command offers the commands and a flag's choices.
func TestCompletion(t *testing.T) {
	for _, sh := range shells() {
		code, out, errs := runBin(t, "completion", sh)
		if code != 0 || !strings.Contains(out, "fullpipe") || len(out) < 1000 {
			t.Errorf("completion %s: exit %d, %d bytes, stderr %q", sh, code, len(out), errs)
		}
	}
	for args, want := range map[string][]string{
		"__complete t":                            {"tcp", "trains"},
		"__complete sweep ":                       {"window", "msglen"},
		"__complete trains h --direction ":        {"up", "down", "both"},
		"__complete serve --log-format ":          {"text", "json"},
		"__complete tcp --st":                     {"--streams"},
		"__complete lab up --profile ":            {"window"},
		"__completeNoDesc completion ":            {"bash", "zsh", "fish", "powershell"},
		"__complete lab exec ":                    {"client", "server"},
		"__complete sweep window h --direction d": {"down"},
	} {
		fields := strings.Fields(args)
		if strings.HasSuffix(args, " ") {
			fields = append(fields, "")
		}
		code, out, _ := runBin(t, fields...)
		for _, w := range want {
			if code != 0 || !strings.Contains(out, w) {
				t.Errorf("fullpipe %s: exit %d, %q lacks %q", args, code, out, w)
			}
		}
	}
}

// TestCommandsDocumented: docs/cli.md names every command and subcommand,
// and every exit code.
func TestCommandsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	walk(tree(), nil, func(c *cobra.Command, path []string) {
		if len(path) == 0 {
			return
		}
		name := path[len(path)-1]
		if !strings.Contains(string(doc), "`"+strings.Join(path, " ")) && !strings.Contains(string(doc), name+`\|`) && !strings.Contains(string(doc), `\|`+name) {
			t.Errorf("docs/cli.md does not name `%s`", strings.Join(path, " "))
		}
	})
	for _, code := range []int{ExitOK, ExitFailed, ExitUsage, ExitRefused} {
		if !strings.Contains(string(doc), fmt.Sprintf("| %d |", code)) {
			t.Errorf("docs/cli.md's exit table lacks %d", code)
		}
	}
}
