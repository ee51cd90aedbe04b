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

	"github.com/fullpipe/fullpipe/internal/fleet/client"
)

// Environment variables the fleet commands read when their flags are
// not given.
const (
	envController = "FULLPIPE_CONTROLLER" // --controller
	envToken      = "FULLPIPE_TOKEN"      // the token itself (--token-file names a file)
	envPin        = "FULLPIPE_PIN"        // --pin
)

// connArgs are how a fleet command (or an agent) reaches its controller.
type connArgs struct {
	url, token, tokenFile, pin, caFile string
	timeout                            time.Duration
	json                               bool
}

func (c *connArgs) flags(fs *pflag.FlagSet, withJSON bool) {
	fs.Var(text(&c.url, os.Getenv(envController), "URL"), "controller", "the controller, https://HOST:PORT (env "+envController+")")
	fs.Var(text(&c.tokenFile, "", "FILE"), "token-file", "a file whose first line is the token (env "+envToken+" holds the token itself)")
	fs.Var(text(&c.token, "", "TOKEN"), "token", "the token itself (visible to other users in ps: prefer --token-file)")
	fs.Var(text(&c.pin, os.Getenv(envPin), "SHA-256"), "pin", "the controller certificate's SHA-256 fingerprint, as it logs it (env "+envPin+")")
	fs.Var(text(&c.caFile, "", "FILE"), "ca-file", "PEM roots to trust for the controller's certificate instead of the system's")
	fs.Var(dur(&c.timeout, 30*time.Second), "timeout", "bound on each call to the controller")
	if withJSON {
		fs.BoolVarP(&c.json, "json", "J", false, "print JSON instead of text")
	}
}

// resolve fills the token from its file or the environment and checks
// that the controller and a token are named.
func (c *connArgs) resolve() error {
	if c.url == "" {
		return usagef("name the controller: --controller https://HOST:PORT (or set %s)", envController)
	}
	if !strings.HasPrefix(c.url, "https://") {
		return usagef("--controller %q: want https://HOST:PORT (every connection to a controller is TLS)", c.url)
	}
	switch {
	case c.token != "" && c.tokenFile != "":
		return usagef("--token and --token-file: give one")
	case c.tokenFile != "":
		b, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return usagef("--token-file: %v", err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		c.token = strings.TrimSpace(line)
		if c.token == "" {
			return usagef("--token-file %s is empty", c.tokenFile)
		}
	case c.token == "":
		c.token = os.Getenv(envToken)
	}
	if c.token == "" {
		return usagef("give a token: --token-file FILE (the controller wrote the first admin token to its state directory's admin.token), or set %s", envToken)
	}
	return nil
}

// dial is a client of the controller.
func (c *connArgs) dial() (*client.Client, error) {
	cl, err := client.New(c.url, c.token, client.Options{Pin: c.pin, CAFile: c.caFile, Timeout: c.timeout})
	if err != nil {
		return nil, usagef("%v", err)
	}
	return cl, nil
}

// call runs one API call and turns its failure into the exit code: 3 for
// a controller that could not be reached or refused, as a responder's.
func call(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) {
		return exitError{ExitFailed, err}
	}
	return exitError{ExitRefused, err}
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// when is a time for a table: UTC to the second, "-" for none.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// parseTime reads --start/--from/--to: RFC 3339, or "now", or now plus
// or minus a duration ("+10m", "-1h").
func parseTime(s string, now time.Time) (time.Time, error) {
	switch {
	case s == "" || s == "now":
		return now, nil
	case strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-"):
		d, err := time.ParseDuration(s[1:])
		if err != nil {
			return time.Time{}, fmt.Errorf("%q: want RFC 3339 (2026-11-24T10:00:00Z), now, or +DURATION/-DURATION", s)
		}
		if s[0] == '-' {
			d = -d
		}
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: want RFC 3339 (2026-11-24T10:00:00Z), now, or +DURATION/-DURATION", s)
	}
	return t, nil
}
