package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/testkit"
)

// helperClientEnv, when set to a responder's address, makes the test
// binary a client that runs a 30 s reverse TCP test against it (and is
// killed by the test that started it).
const helperClientEnv = "FULLPIPE_SERVE_TEST_CLIENT"

// helperReceiving is the helper client's line once data has arrived.
const helperReceiving = "receiving"

// helperClientMain is the client of helperClientEnv (TestMain runs it):
// it prints helperReceiving on stdout once its first interval has
// received bytes (the responder has sent some: what the test's record
// must show), and exits 3 when the test is over, a kill being what the
// test expects.
func helperClientMain(addr string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	said := false
	progress := func(iv result.TCPInterval) {
		if !said && iv.Bytes > 0 {
			said = true
			fmt.Println(helperReceiving)
		}
	}
	_, err := tester.RunTCP(ctx, tester.Target{Addr: addr}, result.TCPConfig{Streams: 1, Duration: 30 * time.Second, Reverse: true, Interval: 100 * time.Millisecond}, progress)
	fmt.Fprintln(os.Stderr, "helper client:", err)
	return 3
}

// logRecords returns the JSON log records written to buf so far.
func logRecords(t *testing.T, buf *testkit.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func jsonLog(buf *testkit.Buffer) *slog.Logger { return slog.New(slog.NewJSONHandler(buf, nil)) }

func (s *Server) startedSessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ss := range s.sessions {
		ss.mu.Lock()
		if ss.started {
			n++
		}
		ss.mu.Unlock()
	}
	return n
}

