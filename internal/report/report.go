// Package report renders every document the tool emits (package result)
// for people and programs: plain text for the terminal (Renderer.Text),
// the JSON encoding `--json` prints (JSON), and one self-contained HTML
// page with inline CSS and SVG charts, no scripts and no network fetches
// (Renderer.HTML). Each kind's Renderer (RenderTCP, ...) is a column of
// the table of kinds (package kinds), which picks it for a document.
// The live view's samples, rendered before the document exists, are here
// too (TCPLive, UDPLive, RTTReply, WindowPoint, MsgLenPoint).
package report

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/fullpipe/fullpipe/internal/result"
)

// UnknownError is a document its Renderer does not render: of another
// kind's type, or of a kind with no row (a Doc added to result without
// a row in the table of kinds).
type UnknownError struct{ Doc result.Doc }

func (e *UnknownError) Error() string {
	return fmt.Sprintf("report: no renderer for a %T document", e.Doc)
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
