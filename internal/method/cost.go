package method

import (
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/schedule"
	"github.com/fullpipe/fullpipe/internal/tester"
)

// What each kind of test costs a schedule, one function per kind, which
// the table of kinds (package kinds) makes a schedule.Costing of (the
// runners' counterpart: execute.go). An engine test's cost is its one
// call's, as package tester bounds it beside the code that waits; a
// method's is its plan, beside its runner, built from the configs and
// constants the runner uses, every retry and resend taken: RFC6349Cost,
// TrainsCost, WindowSweepCost, MsgLenSweepCost, PingCost, RFC2544Cost,
// Y1564Cost. Each takes its config with its defaults filled and
// validated (schedule.Costed does that) and the path's round trip.
var (
	TCPCost   = anyRTT(tester.TCPCost)
	UDPCost   = anyRTT(tester.UDPCost)
	RTTCost   = anyRTT(tester.RTTCost)
	STAMPCost = anyRTT(tester.STAMPCost)
	PMTUCost  = func(cfg result.PMTUConfig, rtt time.Duration) (schedule.Cost, error) {
		return tester.PMTUCost(cfg, rtt), nil
	}
)

// anyRTT is the cost of an engine test whose own time does not depend on
// the path's round trip.
func anyRTT[C any](f func(C) schedule.Cost) func(C, time.Duration) (schedule.Cost, error) {
	return func(cfg C, _ time.Duration) (schedule.Cost, error) { return f(cfg), nil }
}
