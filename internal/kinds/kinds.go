// Package kinds is the one table of test kinds: every kind of test the
// tool runs (tcp, udp, rtt, mtu, trains, rfc6349, the two sweeps, ping,
// stamp, rfc2544, y1564) is a row, and what a kind is made of (its
// config and document, how it runs over method.Network, what it costs a
// schedule, how it reads as text and HTML, its headline figures) is
// reached through its row. It sits above method, report, schedule and
// fleet, which each hold one column and need not list the kinds
// themselves.
//
// The table holds each kind's document and config (result's row), its
// text and page (report's Renderer) and its headline figures; the test
// walks every row end to end (TestEveryKind). The other columns (how it
// runs, what it costs) are still the packages' own switches
// (docs/architecture.md).
package kinds

import (
	"io"
	"reflect"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/report"
	"github.com/fullpipe/fullpipe/internal/result"
)

// Kind is one row: the kind's document and config (Test, its
// Meta.Test; File, its name in a schedule, its schema's and test data's
// file; New; Config), its renderers and its headline figures.
type Kind struct {
	result.Kind
	render  report.Renderer                // its text and its page
	figures func(result.Doc) fleet.Figures // nil: none (mtu)
}

// table is every kind, in the order the tool lists them.
var table = []Kind{
	row("tcp", report.RenderTCP, figuresOf(tcpFigures)),
	row("udp", report.RenderUDP, figuresOf(udpFigures)),
	row("rtt", report.RenderRTT, figuresOf(rttFigures)),
	row("mtu", report.RenderMTU, nil),
	row("trains", report.RenderTrains, figuresOf(trainsFigures)),
	row("rfc6349", report.RenderRFC6349, figuresOf(rfc6349Figures)),
	row("sweep-window", report.RenderWindowSweep, figuresOf(windowSweepFigures)),
	row("sweep-msglen", report.RenderMsgLenSweep, figuresOf(msgLenSweepFigures)),
	row("ping", report.RenderPing, figuresOf(pingFigures)),
	row("stamp", report.RenderSTAMP, figuresOf(stampFigures)),
	row("rfc2544", report.RenderRFC2544, figuresOf(rfc2544Figures)),
	row("y1564", report.RenderY1564, figuresOf(y1564Figures)),
}

// row is the kind a schedule calls name, with its columns. A name no
// document has gives a row with no document, which TestEveryKind fails.
func row(name string, render report.Renderer, figures func(result.Doc) fleet.Figures) Kind {
	k, _ := result.KindNamed(name)
	return Kind{Kind: k, render: render, figures: figures}
}

// All is every kind, in the order the tool lists them.
func All() []Kind { return append([]Kind(nil), table...) }

// Named is the kind a schedule or a file calls name ("sweep-window").
func Named(name string) (Kind, bool) {
	for _, k := range table {
		if k.File == name {
			return k, true
		}
	}
	return Kind{}, false
}

// Of is the kind of document d.
func Of(d result.Doc) (Kind, bool) {
	t := reflect.TypeOf(d)
	for _, k := range table {
		if k.New != nil && reflect.TypeOf(k.New()) == t {
			return k, true
		}
	}
	return Kind{}, false
}

// Text writes d's summary as the command line prints it, by its kind's
// renderer (*report.UnknownError for a document no row has).
func Text(w io.Writer, d result.Doc) error {
	k, _ := Of(d)
	return k.render.Text(w, d)
}

// HTML is d's self-contained page, by its kind's renderer.
func HTML(d result.Doc) ([]byte, error) {
	k, _ := Of(d)
	return k.render.HTML(d)
}
