package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/flow"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// clientFlags are the flags every client command shares.
type clientFlags struct {
	v4, v6     bool
	bind       string
	secretFile string
	tls        bool
	tlsPin     string
	json       bool
}

func (c *clientFlags) add(fs *pflag.FlagSet) {
	fs.BoolVarP(&c.v4, "ipv4", "4", false, "use IPv4 only")
	fs.BoolVarP(&c.v6, "ipv6", "6", false, "use IPv6 only")
	fs.StringVar(&c.bind, "bind", "", "local address to send from")
	fs.StringVar(&c.secretFile, "secret-file", "", "file whose first line is the responder's shared secret (the responder must prove it too)")
	fs.BoolVar(&c.tls, "tls", false, "control connection over TLS (a responder with --tls-cert); certificate checked against the system's roots unless --tls-pin")
	fs.StringVar(&c.tlsPin, "tls-pin", "", "accept only the responder certificate with this fingerprint, sha256:HEX (implies --tls)")
	fs.BoolVar(&c.json, "json", false, "print one JSON document (schema in docs/json.md) instead of the live view")
}

const hostUsage = "HOST[:PORT]"

// target resolves the positional HOST[:PORT] and the shared flags.
func (c *clientFlags) target(args []string) (tester.Target, error) {
	if len(args) != 1 {
		if len(args) == 0 {
			return tester.Target{}, usagef("missing %s of a `fullpipe serve` responder (default port %d)", hostUsage, wire.DefaultPort)
		}
		return tester.Target{}, usagef("want one %s, got %d arguments", hostUsage, len(args))
	}
	if c.v4 && c.v6 {
		return tester.Target{}, usagef("-4 and -6 exclude each other")
	}
	t := tester.Target{Addr: args[0], Bind: c.bind}
	switch {
	case c.v4:
		t.Family = "4"
	case c.v6:
		t.Family = "6"
	}
	s, err := readSecret(c.secretFile)
	if err != nil {
		return t, err
	}
	t.Secret = s
	if c.tlsPin != "" {
		if t.TLSPin, err = wire.ParsePin(c.tlsPin); err != nil {
			return t, usagef("--tls-pin: %v", err)
		}
	}
	t.TLS = c.tls || t.TLSPin != nil
	return t, nil
}

// withCommand records the command line in a result's meta.
func withCommand(m *result.Meta, e env) { m.Command = e.args }

// finish prints res as JSON when asked, and maps the test's error to an
// exit: a partial result is printed, then reported as a failure.
func finish(e env, asJSON bool, res any, have bool, err error, text func(io.Writer)) error {
	if have {
		if asJSON {
			enc := json.NewEncoder(e.stdout)
			enc.SetIndent("", "  ")
			if jerr := enc.Encode(res); jerr != nil {
				return jerr
			}
		} else {
			text(e.stdout)
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
