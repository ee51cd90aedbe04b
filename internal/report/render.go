package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"

	"github.com/fullpipe/fullpipe/internal/result"
)

// Renderer is how one kind of document reads: its text, as the command
// line prints it after the live view, and its body of the shared HTML
// page. The table of kinds (package kinds) holds one per kind; each is
// built by renderer, which ties its two functions to one document type.
type Renderer struct {
	text func(io.Writer, result.Doc) bool
	page func(result.Doc) (Page, bool)
}

// Page is what one kind of document puts on the shared page.
type Page struct {
	Title  string // the heading
	Body   string // its template in pages
	View   any    // what that template reads
	Config any    // the document's configuration, shown as JSON
	Footer string // how its figures are defined
}

// renderer ties a text and a page function to documents of type D; a
// document of another type is refused (*UnknownError).
func renderer[D result.Doc](text func(io.Writer, D), page func(D) Page) Renderer {
	return Renderer{
		text: func(w io.Writer, d result.Doc) bool {
			r, ok := d.(D)
			if ok {
				text(w, r)
			}
			return ok
		},
		page: func(d result.Doc) (Page, bool) {
			r, ok := d.(D)
			if !ok {
				return Page{}, false
			}
			return page(r), true
		},
	}
}

// The renderers, one per kind of document.
var (
	RenderTCP = renderer(tcpText, func(r *result.TCP) Page {
		return Page{"TCP throughput test", "tcp", newTCPView(r), r.Config, tcpFooter}
	})
	RenderUDP = renderer(udpText, func(r *result.UDP) Page {
		return Page{"UDP stream test", "udp", newUDPView(r), r.Config, udpFooter}
	})
	RenderRTT = renderer(rttText, func(r *result.RTT) Page {
		return Page{"UDP round-trip time test", "rtt", newRTTView(r), r.Config, rttFooter}
	})
	RenderMTU = renderer(mtuDocText, func(r *result.PMTU) Page {
		return Page{"Path MTU test", "mtu", r, r.Config, mtuFooter}
	})
	RenderTrains = renderer(trainsText, func(r *result.Trains) Page {
		return Page{"Packet trains: shaping vs policing", "trains", newTrainsView(r), r.Config, trainsFooter}
	})
	RenderRFC6349 = renderer(rfc6349Text, func(r *result.RFC6349) Page {
		return Page{"RFC 6349 TCP throughput test", "rfc6349", newRFC6349View(r), r.Config, rfc6349Footer}
	})
	RenderWindowSweep = renderer(windowSweepText, func(r *result.WindowSweep) Page {
		return Page{"Window sweep", "sweep-window", newWindowSweepView(r), r.Config, windowSweepFooter}
	})
	RenderMsgLenSweep = renderer(msgLenSweepText, func(r *result.MsgLenSweep) Page {
		return Page{"Message-length sweep", "sweep-msglen", newMsgLenView(r), r.Config, msgLenFooter}
	})
	RenderPing = renderer(pingText, func(r *result.Ping) Page {
		return Page{"Single-ended test (no responder)", "ping", newPingView(r), r.Config, pingFooter}
	})
	RenderSTAMP = renderer(stampText, func(r *result.STAMP) Page {
		return Page{"STAMP session (RFC 8762)", "stamp", newSTAMPView(r), r.Config, stampFooter}
	})
	RenderRFC2544 = renderer(rfc2544Text, func(r *result.RFC2544) Page {
		return Page{"RFC 2544 benchmarks", "rfc2544", newRFC2544View(r), r.Config, rfc2544Footer}
	})
	RenderY1564 = renderer(y1564Text, func(r *result.Y1564) Page {
		return Page{"ITU-T Y.1564 service activation test", "y1564", newY1564View(r), r.Config, y1564Footer}
	})
)

// Text writes d's summary as the command line prints it after the live
// view: the verdict or the figures, each with its unit, and under a test
// that crossed a lab path whether the lab held it.
func (r Renderer) Text(w io.Writer, d result.Doc) error {
	ew := &errWriter{w: w}
	if r.text == nil || !r.text(ew, d) {
		return &UnknownError{d}
	}
	labText(ew, d.Head().Lab)
	return ew.err
}

// HTML renders d as one self-contained page: what was tested and where,
// the figures with their units, charts as inline SVG (each saying what it
// shows, over which interval and measured on which side), and the
// command line and configuration that produced them. No scripts, no
// fetches: the page works offline.
func (r Renderer) HTML(d result.Doc) ([]byte, error) {
	if r.page == nil {
		return nil, &UnknownError{d}
	}
	p, ok := r.page(d)
	if !ok {
		return nil, &UnknownError{d}
	}
	var body bytes.Buffer
	if err := pages.ExecuteTemplate(&body, p.Body, p.View); err != nil {
		return nil, fmt.Errorf("report: %s page: %w", p.Body, err)
	}
	cfg, err := json.MarshalIndent(p.Config, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("report: configuration: %w", err)
	}
	v := pageView{Title: p.Title, M: d.Head(), Body: template.HTML(body.String()), Config: string(cfg), Footer: p.Footer} // body: executed by html/template, escaped
	var out bytes.Buffer
	if err := pages.ExecuteTemplate(&out, "page", v); err != nil {
		return nil, fmt.Errorf("report: page: %w", err)
	}
	return out.Bytes(), nil
}
