package agent

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/fleet/client"
)

// idleScan is how often the uploader looks at the spool unasked.
const idleScan = time.Minute

// nudge wakes the uploader: a new upload is spooled.
func (a *Agent) nudge() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// routineUploader uploads the spool, oldest first, until ctx ends: at
// once (what a crash or an outage left), whenever a run spools its
// upload, and after a backoff while the controller fails. A file is
// deleted only once the controller acknowledged it (stored or already
// stored: uploads are idempotent); one it refuses as conflicting is
// moved aside, not retried.
func (a *Agent) routineUploader(ctx context.Context) {
	for fails := 0; ; {
		wait := idleScan
		if err := a.uploadSpool(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			fails++
			wait = a.cfg.Backoff.Delay(fails)
			files, _ := a.spool.usage()
			a.log.Warn("upload failed; retrying", "err", err, "attempt", fails, "pending", files, "wait", wait.Round(time.Millisecond))
		} else {
			fails = 0
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-a.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// uploadSpool tries each spooled upload once, oldest first; it stops at
// the first the controller could not take (the others would fail too).
func (a *Agent) uploadSpool(ctx context.Context) error {
	names, err := a.spool.list()
	if err != nil {
		return err
	}
	for _, name := range names {
		e, err := a.spool.read(name)
		if err != nil {
			to, merr := a.spool.moveAside(name, time.Now())
			a.log.Error("unreadable spool file moved aside", "err", err, "to", to, "move_err", merr)
			continue
		}
		log := a.log.With("run", e.RunID)
		a.remember(e.RunID) // before the file goes: a run listed again is not run again
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		stored, err := a.ctl.Upload(cctx, e.RunID, e.Upload)
		cancel()
		switch {
		case err == nil:
			log.Info("result uploaded", "state", e.Upload.State, "stored", stored, "spooled", e.Spooled)
			if err := a.spool.remove(name); err != nil {
				log.Error("cannot delete an acknowledged upload from the spool: it will be sent again (harmless: uploads are idempotent)", "err", err)
			}
		case refused(err):
			to, merr := a.spool.moveAside(name, time.Now())
			log.Error("the controller refused the result: moved aside, not retried", "err", err, "to", to, "move_err", merr)
		default:
			return err
		}
	}
	return nil
}

// remember marks run id as ended, if it is not running.
func (a *Agent) remember(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.runs[id]; !ok {
		a.endedLocked(id)
	}
}

// refused says whether the controller refused a call for good, so that
// trying again cannot help: the request is malformed (400) or too large
// (413), the run is not this agent's (403) or unknown (404), or it
// conflicts with what the controller holds (409: a different result, a
// run no longer scheduled). A revoked token (401) is not: an operator
// can mend it, and the agent keeps trying with backoff.
func refused(err error) bool {
	if errors.Is(err, fleet.ErrConflict) {
		return true
	}
	switch client.StatusOf(err) {
	case http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusConflict,
		http.StatusGone, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

// uploadOnce is the last resort for an upload the spool could not keep.
func (a *Agent) uploadOnce(id string, u fleet.Upload, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if _, err := a.ctl.Upload(ctx, id, u); err != nil {
		log.Error("result lost: neither spooled nor uploaded", "err", err)
	}
}
