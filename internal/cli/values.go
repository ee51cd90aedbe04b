package cli

// Flag values. Every flag but a bool is one of these, and each names its
// unit as its pflag Type, which the help prints after the flag: bit/s,
// bytes, duration, count, %, a port... (TestCommandTable checks that no
// flag shows a bare Go type such as "int"). Each constructor stores the
// default in *p and returns the pflag.Value to register:
//
//	fs.VarP(rate(&a.pacing, 0), "pacing-rate", "", "cap each stream's rate")

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/units"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// rateValue is a rate in bits per second (units.ParseRate: 50M, 1.5G).
type rateValue struct{ v *int64 }

func rate(p *int64, def int64) pflag.Value { *p = def; return rateValue{p} }

func (f rateValue) String() string {
	if *f.v == 0 {
		return "0"
	}
	return strings.ReplaceAll(units.FormatRate(float64(*f.v)), " ", "")
}
func (f rateValue) Set(s string) (err error) { *f.v, err = units.ParseRate(s); return err }
func (f rateValue) Type() string             { return "bit/s" }

// sizeValue is a size in bytes (units.ParseSize: 1400, 64KiB, 250kB).
type sizeValue struct{ v *int64 }

func size(p *int64, def int64) pflag.Value { *p = def; return sizeValue{p} }

func (f sizeValue) String() string           { return fmt.Sprint(*f.v) }
func (f sizeValue) Set(s string) (err error) { *f.v, err = units.ParseSize(s); return err }
func (f sizeValue) Type() string             { return "bytes" }

// durValue is a duration: a bare number of seconds (10, 2.5) or a Go
// duration (40ms, 1m30s); never negative (units.ParseDuration).
type durValue struct{ v *time.Duration }

func dur(p *time.Duration, def time.Duration) pflag.Value { *p = def; return durValue{p} }

func (f durValue) String() string           { return f.v.String() }
func (f durValue) Set(s string) (err error) { *f.v, err = units.ParseDuration(s); return err }
func (f durValue) Type() string             { return "duration" }

// intValue is a whole number in a unit: a count, bytes, a port, a DSCP.
type intValue struct {
	v    *int
	unit string
}

func count(p *int, def int) pflag.Value { return num(p, def, "count") }

func num(p *int, def int, unit string) pflag.Value { *p = def; return intValue{p, unit} }

func (f intValue) String() string { return strconv.Itoa(*f.v) }
func (f intValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q is not a whole number", s)
	}
	*f.v = n
	return nil
}
func (f intValue) Type() string { return f.unit }

// seedValue is a random seed.
type seedValue struct{ v *uint64 }

func seed(p *uint64, def uint64) pflag.Value { *p = def; return seedValue{p} }

func (f seedValue) String() string { return strconv.FormatUint(*f.v, 10) }
func (f seedValue) Set(s string) error {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return fmt.Errorf("%q: want a whole number 0..2^64-1", s)
	}
	*f.v = n
	return nil
}
func (f seedValue) Type() string { return "seed" }

// pctValue is a percentage.
type pctValue struct{ v *float64 }

func pct(p *float64, def float64) pflag.Value { *p = def; return pctValue{p} }

func (f pctValue) String() string { return strconv.FormatFloat(*f.v, 'g', -1, 64) }
func (f pctValue) Set(s string) error {
	x, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil {
		return fmt.Errorf("%q is not a percentage", s)
	}
	*f.v = x
	return nil
}
func (f pctValue) Type() string { return "%" }

// textValue is a string; meta names what it holds in the help (FILE,
// HOST:PORT) or lists its choices (up|down|both), which shell completion
// offers. Set accepts anything: each command's validate checks it, so the
// message can name the fix.
type textValue struct {
	v       *string
	meta    string
	choices []string
}

func text(p *string, def, meta string) pflag.Value { *p = def; return textValue{v: p, meta: meta} }

// oneOf is a text value with a fixed set of choices.
func oneOf(p *string, def string, choices ...string) pflag.Value {
	*p = def
	return textValue{v: p, meta: strings.Join(choices, "|"), choices: choices}
}

func (f textValue) String() string     { return *f.v }
func (f textValue) Set(s string) error { *f.v = s; return nil }
func (f textValue) Type() string       { return f.meta }

// readSecret reads a shared secret from a file: its first line, trimmed.
func readSecret(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("secret file: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	line = strings.TrimSpace(line)
	if line == "" {
		return nil, fmt.Errorf("secret file %s is empty", path)
	}
	if err := wire.CheckSecret([]byte(line)); err != nil {
		return nil, fmt.Errorf("secret file %s: %w", path, err)
	}
	return []byte(line), nil
}

// listValue is a repeatable text flag: each use adds one (--label a=b
// --label c=d); meta names its form in the help.
type listValue struct {
	v    *[]string
	meta string
}

func texts(p *[]string, meta string) pflag.Value { return listValue{p, meta} }

func (f listValue) String() string     { return strings.Join(*f.v, ",") }
func (f listValue) Set(s string) error { *f.v = append(*f.v, s); return nil }
func (f listValue) Type() string       { return f.meta }
