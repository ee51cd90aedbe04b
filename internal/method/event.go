package method

import (
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/sweep"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// Step is one step of a method, or the single step of a test.
type Step string

// Steps. The RFC 6349 run takes them in this order (sweep only when asked).
const (
	StepMTU        Step = "mtu"
	StepBaseline   Step = "baseline"
	StepWalk       Step = "walk"
	StepSweep      Step = "sweep"
	StepThroughput Step = "throughput"
	StepShaping    Step = "shaping"
	// The single tests and the other methods, each one step.
	StepTCP    Step = "tcp"
	StepUDP    Step = "udp"
	StepRTT    Step = "rtt"
	StepTrains Step = "trains"
	StepMsgLen Step = "msglen"
	StepPing   Step = "ping"
	StepSTAMP  Step = "stamp"
	// Y.1564's two tests.
	StepY1564Config Step = "y1564-config"
	StepY1564Perf   Step = "y1564-performance"
)

// Title is the step as the live view heads it.
func (s Step) Title() string {
	switch s {
	case StepMTU:
		return "1. path MTU"
	case StepBaseline:
		return "2. baseline RTT and bottleneck bandwidth"
	case StepWalk:
		return "3. walk the window"
	case StepSweep:
		return "3b. window sweep"
	case StepThroughput:
		return "4. TCP throughput"
	case StepShaping:
		return "5. shaping vs policing"
	case StepY1564Config:
		return "Y.1564 service configuration test"
	case StepY1564Perf:
		return "Y.1564 service performance test"
	}
	return string(s)
}

// Kind is what an event tells.
type Kind string

// Event kinds.
const (
	Started  Kind = "step_started"  // a step begins
	Finished Kind = "step_finished" // a step ended (Text: an error, if it failed)
	Line     Kind = "line"          // a step's figures so far, in words
	Sample   Kind = "sample"        // an interval's or a sweep point's figures
	Warning  Kind = "warning"       // something the result's warnings also say
)

// Event is one progress report of a running test or method: typed for
// an agent to stream or a page to draw, with the sentence the live view
// prints. A sample carries exactly one of its figures.
type Event struct {
	Kind      Kind            `json:"kind"`
	Step      Step            `json:"step"`
	Direction vocab.Direction `json:"direction,omitempty"`
	Text      string          `json:"text,omitempty"`
	// Samples: a TCP or UDP test's interval, a window sweep's point, a
	// message-length sweep's point (Index: the point's, from 0).
	TCP    *result.TCPInterval `json:"tcp,omitempty"`
	UDP    *result.UDPInterval `json:"udp,omitempty"`
	Window *sweep.WindowPoint  `json:"window_point,omitempty"`
	MsgLen *sweep.MsgLenPoint  `json:"msglen_point,omitempty"`
	Index  int                 `json:"index,omitempty"`
}

// Progress receives a run's events, in order, on the run's goroutine.
type Progress func(Event)

func (p Progress) emit(e Event) {
	if p != nil {
		p(e)
	}
}