// TestVanishedClientLeavesRecord: a client process killed (SIGKILL) in
// the middle of a reverse TCP test. The responder logs the test's figures
// in one line and leaves exactly one JSON document in --results-dir,
// partial, with the request, the peer and the bytes it sent.
func TestVanishedClientLeavesRecord(t *testing.T) {
	dir := t.TempDir()
	var logs testkit.Buffer
	srv := startServer(t, Config{ResultsDir: dir, Log: jsonLog(&logs)})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperClientEnv+"="+srv.Addr().String())
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // dies with the test binary
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Killed once the responder has sent data the client received (a
	// session merely started may not have written a byte yet).
	receiving := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		receiving <- sc.Scan() && sc.Text() == helperReceiving
	}()
	select {
	case ok := <-receiving:
		if !ok {
			t.Fatal("the client process ended before it received data")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the client process received no data within 10 s")
	}
	if n := srv.startedSessions(); n != 1 {
		t.Fatalf("%d started sessions while the client receives, want 1", n)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	var files []string
	if !testkit.Poll(10*time.Second, func() bool { files, _ = filepath.Glob(filepath.Join(dir, "[0-9]*.json")); return len(files) > 0 }) {
		t.Fatal("no result file 10 s after the client was killed")
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("result file is not a Record: %v\n%s", err, b)
	}
	if !rec.Partial || rec.Reason == "" {
		t.Errorf("partial %v reason %q, want partial with a reason", rec.Partial, rec.Reason)
	}
	if rec.Schema != RecordSchema || rec.Request.Kind != "tcp" || !rec.Request.Reverse || !strings.HasPrefix(rec.Peer, "127.0.0.1:") {
		t.Errorf("record %+v: want schema %d, the reverse tcp request and the peer", rec, RecordSchema)
	}
	if rec.Figures.Streams != 1 || rec.Figures.BytesTx <= 0 || rec.DurationNs <= 0 || !rec.End.After(rec.Start) {
		t.Errorf("figures %+v duration %d ns: want 1 stream and bytes sent", rec.Figures, rec.DurationNs)
	}
	if want := recordName(rec); filepath.Base(files[0]) != want {
		t.Errorf("file %s, want %s (time and session)", filepath.Base(files[0]), want)
	}
	if all, _ := filepath.Glob(filepath.Join(dir, "*")); len(all) != 1 {
		t.Errorf("files in the results directory: %v, want one", all)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	var fig map[string]any
	for _, r := range logRecords(t, &logs) {
		if r["msg"] == "test figures" {
			fig = r
		}
	}
	if fig == nil || fig["partial"] != true || fig["bytes_tx"].(float64) <= 0 || fig["streams"].(float64) != 1 || fig["duration_ms"] == nil {
		t.Errorf("figures log line %v: want partial, bytes_tx > 0, 1 stream, a duration", fig)
	}
}

// TestLogFlood: 200 connections from one address that send garbage cause
// at most the per-address budget of lines, then one summary line with
// the count held back; another address still gets its line.
func TestLogFlood(t *testing.T) {
	var logs testkit.Buffer
	// Connections from one address are not capped here (the cap closes
	// them at accept, unlogged, when the responder lags behind the flood):
	// this test is about the log lines.
	srv, stop := runServer(t, Config{Log: jsonLog(&logs), MaxConnsPerAddr: 1000})
	const flood = 200
	garbage := func(local string) {
		d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
		c, err := d.Dial("tcp", srv.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = c.Write([]byte("GARBAGE!"))
	}
	for range flood {
		garbage("127.0.0.1")
	}
	garbage("127.0.0.2")
	counted := func() int {
		srv.logLim.mu.Lock()
		defer srv.logLim.mu.Unlock()
		n := 0
		for _, a := range srv.logLim.addrs {
			n += a.passed + a.suppressed
		}
		return n
	}
	if !testkit.Poll(10*time.Second, func() bool { return counted() == flood+1 }) {
		t.Fatalf("the responder counted %d lines, want %d", counted(), flood+1)
	}
	stop() // flushes the summaries
	perAddr := map[string]int{}
	var summaries []string
	for _, r := range logRecords(t, &logs) {
		msg, _ := r["msg"].(string)
		switch {
		case strings.HasPrefix(msg, "dropped connection"):
			perAddr[strings.Split(r["peer"].(string), ":")[0]]++
		case strings.HasPrefix(msg, "suppressed"):
			summaries = append(summaries, msg)
		}
	}
	if perAddr["127.0.0.1"] != DefaultLogLinesPerAddr || perAddr["127.0.0.2"] != 1 {
		t.Errorf("lines per address %v, want %d from the flood and 1 from the other", perAddr, DefaultLogLinesPerAddr)
	}
	want := fmt.Sprintf("suppressed %d lines from 127.0.0.1", flood-DefaultLogLinesPerAddr)
	if len(summaries) != 1 || summaries[0] != want {
		t.Errorf("summaries %q, want [%q]", summaries, want)
	}
}

// TestLogLimiterWindows: on a manual clock, a window passes perAddr
// lines per address; the lines held back are summed up when the window
// ends, by flush or by the address's next line.
func TestLogLimiterWindows(t *testing.T) {
	var logs testkit.Buffer
	now := time.Unix(1000, 0)
	l := newLogLimiter(slog.NewJSONHandler(&logs, nil), 3, 10*time.Second, func() time.Time { return now })
	log := slog.New(l.handler())
	a := log.With("peer", "192.0.2.1:5000")
	for i := range 5 {
		a.Info("line", "i", i)
	}
	log.Info("no address: never limited")
	slog.New(l.handler()).Info("other", "peer", "192.0.2.2:1")
	now = now.Add(9 * time.Second)
	l.flush(false)
	if n := len(logRecords(t, &logs)); n != 5 {
		t.Fatalf("%d lines within the window, want 3 + 1 + 1", n)
	}
	now = now.Add(time.Second)
	a.Info("next window")
	recs := logRecords(t, &logs)
	if got := recs[5]["msg"]; got != "suppressed 2 lines from 192.0.2.1" {
		t.Errorf("line 6 is %q, want the summary before the next window's line", got)
	}
	if got := recs[6]["msg"]; got != "next window" {
		t.Errorf("line 7 is %q", got)
	}
}

// TestRecordDocumented: every key of a results file is in docs/serve.md.
func TestRecordDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/serve.md")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(Record{Reason: "x"})
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	keys := []string{}
	for k := range top {
		keys = append(keys, k)
	}
	var fig map[string]any
	_ = json.Unmarshal(top["figures"], &fig)
	for k := range fig {
		keys = append(keys, k)
	}
	for _, k := range keys {
		if !bytes.Contains(doc, []byte("`"+k+"`")) {
			t.Errorf("results key %q is not documented in docs/serve.md", k)
		}
	}
}
