package controller

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/fleet/client"
	"github.com/fullpipe/fullpipe/internal/fleet/fleettest"
	"github.com/fullpipe/fullpipe/internal/kinds"
)

// The test binary is also an attacker: TestMain runs one when attackEnv
// names a spec file, instead of the tests. It sends the spec's requests
// in order over TLS (trusting the controller's certificate file) and
// prints each answer, so that a hostile agent is a process of its own,
// as it is in the field: its memory, its sockets and its crash are not
// the controller's.
const attackEnv = "FULLPIPE_TEST_ATTACK"

// attackSpec is what an attacker process sends.
type attackSpec struct {
	URL, CertFile string
	Requests      []attackRequest
}

// attackRequest is one request. Body is sent as is, unless Gen names a
// body the attacker builds itself (too large to pass in a file
// cheaply): "streams:N", a finished upload of a tcp document of about N
// bytes of empty streams.
type attackRequest struct {
	Method, Path, Token string
	Body                json.RawMessage `json:",omitempty"`
	Gen                 string          `json:",omitempty"`
}

// attackAnswer is what the controller answered to one request.
type attackAnswer struct {
	Status     int
	RetryAfter string
	Error      string // the API error's message, when it sent one
	Err        string // the request failed (no answer)
}

// runAttacker sends the spec in file and prints its answers as one JSON
// array.
func runAttacker(file string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var spec attackSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	pem, err := os.ReadFile(spec.CertFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	var out []attackAnswer
	for _, r := range spec.Requests {
		out = append(out, attackOnce(hc, spec.URL, r))
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		return 2
	}
	return 0
}

func attackOnce(hc *http.Client, base string, r attackRequest) attackAnswer {
	body := []byte(r.Body)
	if n, ok := strings.CutPrefix(r.Gen, "streams:"); ok {
		var size int
		fmt.Sscan(n, &size)
		body = streamsUpload(size)
	}
	req, err := http.NewRequest(r.Method, base+r.Path, bytes.NewReader(body))
	if err != nil {
		return attackAnswer{Err: err.Error()}
	}
	req.Header.Set("Authorization", "Bearer "+r.Token)
	resp, err := hc.Do(req)
	if err != nil {
		return attackAnswer{Err: err.Error()}
	}
	defer resp.Body.Close()
	a := attackAnswer{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After")}
	var fe fleet.Error
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode >= 300 && json.Unmarshal(b, &fe) == nil {
		a.Error = fe.Error
	}
	return a
}

// streamsUpload is a finished upload of fleettest.EmptyStreams(size).
func streamsUpload(size int) []byte {
	u, _ := json.Marshal(fleet.Upload{State: fleet.RunFinished, Doc: fleettest.EmptyStreams(size)})
	return u
}

// attack runs reqs from an attacker process and returns its answers,
// one per request.
func (e *env) attack(reqs ...attackRequest) []attackAnswer {
	e.t.Helper()
	dir := e.t.TempDir()
	spec, _ := json.Marshal(attackSpec{URL: e.c.URL(), CertFile: filepath.Join(e.c.cfg.StateDir, certFile), Requests: reqs})
	file := filepath.Join(dir, "attack.json")
	if err := os.WriteFile(file, spec, 0o600); err != nil {
		e.t.Fatal(err)
	}
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(c, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), attackEnv+"="+file)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		e.t.Fatalf("the attacker process: %v: %s", err, stderr.String())
	}
	var as []attackAnswer
	if err := json.Unmarshal(out, &as); err != nil || len(as) != len(reqs) {
		e.t.Fatalf("the attacker's answers %q: %v", out, err)
	}
	return as
}

