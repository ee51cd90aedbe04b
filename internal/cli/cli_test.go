package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/serve"
	"github.com/fullpipe/fullpipe/internal/serve/servetest"
	"github.com/fullpipe/fullpipe/internal/wire"
)

func run(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

func server(t *testing.T, cfg serve.Config) string {
	t.Helper()
	cfg.Listen = "127.0.0.1:0"
	srv, err := serve.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return srv.Addr().String()
}

// Bad input: one line on stderr naming the problem, exit 2, nothing sent.
func TestBadFlags(t *testing.T) {
	cases := map[string][]string{
		"negative":                            {"tcp", "127.0.0.1", "-t", "-1s"},
		"window of 0":                         {"tcp", "127.0.0.1", "--window", "0"},
		"--window: 2147483648 bytes is above": {"tcp", "127.0.0.1", "--window", "2GiB"},
		"no unit":                             {"udp", "127.0.0.1", "--rate", "50"},
		"ambiguous":                           {"tcp", "127.0.0.1", "--window", "64K"},
		"missing HOST":                        {"tcp"},
		"--streams 0":                         {"tcp", "127.0.0.1", "-P", "0"},
		"not both":                            {"tcp", "127.0.0.1", "--bytes", "1MB", "-t", "5s"},
		"--bidir: reverse and bidir exclude":  {"tcp", "127.0.0.1", "--reverse", "--bidir"},
		"--dscp: 64":                          {"tcp", "127.0.0.1", "--dscp", "64"},
		"unknown command":                     {"tpc", "127.0.0.1"},
		"duration \"10x":                      {"rtt", "127.0.0.1", "-i", "10x"},
		"--tls-pin":                           {"tcp", "127.0.0.1", "--tls-pin", "md5:00"},
		"--log-format":                        {"serve", "--listen", "127.0.0.1:0", "--log-format", "xml"},
		"--tls-cert and":                      {"serve", "--listen", "127.0.0.1:0", "--tls-cert", "c.pem"},
	}
	for want, args := range cases {
		code, out, errs := run(t, context.Background(), args...)
		if code != ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, ExitUsage)
		}
		if out != "" || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: want one stderr line and no stdout, got stdout %q stderr %q", args, out, errs)
		}
		frag := strings.Split(want, "\"")[0]
		if !strings.Contains(errs, frag) {
			t.Errorf("%v: stderr %q does not mention %q", args, errs, frag)
		}
	}
}

func TestHelpTeaches(t *testing.T) {
	for _, c := range []string{"serve", "tcp", "udp", "rtt", "demo"} {
		code, out, _ := run(t, context.Background(), c, "--help")
		if code != 0 || !strings.Contains(out, "Units:") || !strings.Contains(out, "Usage: fullpipe "+c) {
			t.Errorf("%s --help: exit %d, output %q", c, code, out)
		}
	}
	_, out, _ := run(t, context.Background(), "serve", "--help")
	if !strings.Contains(out, "many clients at once") {
		t.Error("serve --help does not say it serves many clients at once")
	}
}

func TestRefusedPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	code, _, errs := run(t, context.Background(), "tcp", addr, "-t", "1s")
	if code != ExitRefused || !strings.Contains(errs, "refused") {
		t.Fatalf("exit %d stderr %q", code, errs)
	}
}

// holdUntilHangup reads and drops what a fake peer's client sends until
// the client closes, 10 s at most: closing first, with the client's bytes
// unread, would send a reset that may overtake what the fake wrote.
func holdUntilHangup(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.Copy(io.Discard, c)
}

