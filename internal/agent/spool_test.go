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

// TestSpoolReplay: uploads a "crashed" agent left in its spool (written,
// never acknowledged: the controller was away) are uploaded exactly once
// by a new agent on the same directory, then deleted; the run is not
// run again even when the controller lists it once more.
func TestSpoolReplay(t *testing.T) {
	dir := t.TempDir()
	f := newFakeFleet()
	f.setDown(true)
	first, stop := startAgent(t, Config{Controller: f.ctl("a1"), Name: "a1", SpoolDir: dir})
	for _, id := range []string{"r1", "r2", "r3"} {
		if err := first.spool.put(id, fleet.Upload{State: fleet.RunFailed, Error: "test " + id}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	first.nudge()
	if !testkit.Poll(5*time.Second, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.refused >= 3 }) {
		t.Fatal("the agent did not try its controller")
	}
	stop() // the "crash": the files stay, nothing was acknowledged
	if n := len(spoolFiles(t, filepath.Join(dir, "spool"))); n != 3 {
		t.Fatalf("spool holds %d files after the first agent, want 3", n)
	}
	f.setDown(false)
	f.setOrders("a1", fleet.Orders{Runs: []fleet.Assignment{{Run: fleet.Run{ID: "r2", Test: fleet.Test{Kind: "rtt"}, Start: time.Now(), End: time.Now().Add(time.Minute)}}}})
	startAgent(t, Config{Controller: f.ctl("a1"), Name: "a1", SpoolDir: dir})
	for _, id := range []string{"r1", "r2", "r3"} {
		if u := f.waitUpload(t, id, 10*time.Second); u.Error != "test "+id {
			t.Errorf("run %s uploaded as %+v", id, u)
		}
	}
	if !testkit.Poll(5*time.Second, func() bool { return len(spoolFiles(t, filepath.Join(dir, "spool"))) == 0 }) {
		t.Errorf("spool still holds %v after the uploads", spoolFiles(t, filepath.Join(dir, "spool")))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range []string{"r1", "r2", "r3"} {
		if f.uploads[id] != 1 {
			t.Errorf("run %s acknowledged %d times, want once", id, f.uploads[id])
		}
	}
	if f.starts["r2"] != 0 {
		t.Errorf("run r2, already spooled, was started again")
	}
}

// TestUploadRetry: a controller that vanishes (every call fails), then
// answers heartbeats but fails uploads, then comes back, then vanishes
// again mid-way, gets each upload exactly once; the heartbeats said how
// many were pending meanwhile.
func TestUploadRetry(t *testing.T) {
	dir := t.TempDir()
	f := newFakeFleet()
	f.setDown(true)
	a, _ := startAgent(t, Config{Controller: f.ctl("a1"), Name: "a1", SpoolDir: dir})
	for _, id := range []string{"r1", "r2"} {
		if err := a.spool.put(id, fleet.Upload{State: fleet.RunFailed, Error: id}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	a.nudge()
	refusedAtLeast := func(n int) bool {
		return testkit.Poll(5*time.Second, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.refused >= n })
	}
	if !refusedAtLeast(10) {
		t.Fatal("the agent stopped retrying")
	}
	f.mu.Lock()
	f.down, f.noUpload = false, true
	f.mu.Unlock()
	if !testkit.Poll(5*time.Second, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return lastPending(f.beats["a1"]) == 2 }) {
		t.Fatalf("no heartbeat reported the 2 pending uploads: %+v", f.beats["a1"])
	}
	f.mu.Lock()
	f.noUpload = false
	f.mu.Unlock()
	f.waitUpload(t, "r1", 10*time.Second)
	f.waitUpload(t, "r2", 10*time.Second)
	f.setDown(true)
	if err := a.spool.put("r3", fleet.Upload{State: fleet.RunFailed, Error: "r3"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	before := f.refused
	f.mu.Unlock()
	a.nudge()
	if !refusedAtLeast(before + 3) {
		t.Fatal("the agent stopped retrying")
	}
	f.setDown(false)
	f.waitUpload(t, "r3", 10*time.Second)
	if !testkit.Poll(5*time.Second, func() bool { return len(spoolFiles(t, a.spool.dir)) == 0 }) {
		t.Errorf("spool still holds %v", spoolFiles(t, a.spool.dir))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range []string{"r1", "r2", "r3"} {
		if f.uploads[id] != 1 {
			t.Errorf("run %s acknowledged %d times, want once", id, f.uploads[id])
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
// (it holds a different result for the run) is moved aside, not retried;
// the uploads after it go on.
func TestUploadConflict(t *testing.T) {
	dir := t.TempDir()
	f := newFakeFleet()
	f.stored["r1"] = fleet.Upload{State: fleet.RunFailed, Error: "another"}
	f.setDown(true)
	a, _ := startAgent(t, Config{Controller: f.ctl("a1"), Name: "a1", SpoolDir: dir})
	for _, id := range []string{"r1", "r2"} {
		if err := a.spool.put(id, fleet.Upload{State: fleet.RunFailed, Error: id}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	f.setDown(false)
	a.nudge()
	f.waitUpload(t, "r2", 10*time.Second)
	if !testkit.Poll(5*time.Second, func() bool { return len(spoolFiles(t, a.spool.dir)) == 0 }) {
		t.Fatalf("spool still holds %v", spoolFiles(t, a.spool.dir))
	}
	aside := spoolFiles(t, a.spool.aside)
	if len(aside) != 1 || !strings.HasSuffix(aside[0], "-r1.json") {
		t.Errorf("moved aside: %v, want r1's file", aside)
	}
	time.Sleep(100 * time.Millisecond)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stored["r1"].Error != "another" {
		t.Errorf("the conflicting upload replaced the stored one")
	}
}
