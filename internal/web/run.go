package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/kinds"
	"github.com/fullpipe/fullpipe/internal/method"
	"github.com/fullpipe/fullpipe/internal/result"
)

// runData is a run's page.
type runData struct {
	Run       fleet.Run
	Result    *fleet.Result
	Live      bool // scheduled or running: the page follows its progress
	Lines     []string
	Next      int // the progress's next sequence number
	Direction string
}

// live says whether a run may still change.
func live(r fleet.Run) bool { return r.State == fleet.RunScheduled || r.State == fleet.RunRunning }

// runPage: GET /ui/runs/{id}: the run, its progress while it runs,
// then its report (in a sandboxed frame) and its JSON.
func (s *Site) runPage(w http.ResponseWriter, r *http.Request, v *viewer) error {
	run, err := s.cfg.Store.Run(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	d := runData{Run: run, Live: live(run)}
	if res, err := s.cfg.Store.Result(r.Context(), run.ID); err == nil {
		res.Doc = nil
		d.Result = &res
	} else if !errors.Is(err, fleet.ErrNotFound) {
		return err
	}
	if d.Lines, d.Next, err = s.progress(r, run.ID, 0); err != nil {
		return err
	}
	s.render(w, r, "run", v, d)
	return nil
}

// progressData answers the page's poll.
type progressData struct {
	State fleet.RunState `json:"state"`
	Lines []string       `json:"lines"`
	Next  int            `json:"next"`
}

// runProgress: GET /ui/runs/{id}/progress?after=N: the run's state and
// its progress lines from sequence N on, in words.
func (s *Site) runProgress(w http.ResponseWriter, r *http.Request, v *viewer) error {
	run, err := s.cfg.Store.Run(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	after, _ := strconv.Atoi(r.URL.Query().Get("after"))
	var d progressData
	d.State = run.State
	if d.Lines, d.Next, err = s.progress(r, run.ID, after); err != nil {
		return err
	}
	if d.Lines == nil {
		d.Lines = []string{}
	}
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(d)
}

// progressPage is how many events one answer of the run page's
// progress carries: the page asks again from the next seq.
const progressPage = 1000

// progress is a run's events from seq after on, at most progressPage,
// as lines of words (the samples' figures; the rest as the method says
// them), and the next seq.
func (s *Site) progress(r *http.Request, id string, after int) ([]string, int, error) {
	es, err := s.cfg.Store.Events(r.Context(), id, after, progressPage)
	if err != nil {
		return nil, after, err
	}
	next := after
	var lines []string
	for _, e := range es {
		next = max(next, e.Seq)
		var ev method.Event
		if json.Unmarshal(e.Event, &ev) != nil {
			continue
		}
		lines = append(lines, e.Time.UTC().Format("15:04:05")+" "+eventWords(ev))
	}
	return lines, next, nil
}

// eventWords is one event in words.
func eventWords(e method.Event) string {
	var b strings.Builder
	b.WriteString(string(e.Step))
	if e.Direction != "" {
		b.WriteString(" " + string(e.Direction))
	}
	switch {
	case e.TCP != nil:
		fmt.Fprintf(&b, ": %.1f–%.1f s %s, %d retransmitted segments", e.TCP.StartS, e.TCP.EndS, mbps(e.TCP.ThroughputBps), e.TCP.RetransSegs)
	case e.UDP != nil:
		fmt.Fprintf(&b, ": %.1f–%.1f s %s, %d lost", e.UDP.StartS, e.UDP.EndS, mbps(e.UDP.ThroughputBps), e.UDP.Lost)
	case e.Kind == method.Started:
		b.WriteString(": started")
	case e.Kind == method.Finished && e.Text == "":
		b.WriteString(": done")
	}
	if e.Text != "" {
		b.WriteString(": " + e.Text)
	}
	return b.String()
}

// runReport: GET /ui/runs/{id}/report: the result's HTML report, as the
// CLI's --report writes it, under a policy that lets it style itself
// and nothing else, and only be framed by this site.
func (s *Site) runReport(w http.ResponseWriter, r *http.Request, v *viewer) error {
	res, err := s.cfg.Store.Result(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	doc, err := result.DecodeBounded(res.Doc) // stored before the controller bounded uploads, a document could be any size
	if err != nil {
		return fmt.Errorf("run %s's document: %w", res.RunID, err)
	}
	page, err := kinds.HTML(doc)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'")
	h.Set("X-Frame-Options", "SAMEORIGIN")
	h.Set("Content-Type", "text/html; charset=utf-8")
	_, err = w.Write(page)
	return err
}

// runJSON: GET /ui/runs/{id}/result.json: the stored document, to save.
func (s *Site) runJSON(w http.ResponseWriter, r *http.Request, v *viewer) error {
	res, err := s.cfg.Store.Result(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", "fullpipe-"+res.Kind+"-"+res.Source+"-"+res.Dest+"-"+res.RunID+".json"))
	_, err = w.Write(res.Doc)
	return err
}
