// Package kinds is the one table of test kinds: every kind of test the
// tool runs (tcp, udp, rtt, mtu, trains, rfc6349, the two sweeps, ping,
// stamp, rfc2544, y1564) is a row, and what a kind is made of (its
// config and document, how it runs over method.Network, what it costs a
// schedule, how it reads as text and HTML, its headline figures) is
// reached through its row. It sits above method, report, schedule and
// fleet, which each hold one column and need not list the kinds
// themselves.
//
// This first cut holds the rows as the result package lists them and
// the test that walks every row end to end (TestEveryKind); the columns
// move here from the packages' own switches one at a time
// (docs/architecture.md).
package kinds

import (
	"reflect"

	"github.com/fullpipe/fullpipe/internal/result"
)

// Kind is one row: the kind's document (Test, its Meta.Test; File, its
// name in a schedule, its schema's and test data's file; New).
type Kind struct {
	result.Kind
}

// All is every kind, in the order the tool lists them.
func All() []Kind {
	var ks []Kind
	for _, k := range result.Kinds() {
		ks = append(ks, Kind{k})
	}
	return ks
}

// Named is the kind a schedule or a file calls name ("sweep-window").
func Named(name string) (Kind, bool) {
	for _, k := range All() {
		if k.File == name {
			return k, true
		}
	}
	return Kind{}, false
}

// Of is the kind of document d.
func Of(d result.Doc) (Kind, bool) {
	t := reflect.TypeOf(d)
	for _, k := range All() {
		if reflect.TypeOf(k.New()) == t {
			return k, true
		}
	}
	return Kind{}, false
}
