// Package report renders every document the tool emits (package result)
// for people and programs: plain text for the terminal (Text), the JSON
// encoding `--json` prints (JSON), and one self-contained HTML page with
// inline CSS and SVG charts, no scripts and no network fetches (HTML).
// The live view's samples, rendered before the document exists, are here
// too (TCPLive, UDPLive, RTTReply, WindowPoint, MsgLenPoint).
package report

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/fullpipe/fullpipe/internal/result"
)

// UnknownError is a document of a type report does not render (a Doc
// added to result without a renderer here).
type UnknownError struct{ Doc result.Doc }

func (e *UnknownError) Error() string {
	return fmt.Sprintf("report: no renderer for a %T document", e.Doc)
}

// Text writes d's summary as the command line prints it after the live
// view: the verdict or the figures, each with its unit.
func Text(w io.Writer, d result.Doc) error {
	ew := &errWriter{w: w}
	switch r := d.(type) {
	case *result.TCP:
		tcpText(ew, r)
	case *result.UDP:
		udpText(ew, r)
	case *result.RTT:
		rttText(ew, r)
	case *result.PMTU:
		mtuDocText(ew, r)
	case *result.Trains:
		trainsText(ew, r)
	case *result.RFC6349:
		rfc6349Text(ew, r)
	case *result.WindowSweep:
		windowSweepText(ew, r)
	case *result.MsgLenSweep:
		msgLenSweepText(ew, r)
	case *result.Ping:
		pingText(ew, r)
	case *result.STAMP:
		stampText(ew, r)
	case *result.RFC2544:
		rfc2544Text(ew, r)
	case *result.Y1564:
		y1564Text(ew, r)
	default:
		return &UnknownError{d}
	}
	labText(ew, d.Head().Lab)
	return ew.err
}

// labText says, under a test that crossed a lab path, whether the lab
// held the path while it ran: the figures above are the path's only
// when it did.
func labText(w io.Writer, l *result.LabRun) {
	switch {
	case l == nil:
	case l.LabLimited:
		fmt.Fprintf(w, "\n%s\n", l.Account)
	default:
		fmt.Fprintf(w, "\nlab: held its path: %s\n", l.Account)
	}
}

// JSON writes d as `--json` prints it: indented by two spaces, one
// document, a newline after it (docs/json.md). Any value encodes the
// same way (the demo's map of documents, the lab's state).
func JSON(w io.Writer, d any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}