// TestHostileAgentProcess: an agent token in a process of its own sends
// the attacks one after another: a result for a cancelled run,
// a 15 MiB document of empty streams, a heartbeat naming 257 running
// runs, events past a run's cap, an agent approving itself, addresses
// no responder can be at and a third party's, and a result whose RTT is
// 11.6 days. Each gets its refusal (or, the forged figure, is stored and
// marked), the controller's own allocations while it decodes the 15 MiB
// stay a small multiple of it, and afterwards the controller still
// serves a legitimate agent: the forged RTT does not size the pair's
// next slot, and a plausible result is stored.
func TestHostileAgentProcess(t *testing.T) {
	e := start(t, Config{})
	a := e.enrolSecret("a", nil)
	rogue := e.enrolSecret("rogue", nil)
	b := e.agent("b", nil)
	run := bookOne(t, e, pairSchedule("a", "b"))
	now := time.Now().UTC()
	cancelled := e.cancelledRun(now.Add(time.Hour))
	upload := func(doc []byte) json.RawMessage {
		u, _ := json.Marshal(fleet.Upload{State: fleet.RunFinished, Doc: doc})
		return u
	}
	ids := make([]string, maxRunningIDs+1)
	for i := range ids {
		ids[i] = fmt.Sprintf("%032x", i)
	}
	beat, _ := json.Marshal(fleet.Heartbeat{Running: ids})
	events := func(from, n int) json.RawMessage {
		j, _ := json.Marshal(fleettest.LineEvents(now, from, n))
		return j
	}
	reg := func(addr string) json.RawMessage {
		j, _ := json.Marshal(fleet.Registration{Name: "rogue", Version: "test", Capabilities: kinds.Names(), Addresses: []string{addr}})
		return j
	}
	forged := bytes.ReplaceAll(tcpDoc(t), []byte(`"rtt_min_us": 1`), []byte(`"rtt_min_us": 1000000000000`))
	res := "/v1/agent/runs/" + run.ID
	reqs := []attackRequest{
		{Method: "PUT", Path: "/v1/agent/runs/" + cancelled.ID + "/result", Token: a, Body: upload(tcpDoc(t))},
		{Method: "PUT", Path: res + "/result", Token: a, Gen: fmt.Sprint("streams:", 15<<20)},
		{Method: "POST", Path: "/v1/agent/heartbeat", Token: a, Body: beat},
	}
	for from := 1; from <= MaxRunEvents; from += 2500 {
		reqs = append(reqs, attackRequest{Method: "POST", Path: res + "/events", Token: a, Body: events(from, 2500)})
	}
	reqs = append(reqs,
		attackRequest{Method: "POST", Path: res + "/events", Token: a, Body: events(MaxRunEvents+1, 1)},
		attackRequest{Method: "POST", Path: "/v1/agents/rogue/approve", Token: rogue},
		attackRequest{Method: "POST", Path: "/v1/agent/register", Token: rogue, Body: reg("169.254.169.254:80")},
		attackRequest{Method: "POST", Path: "/v1/agent/register", Token: rogue, Body: reg("198.18.0.9:6349")},
		attackRequest{Method: "PUT", Path: res + "/result", Token: a, Body: upload(forged)},
	)
	want := []int{409, 413, 400, 204, 204, 204, 204, 413, 403, 400, 200, 200}
	// The 15 MiB first, alone, with the controller's allocations
	// measured around it; then the rest from a second attacker.
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	answers := e.attack(reqs[1])
	runtime.ReadMemStats(&m1)
	answers = append(append([]attackAnswer{}, answers...), e.attack(append(reqs[:1:1], reqs[2:]...)...)...)
	answers[0], answers[1] = answers[1], answers[0]
	for i, ans := range answers {
		if ans.Status != want[i] || ans.Err != "" {
			t.Errorf("attack %d (%s %s): %d %q %s, want %d", i, reqs[i].Method, reqs[i].Path, ans.Status, ans.Error, ans.Err, want[i])
		}
		if ans.Status >= 400 && (ans.Error == "" || strings.Contains(ans.Error, "\n")) {
			t.Errorf("attack %d: refusal %q is not one line", i, ans.Error)
		}
	}
	alloc := (m1.TotalAlloc - m0.TotalAlloc) >> 20
	t.Logf("the controller's process allocated %d MiB while it refused the 15 MiB upload", alloc)
	if alloc > maxUploadAlloc>>20 {
		t.Errorf("the controller allocated %d MiB for a 15 MiB upload, more than %d", alloc, maxUploadAlloc>>20)
	}
	if n, _, err := e.st.EventsSize(ctx(t), run.ID); err != nil || n != MaxRunEvents {
		t.Errorf("stored %d events (%v), want the cap, %d", n, err, MaxRunEvents)
	}
	got, err := e.admin.Result(ctx(t), run.ID)
	if err != nil || !strings.Contains(got.Figures.Implausible, "minimum RTT") {
		t.Fatalf("the forged result: %+v, %v; want it stored, marked implausible", got.Figures, err)
	}
	if _, err := e.admin.Result(ctx(t), cancelled.ID); err == nil {
		t.Error("the cancelled run's refused result was stored")
	}
	ag, err := e.admin.Agent(ctx(t), "rogue")
	if err != nil || len(ag.PendingAddresses) != 1 || ag.PendingAddresses[0] != "198.18.0.9:6349" {
		t.Errorf("the rogue's third-party address: %+v, %v; want it pending", ag.PendingAddresses, err)
	}
	// The attacks take their time (on a loaded machine longer than the
	// agents' down-after, three heartbeat intervals): a and b say they
	// are up again before their pair is booked, as running agents do.
	for _, cl := range []*client.Client{e.client(a), b} {
		if _, err := cl.Heartbeat(ctx(t), fleet.Heartbeat{}); err != nil {
			t.Fatalf("a heartbeat after the attacks: %v", err)
		}
	}
	wantSlot(t, bookOne(t, e, pairSchedule("a", "b")), e.c.cfg.DefaultRTT)
	legit := bookOne(t, e, pairSchedule("b", "a"))
	if _, err := b.Upload(ctx(t), legit.ID, fleet.Upload{State: fleet.RunFinished, Doc: tcpDoc(t)}); err != nil {
		t.Errorf("a legitimate agent's result after the attacks: %v", err)
	}
}

// maxUploadAlloc bounds what the controller allocates while it refuses
// TestHostileAgentProcess's 15 MiB upload: the JSON decoder's buffer
// grows by doubling to hold the body (at most 2 × the body allocated in
// all), the document is copied out of it into the upload (1 ×), and it
// is decoded up to 4 × its text (result.DecodeBounded) before it is
// refused: 7 × 15 MiB.
const maxUploadAlloc = 7 * 15 << 20
