package cli

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/flow"
	"github.com/fullpipe/fullpipe/internal/kinds"
	"github.com/fullpipe/fullpipe/internal/method"
	"github.com/fullpipe/fullpipe/internal/report"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// clientArgs are the flags every client command shares, and the target
// they resolve to. The target is a positional HOST[:PORT] or, as in
// iperf3, -c HOST with -p PORT.
type clientArgs struct {
	host       string // -c
	port       int    // -p
	v4, v6     bool
	bind       string
	secretFile string
	tls        bool
	tlsPin     string
	json       bool
	report     string // --report FILE: the HTML page

	target tester.Target // set by resolve
}

func (c *clientArgs) flags(fs *pflag.FlagSet) {
	fs.VarP(text(&c.host, "", "HOST"), "client", "c", "the responder to test, as iperf3's -c (or give HOST[:PORT] as the argument)")
	fs.VarP(num(&c.port, 0, "PORT"), "port", "p", fmt.Sprintf("the responder's port (default %d)", wire.DefaultPort))
	fs.BoolVarP(&c.v4, "ipv4", "4", false, "use IPv4 only")
	fs.BoolVarP(&c.v6, "ipv6", "6", false, "use IPv6 only")
	fs.VarP(text(&c.bind, "", "ADDR"), "bind", "B", "local address to send from")
	fs.Var(text(&c.secretFile, "", "FILE"), "secret-file", "file whose first line is the responder's shared secret (the responder must prove it too)")
	fs.BoolVar(&c.tls, "tls", false, "control connection over TLS (a responder with --tls-cert); certificate checked against the system's roots unless --tls-pin")
	fs.Var(text(&c.tlsPin, "", "sha256:HEX"), "tls-pin", "accept only the responder certificate with this fingerprint (implies --tls)")
	fs.Var(text(&c.report, "", "FILE"), "report", "also write the result as one self-contained HTML page, with charts, to this file")
	fs.BoolVarP(&c.json, "json", "J", false, "print one JSON document (schema in docs/json.md) instead of the live view")
}

const hostUsage = "HOST[:PORT]"

// resolve sets c.target from the positional HOST[:PORT] or -c HOST, -p
// PORT and the shared flags.
func (c *clientArgs) resolve(in input) error {
	addr, err := c.address(in)
	if err != nil {
		return err
	}
	if c.v4 && c.v6 {
		return usagef("-4 and -6 exclude each other")
	}
	t := tester.Target{Addr: addr, Bind: c.bind}
	switch {
	case c.v4:
		t.Family = "4"
	case c.v6:
		t.Family = "6"
	}
	if t.Secret, err = readSecret(c.secretFile); err != nil {
		return err
	}
	if c.tlsPin != "" {
		if t.TLSPin, err = wire.ParsePin(c.tlsPin); err != nil {
			return usagef("--tls-pin: %v", err)
		}
	}
	t.TLS = c.tls || t.TLSPin != nil
	c.target = t
	return nil
}

// address is HOST[:PORT] from the argument or -c, with -p's port.
func (c *clientArgs) address(in input) (string, error) {
	host := c.host
	if _, err := strconv.Atoi(host); err == nil && in.changed("client") {
		return "", usagef("-c %s is not a host: -c names the responder, as in iperf3 (rtt's probe count is -n)", host)
	}
	switch {
	case len(in.args) > 1:
		return "", usagef("want one %s, got %d arguments", hostUsage, len(in.args))
	case len(in.args) == 1 && in.changed("client"):
		return "", usagef("give the target once: %s or -c HOST, not both", hostUsage)
	case len(in.args) == 1:
		host = in.args[0]
	case !in.changed("client"):
		return "", usagef("missing %s of a `fullpipe serve` responder (default port %d), or -c HOST", hostUsage, wire.DefaultPort)
	}
	if host == "" {
		return "", usagef("the target host is empty")
	}
	if !in.changed("port") {
		return host, nil
	}
	if c.port < 1 || c.port > 65535 {
		return "", usagef("--port %d: want 1..65535", c.port)
	}
	if _, _, err := net.SplitHostPort(host); err == nil {
		return "", usagef("%s names a port already: drop -p or the :PORT", host)
	}
	return net.JoinHostPort(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), strconv.Itoa(c.port)), nil
}

// printStep prints the progress the step-by-step methods (rfc6349,
// rfc2544, y1564) share: each step's title after a blank line, each
// finished line indented. It says whether it printed ev.
func printStep(w io.Writer, ev method.Event) bool {
	switch ev.Kind {
	case method.Started:
		fmt.Fprintf(w, "\n%s\n", ev.Text)
	case method.Line:
		fmt.Fprintf(w, "  %s\n", ev.Text)
	default:
		return false
	}
	return true
}

// withCommand records the command line in a result's meta.
func withCommand(m *result.Meta, e env) { m.Command = e.args }

// finish renders res (have: the test returned one, complete or partial)
// and maps the test's error to an exit: a partial result is printed, then
// reported as a failure.
func finish(e env, c *clientArgs, res result.Doc, have bool, err error) error {
	if have {
		if oerr := c.output(e, res); oerr != nil {
			return oerr
		}
	}
	if err == nil {
		return nil
	}
	if errors.Is(err, result.ErrPartial) {
		return exitError{ExitFailed, err}
	}
	return exitError{ExitRefused, err}
}

// output prints d on stdout, as text or with --json as JSON, and with
// --report writes its HTML page.
func (c *clientArgs) output(e env, d result.Doc) error {
	if e.lab != nil {
		e.lab.stamp(d.Head(), baselineRTT(d))
	}
	render := kinds.Text
	if c.json {
		render = func(w io.Writer, d result.Doc) error { return report.JSON(w, d) }
	}
	if err := render(e.stdout, d); err != nil {
		return err
	}
	if c.report == "" {
		return nil
	}
	page, err := kinds.HTML(d)
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.report, page, 0o644); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	return nil
}

func defaultCC() string {
	if cc := flow.DefaultCC(); cc != "" {
		return cc
	}
	return "unknown"
}

// progressf writes a transient status line to stderr (not with --json).
func progressf(e env, quiet bool, format string, a ...any) {
	if !quiet {
		fmt.Fprintf(e.stderr, format+"\n", a...)
	}
}

func checkInterval(d time.Duration) error {
	if d < 100*time.Millisecond {
		return usagef("--interval %v is below the 100ms minimum", d)
	}
	return nil
}
