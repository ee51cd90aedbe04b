package web

import (
	"fmt"
	"net/url"
	"slices"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

func urlq(s string) string { return url.QueryEscape(s) }

// notFound says what was not found, as the store would.
func notFound(what string) error { return fmt.Errorf("%s: %w", what, fleet.ErrNotFound) }

func sortStrings(s []string) []string { slices.Sort(s); return s }
