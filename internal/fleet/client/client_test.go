package client

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// TestErrorIs: API errors match the fleet's by status.
func TestErrorIs(t *testing.T) {
	cases := []struct {
		status int
		target error
		want   bool
	}{
		{http.StatusConflict, fleet.ErrConflict, true},
		{http.StatusConflict, fleet.ErrExists, true},
		{http.StatusNotFound, fleet.ErrNotFound, true},
		{http.StatusUnauthorized, fleet.ErrUnauthorized, true},
		{http.StatusForbidden, fleet.ErrUnauthorized, false},
		{http.StatusBadRequest, fleet.ErrConflict, false},
	}
	for _, c := range cases {
		var err error = &Error{Status: c.status, Message: "x"}
		if got := errors.Is(err, c.target); got != c.want {
			t.Errorf("errors.Is(%d, %v) = %v, want %v", c.status, c.target, got, c.want)
		}
	}
}

// TestNew: what New refuses.
func TestNew(t *testing.T) {
	for _, c := range []struct {
		url string
		o   Options
	}{
		{"http://controller:8443", Options{}},
		{"ftp://controller", Options{}},
		{"https://controller", Options{Pin: "abc"}},
		{"https://controller", Options{CAFile: "/nonexistent"}},
	} {
		if _, err := New(c.url, "t", c.o); err == nil {
			t.Errorf("New(%q, %+v) accepted", c.url, c.o)
		}
	}
	if _, err := New("https://controller:8443/", "t", Options{Pin: "AB:CD:" + strings.Repeat("0", 60)}); err != nil {
		t.Errorf("a pin with colons and capitals: %v", err)
	}
}
