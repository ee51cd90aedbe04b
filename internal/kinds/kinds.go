// Package kinds is the one table of test kinds: every kind of test the
// tool runs (tcp, udp, rtt, mtu, trains, rfc6349, the two sweeps, ping,
// stamp, rfc2544, y1564) is a row, and what a kind is made of (its
// config and document, how it runs over method.Network, what it costs a
// schedule, how it reads as text and HTML, its headline figures) is
// reached through its row. It sits above result, schedule, method and
// report, which each hold one column (a value per kind, beside that
// kind's own code) and need not list the kinds themselves.
//
// The table holds each kind's document and config (result's row), what
// it costs a schedule (a schedule.Costing of method's cost of the kind:
// its plan, or its one engine test's), how it runs (method's Runner),
// its text and page (report's Renderer) and its headline figures (this
// package's); the test walks every row end to end (TestEveryKind). A
// new kind is its own files in those packages (its document and config
// with a row in result.Kinds, its cost and Runner, its Renderer, its
// page template in report's list), a row here, a
// command in the CLI's table and the kind's name in the docs' lists:
// TestEveryKind, TestDocsNameEveryKind and the CLI's TestCommandPerKind
// fail on any one forgotten.
//
// The fleet names its kinds through the table too (Names, Known, and
// Decode of a scheduled test), so that the fleet's contract (fleet,
// store) compiles no config and, through them, no method's maths.
package kinds

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/method"
	"github.com/fullpipe/fullpipe/internal/report"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/schedule"
)

// Kind is one row: the kind's document and config (Test, its
// Meta.Test; File, its name in a schedule, its schema's and test data's
// file; New; Config), what it costs a schedule, how it runs, its
// renderers and its headline figures.
type Kind struct {
	result.Kind
	cost    schedule.Costing               // what it costs a schedule
	run     method.Runner                  // how it runs on a method.Network
	render  report.Renderer                // its text and its page
	figures func(result.Doc) fleet.Figures // nil: none (mtu)
}

// table is every kind, in the order the tool lists them.
// The cost column is each kind's own (method's TCPCost, RFC6349Cost,
// ...) and whether it needs its agents to itself: the throughput tests
// do (two on one agent at once would measure each other); rtt, mtu and
// stamp send a few small probes and share them.
var table = []Kind{
	row("tcp", costed(true, method.TCPCost), method.TCPRunner, report.RenderTCP, figuresOf(tcpFigures)),
	row("udp", costed(true, method.UDPCost), method.UDPRunner, report.RenderUDP, figuresOf(udpFigures)),
	row("rtt", costed(false, method.RTTCost), method.RTTRunner, report.RenderRTT, figuresOf(rttFigures)),
	row("mtu", costed(false, method.PMTUCost), method.PMTURunner, report.RenderMTU, nil),
	row("trains", costed(true, method.TrainsCost), method.TrainsRunner, report.RenderTrains, figuresOf(trainsFigures)),
	row("rfc6349", costed(true, method.RFC6349Cost), method.RFC6349Runner, report.RenderRFC6349, figuresOf(rfc6349Figures)),
	row("sweep-window", costed(true, method.WindowSweepCost), method.WindowSweepRunner, report.RenderWindowSweep, figuresOf(windowSweepFigures)),
	row("sweep-msglen", costed(true, method.MsgLenSweepCost), method.MsgLenSweepRunner, report.RenderMsgLenSweep, figuresOf(msgLenSweepFigures)),
	row("ping", costed(true, method.PingCost), method.PingRunner, report.RenderPing, figuresOf(pingFigures)),
	row("stamp", costed(false, method.STAMPCost), method.STAMPRunner, report.RenderSTAMP, figuresOf(stampFigures)),
	row("rfc2544", costed(true, method.RFC2544Cost), method.RFC2544Runner, report.RenderRFC2544, figuresOf(rfc2544Figures)),
	row("y1564", costed(true, method.Y1564Cost), method.Y1564Runner, report.RenderY1564, figuresOf(y1564Figures)),
}

// costed is the Costing of a kind whose configs are Cs, read as the
// engine reads them (result.ConfigOf), and whose cost is f's.
func costed[C result.Config[C]](exclusive bool, f func(C, time.Duration) (schedule.Cost, error)) schedule.Costing {
	return schedule.Costed(exclusive, result.ConfigOf[C], f)
}

// row is the kind a schedule calls name, with its columns. A name no
// document has gives a row with no document, which TestEveryKind fails.
func row(name string, cost schedule.Costing, run method.Runner, render report.Renderer, figures func(result.Doc) fleet.Figures) Kind {
	k, _ := result.KindNamed(name)
	return Kind{Kind: k, cost: cost, run: run, render: render, figures: figures}
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

// Execute runs any test or method on n, by the row whose runner takes
// cfg's type: an engine test's config (result.TCPConfig, UDPConfig,
// RTTConfig, PMTUConfig), a method's (RFC6349Config, WindowSweepConfig,
// MsgLenSweepConfig, TrainsConfig, PingConfig, RFC2544Config,
// Y1564Config) or a STAMP session's (STAMPConfig). It is what the CLI,
// an agent and the tests call (method.Runner).
func Execute(ctx context.Context, n method.Network, cfg any, progress method.Progress) (result.Doc, error) {
	for _, k := range table {
		if k.run.Takes(cfg) {
			return k.run.Run(ctx, n, cfg, progress)
		}
	}
	return nil, fmt.Errorf("no test or method takes a config of type %T", cfg)
}