// A peer that is not a fullpipe responder: one clear line, exit 3.
func TestNotFullpipe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n"))
			holdUntilHangup(c)
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	code, _, errs := run(t, ctx, "tcp", ln.Addr().String(), "-t", "1s")
	if code != ExitRefused || !strings.Contains(errs, "not a fullpipe") {
		t.Fatalf("exit %d stderr %q", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if len(lines) != 2 { // "connecting to ..." progress, then the error
		t.Fatalf("want progress + one error line, got %q", errs)
	}
}

// --json carries the keys scripts rely on, and the bytes it reports were
// moved: a fixed transfer must report exactly the bytes asked for.
func TestTCPJSON(t *testing.T) {
	addr := server(t, serve.Config{})
	code, out, errs := run(t, context.Background(), "tcp", addr, "--bytes", "20MB", "-P", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	sum := doc["summary"].(map[string]any)
	for _, k := range []string{"throughput_bps", "bytes_sent", "bytes_retrans", "efficiency_pct", "rtt_min_us", "rtt_mean_us"} {
		if _, ok := sum[k]; !ok {
			t.Errorf("summary.%s missing", k)
		}
	}
	if b := sum["bytes"].(float64); b != 20_000_000 {
		t.Errorf("summary.bytes = %v, want exactly 20,000,000", b)
	}
	if doc["schema"].(float64) != result.Schema {
		t.Errorf("schema = %v, want %d", doc["schema"], result.Schema)
	}
	cmd := doc["command"].([]any)
	if len(cmd) < 2 || cmd[1] != "tcp" {
		t.Errorf("command = %v", cmd)
	}
	if _, ok := doc["intervals"].([]any); !ok {
		t.Error("intervals missing")
	}
}

func TestSecretFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "key")
	bad := filepath.Join(dir, "wrong")
	weak := filepath.Join(dir, "weak")
	os.WriteFile(good, []byte("q8Vd0uFZk1mJ3xR7tWcPzA==\n"), 0o600)
	os.WriteFile(bad, []byte("Zm9vYmFyYmF6cXV4cXV1eA==\n"), 0o600)
	os.WriteFile(weak, []byte("s3cret\n"), 0o600)
	addr := server(t, serve.Config{Secret: []byte("q8Vd0uFZk1mJ3xR7tWcPzA==")})
	if code, _, errs := run(t, context.Background(), "rtt", addr, "-n", "2", "-i", "10ms", "--secret-file", weak); code == 0 || !strings.Contains(errs, "head -c 32 /dev/urandom | base64") {
		t.Fatalf("weak secret: exit %d stderr %q, want a refusal that says how to make a secret", code, errs)
	}
	if code, _, errs := run(t, context.Background(), "serve", "--listen", "127.0.0.1:0", "--secret-file", weak); code == 0 || !strings.Contains(errs, "head -c 32 /dev/urandom | base64") {
		t.Fatalf("serve with a weak secret: exit %d stderr %q, want a refusal that says how to make a secret", code, errs)
	}
	if code, _, errs := run(t, context.Background(), "rtt", addr, "-n", "2", "-i", "10ms", "--secret-file", bad); code != ExitRefused || !strings.Contains(errs, "secret") {
		t.Fatalf("wrong secret: exit %d stderr %q", code, errs)
	}
	if code, _, errs := run(t, context.Background(), "rtt", addr, "-n", "2", "-i", "10ms"); code != ExitRefused || !strings.Contains(errs, "secret") {
		t.Fatalf("no secret: exit %d stderr %q", code, errs)
	}
	if code, _, errs := run(t, context.Background(), "rtt", addr, "-n", "2", "-i", "10ms", "--secret-file", good); code != 0 {
		t.Fatalf("right secret: exit %d stderr %q", code, errs)
	}
}

// Ctrl-C (a cancelled context) prints the partial figures and exits 1
// within a second or two.
func TestInterruptPrintsPartial(t *testing.T) {
	addr := server(t, serve.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(1500*time.Millisecond, cancel)
	start := time.Now()
	code, out, errs := run(t, ctx, "tcp", addr, "-t", "20s")
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("took %v to stop after the interrupt at 1.5 s", took)
	}
	if code != ExitFailed || !strings.Contains(out, "PARTIAL") || !strings.Contains(errs, "partial") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if !strings.Contains(out, "Gbit/s") && !strings.Contains(out, "Mbit/s") {
		t.Errorf("no throughput with units in %q", out)
	}
}

// A responder of another protocol version: one line naming both versions.
func TestVersionMismatch(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write([]byte{'F', 'P', 'C', 'T', 0, byte(wire.Version + 1)}) // fullpipe control, the next version
		holdUntilHangup(c)
	}()
	code, _, errs := run(t, context.Background(), "rtt", ln.Addr().String(), "-n", "1")
	if code != ExitRefused || !strings.Contains(errs, fmt.Sprintf("we speak %d, the peer speaks %d", wire.Version, wire.Version+1)) {
		t.Fatalf("exit %d stderr %q", code, errs)
	}
}

// TestServeJSONLogs: with --log-format json every stderr line of serve is
// a JSON object, the start line and the refusal of a stray connection
// included; --results-dir is created at start.
func TestServeJSONLogs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	ctx, cancel := context.WithCancel(context.Background())
	stderr := newLogBuffer()
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--log-format", "json", "--results-dir", dir}, io.Discard, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("serve did not stop within 5 s of the cancel")
		}
	})
	if !stderr.waitContains(5*time.Second, "\n") {
		t.Fatalf("no start line within 5 s: %q", stderr.String())
	}
	var start map[string]any
	line, _, _ := strings.Cut(stderr.String(), "\n")
	if err := json.Unmarshal([]byte(line), &start); err != nil {
		t.Fatalf("start line is not JSON: %q", line)
	}
	addr, _ := start["addr"].(string)
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("start line %v: %v", start, err)
	}
	_, _ = c.Write([]byte("GARBAGE!"))
	c.Close()
	if !stderr.waitContains(5*time.Second, "without a fullpipe preamble") {
		t.Fatalf("no log line for the stray connection: %q", stderr.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["msg"] == nil || m["level"] == nil {
			t.Errorf("not a JSON log record with msg and level: %q (%v)", line, err)
		}
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Errorf("--results-dir %s not created: %v", dir, err)
	}
}

