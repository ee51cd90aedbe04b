package cli

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/units"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// rateFlag is a pflag.Value in bits per second (units.ParseRate).
type rateFlag struct{ v *int64 }

func (f rateFlag) String() string {
	if *f.v == 0 {
		return "0"
	}
	return strings.ReplaceAll(units.FormatRate(float64(*f.v)), " ", "")
}
func (f rateFlag) Set(s string) (err error) { *f.v, err = units.ParseRate(s); return err }
func (f rateFlag) Type() string             { return "bit/s" }

// sizeFlag is a pflag.Value in bytes (units.ParseSize).
type sizeFlag struct{ v *int64 }

func (f sizeFlag) String() string           { return fmt.Sprint(*f.v) }
func (f sizeFlag) Set(s string) (err error) { *f.v, err = units.ParseSize(s); return err }
func (f sizeFlag) Type() string             { return "bytes" }

// durFlag is a pflag.Value duration that rejects bare numbers and
// negatives (units.ParseDuration).
type durFlag struct{ v *time.Duration }

func (f durFlag) String() string           { return f.v.String() }
func (f durFlag) Set(s string) (err error) { *f.v, err = units.ParseDuration(s); return err }
func (f durFlag) Type() string             { return "duration" }

func rateVar(fs *pflag.FlagSet, p *int64, name, short string, def int64, usage string) {
	*p = def
	fs.VarP(rateFlag{p}, name, short, usage)
}

func sizeVar(fs *pflag.FlagSet, p *int64, name, short string, def int64, usage string) {
	*p = def
	fs.VarP(sizeFlag{p}, name, short, usage)
}

func durVar(fs *pflag.FlagSet, p *time.Duration, name, short string, def time.Duration, usage string) {
	*p = def
	fs.VarP(durFlag{p}, name, short, usage)
}

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
