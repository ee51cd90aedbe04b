package tester

import "fmt"

// checked is cfg with its defaults, or why it cannot run; what every Run
// function starts with, before any connection.
func checked[C interface {
	WithDefaults() C
	Validate() error
}](kind string, cfg C) (C, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("%s test: %w", kind, err)
	}
	return cfg, nil
}
