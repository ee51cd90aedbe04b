package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/serve"
)

// TestReportFlag: every client command's --report FILE writes one HTML
// page of the document it printed, with its charts, against a loopback
// responder; the text (or, with --json, the JSON) on stdout is unchanged
// by it. rfc6349's --report is older and covered in package report.
func TestReportFlag(t *testing.T) {
	addr := server(t, serve.Config{})
	dir := t.TempDir()
	cases := []struct {
		name string
		args []string
		want []string // on the page
	}{
		{"tcp", []string{"tcp", addr, "-t", "1s"}, []string{"TCP throughput test", "goodput per interval, by direction", "<svg"}},
		{"udp", []string{"udp", addr, "-t", "1s", "--rate", "5M", "--drain", "100ms"}, []string{"UDP stream test", "loss per interval", "<svg"}},
		{"rtt", []string{"rtt", addr, "-n", "5", "-i", "10ms"}, []string{"UDP round-trip time test", "median to p99", "<svg"}},
		{"mtu", []string{"mtu", addr, "--max", "1500"}, []string{"Path MTU test", "1500 B (TCP MSS 1460 B"}},
		{"sweep-window", []string{"sweep", "window", addr, "--from", "16KiB", "--to", "16KiB", "-t", "1s", "--baseline-probes", "3"}, []string{"Window sweep", "goodput against the window", "<svg"}},
		{"sweep-msglen", []string{"sweep", "msglen", addr, "--sizes", "1KiB", "-t", "1s", "--udp-rate", "5M"}, []string{"Message-length sweep", "TCP goodput", "<svg"}},
		{"trains", []string{"trains", addr, "--rate", "100M", "--rtt", "1ms", "--direction", "up"}, []string{"Packet trains", "up: ", "head arrived at"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(dir, c.name+".html")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			code, out, errs := run(t, ctx, append(c.args, "--report", file)...)
			t.Logf("%s took %v", c.name, time.Since(start).Round(time.Millisecond))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			page, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("--report wrote nothing: %v", err)
			}
			if !strings.HasPrefix(string(page), "<!doctype html>") || !strings.HasSuffix(strings.TrimSpace(string(page)), "</html>") {
				t.Errorf("not one whole HTML page: %.200s", page)
			}
			for _, w := range append(c.want, "fullpipe "+c.args[0]) /* the command line */ {
				if !strings.Contains(string(page), w) {
					t.Errorf("page lacks %q", w)
				}
			}
			if out == "" || strings.HasPrefix(out, "{") {
				t.Errorf("stdout is not the text summary: %.200s", out)
			}
		})
	}
}

// TestReportWithJSON: --json and --report together print the document and
// write its page; a --report the tool cannot write fails in one line
// naming the flag, after the result was printed.
func TestReportWithJSON(t *testing.T) {
	addr := server(t, serve.Config{})
	file := filepath.Join(t.TempDir(), "rtt.html")
	code, out, errs := run(t, context.Background(), "rtt", addr, "-n", "3", "-i", "10ms", "--json", "--report", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc["test"] != "rtt" {
		t.Errorf("stdout is not the rtt document: %v\n%s", err, out)
	}
	if _, err := os.Stat(file); err != nil {
		t.Errorf("--report with --json wrote nothing: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "no", "such", "dir", "rtt.html")
	code, out, errs = run(t, context.Background(), "rtt", addr, "-n", "1", "--report", bad)
	if code != ExitFailed || !strings.Contains(errs, "--report") || strings.Count(strings.TrimSpace(errs), "\n") > 1 || !strings.Contains(out, "Summary:") {
		t.Errorf("unwritable --report: exit %d, stdout %q, stderr %q; want the summary, then exit %d and one line naming --report", code, out, errs, ExitFailed)
	}
}