// TestServeFlagsDocumented: every serve flag is in docs/serve.md's table.
func TestServeFlagsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/serve.md")
	if err != nil {
		t.Fatal(err)
	}
	findCommand(t, "serve").LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" {
			return
		}
		if !strings.Contains(string(doc), "`--"+f.Name) {
			t.Errorf("serve --%s is not documented in docs/serve.md", f.Name)
		}
	})
}

// TestTLSFlags: serve's --tls-cert/--tls-key files load into the config
// whose fingerprint the banner prints; a client with --tls-pin of that
// fingerprint tests, one with another pin is refused in one line.
func TestTLSFlags(t *testing.T) {
	cert, err := servetest.Cert()
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err := servetest.WritePEM(t.TempDir(), cert)
	if err != nil {
		t.Fatal(err)
	}
	cfg, fp, err := loadTLS(certFile, keyFile)
	if err != nil || fp != wire.Fingerprint(cert.Certificate[0]) {
		t.Fatalf("loadTLS: fingerprint %q, err %v; want %s", fp, err, wire.Fingerprint(cert.Certificate[0]))
	}
	addr := server(t, serve.Config{TLS: cfg})
	if code, _, errs := run(t, context.Background(), "rtt", addr, "-n", "2", "-i", "10ms", "--tls-pin", fp); code != 0 {
		t.Fatalf("right pin: exit %d stderr %q", code, errs)
	}
	wrong := "sha256:" + strings.Repeat("ab", 32)
	code, _, errs := run(t, context.Background(), "rtt", addr, "-n", "2", "-i", "10ms", "--tls-pin", wrong)
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if code != ExitRefused || !strings.Contains(lines[len(lines)-1], "--tls-pin") || !strings.Contains(errs, fp) {
		t.Fatalf("wrong pin: exit %d stderr %q, want exit %d and a line naming the certificate and --tls-pin", code, errs, ExitRefused)
	}
}

// TestServePublic: --public sets its preset, a flag given beside it wins,
// and the help lists the preset.
func TestServePublic(t *testing.T) {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	var f serveArgs
	f.flags(fs)
	if err := fs.Parse([]string{"--public", "--max-streams", "4"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := f.config(input{changed: fs.Changed})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxDuration != 30*time.Second || cfg.MaxSessionsPerAddr != 2 || cfg.MaxRateBps != 1e9 || cfg.MaxWriteSize != 1<<20 || cfg.MaxProbeRate != 100 || cfg.MaxConnsPerAddr != 24 {
		t.Errorf("--public: %+v", cfg)
	}
	if cfg.MaxStreams != 4 {
		t.Errorf("--max-streams 4 beside --public: got %d", cfg.MaxStreams)
	}
	if fmt.Sprint(cfg.AllowDSCP) != "[0 8 10 18 26 34]" {
		t.Errorf("--public DSCP allowlist %v", cfg.AllowDSCP)
	}
	_, out, _ := run(t, context.Background(), "serve", "--help")
	for _, p := range publicPreset {
		if !strings.Contains(out, "--"+p[0]+" "+p[1]) {
			t.Errorf("serve --help does not list --public's --%s %s", p[0], p[1])
		}
	}
}

// findCommand is the command at path in a fresh command tree.
func findCommand(t *testing.T, path ...string) *cobra.Command {
	t.Helper()
	root := newRoot(&env{ctx: context.Background(), stdout: io.Discard, stderr: io.Discard})
	c, rest, err := root.Find(path)
	if err != nil || len(rest) > 0 || c == root {
		t.Fatalf("no command %v: %v", path, err)
	}
	return c
}

// TestStreamsOverResponderLimit: the CLI has no stream limit of its own;
// a responder's (announced in its hello) refuses more, checked by the
// client before it sends the request: exit 3, with the responder's own
// words naming the flag that raises it.
func TestStreamsOverResponderLimit(t *testing.T) {
	addr := server(t, serve.Config{MaxStreams: 8})
	code, _, errs := run(t, context.Background(), "tcp", addr, "-P", "9", "-t", "1")
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	last := lines[len(lines)-1]
	if code != ExitRefused || !strings.HasPrefix(last, "fullpipe tcp: ") || !strings.Contains(last, "--max-streams") || !strings.Contains(last, "got 9") || strings.Count(errs, "fullpipe tcp: ") != 1 {
		t.Fatalf("9 streams against a limit of 8: exit %d, stderr %q; want exit %d and one line naming --max-streams", code, errs, ExitRefused)
	}
	if code, _, errs := run(t, context.Background(), "tcp", addr, "-P", "8", "-t", "1"); code != ExitOK {
		t.Fatalf("8 streams against a limit of 8: exit %d, stderr %q", code, errs)
	}
}
