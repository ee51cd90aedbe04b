package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/testkit"
)

var doneUpload = fleet.Upload{State: fleet.RunFinished, Doc: json.RawMessage(`{"test":"tcp"}`)}

// TestSpoolWrite: a spooled upload is one whole file named after its run
// (or a hash of an unsafe ID), read back as written; a crash's temp file
// is deleted at the next open and never read as an upload; an
// unreadable file is moved aside by the uploader's reader.
func TestSpoolWrite(t *testing.T) {
	dir := t.TempDir()
	sp, err := openSpool(dir, 10, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)
	for _, id := range []string{"run-1", "../../etc/passwd", "run-1.json"} {
		if err := sp.put(id, doneUpload, now); err != nil {
			t.Fatal(err)
		}
	}
	names := spoolFiles(t, sp.dir)
	if len(names) != 3 || !slices.Contains(names, "run-1.json") {
		t.Fatalf("spool holds %v, want run-1.json and two hashed names", names)
	}
	for _, n := range names {
		if strings.Contains(n, "/") || strings.Contains(n, "..") {
			t.Errorf("unsafe file name %q", n)
		}
		e, err := sp.read(n)
		if err != nil || e.Upload.State != fleet.RunFinished || string(e.Upload.Doc) != `{"test":"tcp"}` || !e.Spooled.Equal(now) {
			t.Errorf("%s read back as %+v, %v", n, e, err)
		}
	}
	if files, _ := sp.usage(); files != 3 {
		t.Errorf("usage: %d files, want 3", files)
	}
	// A crash mid-write leaves a temp file; the next open deletes it.
	if err := os.WriteFile(filepath.Join(sp.dir, tmpPrefix+"123"), []byte(`{"run_id":"half`), 0o600); err != nil {
		t.Fatal(err)
	}
	sp2, err := openSpool(dir, 10, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if names := spoolFiles(t, sp2.dir); len(names) != 3 {
		t.Errorf("after reopening: %v, want the 3 uploads and no temp file", names)
	}
	if files, _ := sp2.usage(); files != 3 {
		t.Errorf("reopened usage: %d files, want 3", files)
	}
	if err := os.WriteFile(filepath.Join(sp2.dir, "junk.json"), []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := sp2.read("junk.json"); err == nil {
		t.Error("read junk as an upload")
	}
}

// TestSpoolFull: past its file or byte bound the spool says why it is
// full (the agent then starts no run), and taking uploads out frees it.
func TestSpoolFull(t *testing.T) {
	sp, err := openSpool(t.TempDir(), 2, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"a", "b"} {
		if why := sp.full(); why != "" {
			t.Fatalf("full after %d: %s", i, why)
		}
		if err := sp.put(id, doneUpload, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if why := sp.full(); !strings.Contains(why, "2 uploads") {
		t.Errorf("full = %q, want it to say it holds 2 uploads", why)
	}
	if err := sp.remove("a.json"); err != nil {
		t.Fatal(err)
	}
	if why := sp.full(); why != "" {
		t.Errorf("still full after a removal: %s", why)
	}
	small, err := openSpool(t.TempDir(), 100, 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := small.put("a", doneUpload, time.Now()); err != nil {
		t.Fatal(err)
	}
	if why := small.full(); !strings.Contains(why, "bytes") {
		t.Errorf("full = %q, want the byte bound", why)
	}
}

// failedUpload is a spooled upload of a run that failed without a
// document: what the controller takes for any run of this agent.
func failedUpload(why string) fleet.Upload { return fleet.Upload{State: fleet.RunFailed, Error: why} }

// futureRuns books n non-exclusive runs from src to dst in an hour: the
// controller takes their uploads, and does not hand them out before.
func (f *testFleet) futureRuns(src, dst string, n int) []string {
	f.t.Helper()
	var ids []string
	for i := range n {
		r := f.book(src, dst, fleet.Test{Kind: "rtt"}, false, time.Now().Add(time.Hour+time.Duration(i)*time.Minute), time.Minute)
		ids = append(ids, r.ID)
	}
	return ids
}

// TestSpoolReplay: uploads a "crashed" agent left in its spool (written,
// never acknowledged: a gate refused every call) are uploaded exactly
// once by a new agent on the same directory with the real controller
// back, then deleted.
func TestSpoolReplay(t *testing.T) {
	f := newTestFleet(t)
	g := f.gate()
	g.set(gateRefuse, "")
	dir := t.TempDir()
	tok := f.enrol("a1")
	if _, err := f.admin.Enrol(f.ctx(), fleet.Enrolment{Name: "peer"}); err != nil {
		t.Fatal(err)
	}
	ids := f.futureRuns("a1", "peer", 3)
	rec1 := f.gatedClient(g, tok)
	first, stop := startAgent(t, Config{Controller: rec1, Name: "a1", SpoolDir: dir})
	for _, id := range ids {
		if err := first.spool.put(id, failedUpload("test "+id), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	first.nudge()
	if !testkit.Poll(5*time.Second, func() bool { rec1.mu.Lock(); defer rec1.mu.Unlock(); return len(rec1.uploads) >= 3 }) {
		t.Fatal("the agent did not try its uploads")
	}
	stop() // the "crash": the files stay, nothing was acknowledged
	if n := len(spoolFiles(t, filepath.Join(dir, "spool"))); n != 3 {
		t.Fatalf("spool holds %d files after the first agent, want 3", n)
	}
	g.set(gatePass, "")
	rec2 := &recorder{Controller: f.client(tok)}
	startAgent(t, Config{Controller: rec2, Name: "a1", SpoolDir: dir})
	for _, id := range ids {
		if r := f.waitRun(id, 10*time.Second, fleet.RunFailed); r.Error != "test "+id {
			t.Errorf("run %s stored as %q", id, r.Error)
		}
	}
	if !testkit.Poll(5*time.Second, func() bool { return len(spoolFiles(t, filepath.Join(dir, "spool"))) == 0 }) {
		t.Errorf("spool still holds %v after the uploads", spoolFiles(t, filepath.Join(dir, "spool")))
	}
	for _, id := range ids {
		if acked, stored := rec2.acknowledged(id); acked != 1 || stored != 1 {
			t.Errorf("run %s: acknowledged %d, stored %d: want once each", id, acked, stored)
		}
		if acked, _ := rec1.acknowledged(id); acked != 0 {
			t.Errorf("run %s acknowledged through a closed gate", id)
		}
	}
}

// TestUploadRetry: a controller that refuses every call (503), then
// swallows them (no answer: the calls time out), then answers
// heartbeats but refuses uploads, then comes back, gets each upload
// exactly once; the heartbeats said how many were pending meanwhile.
// Then it refuses again mid-way and a new upload gets through once it is
// back.
func TestUploadRetry(t *testing.T) {
	f := newTestFleet(t)
	g := f.gate()
	g.set(gateRefuse, "")
	if _, err := f.admin.Enrol(f.ctx(), fleet.Enrolment{Name: "peer"}); err != nil {
		t.Fatal(err)
	}
	a, rec, _ := f.gatedAgent(g, "a1", Config{})
	ids := f.futureRuns("a1", "peer", 3)
	for _, id := range ids[:2] {
		if err := a.spool.put(id, failedUpload(id), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	a.nudge()
	failed := func() int {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		n := 0
		for _, u := range rec.uploads {
			if u.err != nil {
				n++
			}
		}
		return n
	}
	for _, mode := range []gateMode{gateRefuse, gateSwallow} {
		g.set(mode, "")
		n := failed()
		if !testkit.Poll(10*time.Second, func() bool { return failed() >= n+3 }) {
			t.Fatalf("gate mode %d: the agent stopped retrying", mode)
		}
	}
	g.set(gateRefuse, "/result")
	if !testkit.Poll(10*time.Second, func() bool { rec.mu.Lock(); defer rec.mu.Unlock(); return lastPending(rec.beats) == 2 }) {
		t.Fatal("no heartbeat reported the 2 pending uploads")
	}
	g.set(gatePass, "")
	for _, id := range ids[:2] {
		f.waitRun(id, 10*time.Second, fleet.RunFailed)
	}
	g.set(gateRefuse, "")
	if err := a.spool.put(ids[2], failedUpload(ids[2]), time.Now()); err != nil {
		t.Fatal(err)
	}
	a.nudge()
	n := failed()
	if !testkit.Poll(10*time.Second, func() bool { return failed() >= n+2 }) {
		t.Fatal("the agent stopped retrying")
	}
	g.set(gatePass, "")
	f.waitRun(ids[2], 10*time.Second, fleet.RunFailed)
	if !testkit.Poll(5*time.Second, func() bool { return len(spoolFiles(t, a.spool.dir)) == 0 }) {
		t.Errorf("spool still holds %v", spoolFiles(t, a.spool.dir))
	}
	for _, id := range ids {
		if acked, stored := rec.acknowledged(id); acked != 1 || stored != 1 {
			t.Errorf("run %s: acknowledged %d, stored %d: want once each", id, acked, stored)
		}
	}
}

func lastPending(hs []fleet.Heartbeat) int {
	if len(hs) == 0 {
		return -1
	}
	return hs[len(hs)-1].Pending
}

// TestUploadConflict: an upload the controller refuses as conflicting
// (409: it holds a different outcome for the run) is moved aside, not
// retried; the uploads after it go on.
func TestUploadConflict(t *testing.T) {
	f := newTestFleet(t)
	if _, err := f.admin.Enrol(f.ctx(), fleet.Enrolment{Name: "peer"}); err != nil {
		t.Fatal(err)
	}
	tok := f.enrol("a1")
	ids := f.futureRuns("a1", "peer", 2)
	if _, err := f.client(tok).Upload(f.ctx(), ids[0], failedUpload("another")); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sp, err := openSpool(dir, 10, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if err := sp.put(id, failedUpload("mine"), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	rec := &recorder{Controller: f.client(tok)}
	startAgent(t, Config{Controller: rec, Name: "a1", SpoolDir: dir})
	f.waitRun(ids[1], 10*time.Second, fleet.RunFailed)
	if !testkit.Poll(5*time.Second, func() bool { return len(spoolFiles(t, sp.dir)) == 0 }) {
		t.Fatalf("spool still holds %v", spoolFiles(t, sp.dir))
	}
	aside := spoolFiles(t, sp.aside)
	if len(aside) != 1 || !strings.HasSuffix(aside[0], "-"+ids[0]+".json") {
		t.Errorf("moved aside: %v, want %s's file", aside, ids[0])
	}
	// Final: the recorder counts a try before the uploader moves the
	// file aside, and the uploader tries only what the spool holds.
	// That it is never tried again later is TestUploaderTiming's, on
	// fake time.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	tries := 0
	for _, u := range rec.uploads {
		if u.runID == ids[0] {
			tries++
		}
	}
	if tries != 1 {
		t.Errorf("the conflicting upload was tried %d times, want once", tries)
	}
	if r, _ := f.db.Run(f.ctx(), ids[0]); r.Error != "another" {
		t.Errorf("the conflicting upload replaced the stored one: %q", r.Error)
	}
}
