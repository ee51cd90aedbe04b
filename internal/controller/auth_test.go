package controller

import (
	"encoding/pem"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/certs"
	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/fleet/client"
)

// TestRoles: each role is refused what it may not do (403), allowed
// what it may; agent tokens only act as their agent; revoked and
// unknown tokens are 401.
func TestRoles(t *testing.T) {
	e := start(t, Config{})
	reader, _ := e.token(fleet.RoleRead)
	operator, _ := e.token(fleet.RoleOperate)
	ag := e.agent("a", nil)
	e.agent("b", nil)
	c := ctx(t)

	if _, err := reader.Agents(c); err != nil {
		t.Errorf("read lists agents: %v", err)
	}
	_, err := reader.CreateSchedule(c, pairSchedule("a", "b"))
	wantStatus(t, "read creates a schedule", err, http.StatusForbidden)
	_, err = reader.CancelRun(c, "x")
	wantStatus(t, "read cancels a run", err, http.StatusForbidden)
	sc, err := operator.CreateSchedule(c, pairSchedule("a", "b"))
	if err != nil {
		t.Fatalf("operate creates a schedule: %v", err)
	}
	_, err = operator.Enrol(c, fleet.Enrolment{Name: "c"})
	wantStatus(t, "operate enrols", err, http.StatusForbidden)
	_, err = operator.IssueToken(c, fleet.TokenRequest{Role: fleet.RoleAdmin})
	wantStatus(t, "operate issues a token", err, http.StatusForbidden)
	_, err = operator.Tokens(c)
	wantStatus(t, "operate lists tokens", err, http.StatusForbidden)
	wantStatus(t, "operate revokes an agent", operator.RevokeAgent(c, "a"), http.StatusForbidden)
	wantStatus(t, "read deletes a schedule", reader.DeleteSchedule(c, sc.ID), http.StatusForbidden)

	_, err = ag.Agents(c)
	wantStatus(t, "an agent lists agents", err, http.StatusForbidden)
	_, err = ag.Register(c, fleet.Registration{Name: "b", Version: "x", Capabilities: []string{"tcp"}, Addresses: []string{"127.0.0.1:1"}})
	wantStatus(t, "agent a registers as b", err, http.StatusForbidden)
	_, err = operator.Heartbeat(c, fleet.Heartbeat{})
	wantStatus(t, "an API token heartbeats", err, http.StatusForbidden)
	_, err = e.admin.Heartbeat(c, fleet.Heartbeat{})
	wantStatus(t, "the admin heartbeats", err, http.StatusForbidden)

	for _, secret := range []string{"", "fp_nonsense"} {
		cl := e.client(secret)
		_, err = cl.Agents(c)
		wantStatus(t, "token "+secret, err, http.StatusUnauthorized)
	}
	checkRevocation(t, e, reader, ag)
}

// checkRevocation: revoked tokens, an API token's and an agent's, are
// refused; the agent is listed revoked.
func checkRevocation(t *testing.T, e *env, reader, ag *client.Client) {
	c := ctx(t)
	ts, err := e.admin.Tokens(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range ts {
		if tok.Role == fleet.RoleRead {
			if err := e.admin.RevokeToken(c, tok.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, err = reader.Agents(c)
	wantStatus(t, "a revoked read token", err, http.StatusUnauthorized)
	if err := e.admin.RevokeAgent(c, "a"); err != nil {
		t.Fatal(err)
	}
	_, err = ag.Heartbeat(c, fleet.Heartbeat{})
	wantStatus(t, "a revoked agent's heartbeat", err, http.StatusUnauthorized)
	a, err := e.admin.Agent(c, "a")
	if err != nil || a.State != fleet.AgentRevoked {
		t.Errorf("agent a after revocation: %s, %v", a.State, err)
	}
	wantStatus(t, "revoke an unknown agent", e.admin.RevokeAgent(c, "nobody"), http.StatusNotFound)
	wantStatus(t, "revoke an unknown token", e.admin.RevokeToken(c, "nope"), http.StatusNotFound)
}

// TestAgentActsForItself: an agent may not start, upload or report
// events for a run whose source is another agent.
func TestAgentActsForItself(t *testing.T) {
	e := start(t, Config{})
	a, b := e.agent("a", nil), e.agent("b", nil)
	if _, err := e.admin.CreateSchedule(ctx(t), pairSchedule("a", "b")); err != nil {
		t.Fatal(err)
	}
	o := waitOrders(t, a, func(o fleet.Orders) bool { return len(o.Runs) > 0 })
	id := o.Runs[0].ID
	wantStatus(t, "b starts a's run", b.Start(ctx(t), id), http.StatusForbidden)
	_, err := b.Upload(ctx(t), id, fleet.Upload{State: fleet.RunFailed, Error: "x"})
	wantStatus(t, "b uploads a's run", err, http.StatusForbidden)
	wantStatus(t, "b reports a's events", b.Events(ctx(t), id, []fleet.Event{{Seq: 1}}), http.StatusForbidden)
	wantStatus(t, "a starts an unknown run", a.Start(ctx(t), "nope"), http.StatusNotFound)
	// A failure without a document, then the same again: stored once.
	if stored, err := a.Upload(ctx(t), id, fleet.Upload{State: fleet.RunFailed, Error: "responder refused"}); err != nil || !stored {
		t.Fatalf("failure: %v, %v", stored, err)
	}
	if stored, err := a.Upload(ctx(t), id, fleet.Upload{State: fleet.RunFailed, Error: "responder refused"}); err != nil || stored {
		t.Fatalf("the same failure again: %v, %v", stored, err)
	}
	_, err = a.Upload(ctx(t), id, fleet.Upload{State: fleet.RunFailed, Error: "another"})
	wantStatus(t, "a different failure", err, http.StatusConflict)
}

// TestBootstrap: the first start writes an admin token (0600) and logs
// its path, not its secret; a restart on the same store and state keeps
// the certificate (same pin) and issues no second token.
func TestBootstrap(t *testing.T) {
	st, dir := sqliteStore(t), t.TempDir()
	e := start(t, Config{Store: st, StateDir: dir})
	fi, err := os.Stat(filepath.Join(dir, "admin.token"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin.token: %v, %v", fi, err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "admin.token"))
	secret := strings.TrimSpace(string(b))
	if len(secret) < 10 || strings.Contains(e.logs.String(), secret) {
		t.Fatal("the admin token's secret is in the log")
	}
	pin := e.c.Pin()
	c2, err := New(Config{Listen: "127.0.0.1:0", Store: st, StateDir: dir, Log: e.c.cfg.Log})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if c2.Pin() != pin {
		t.Errorf("pin after restart %s, was %s", c2.Pin(), pin)
	}
	ts, _ := e.admin.Tokens(ctx(t))
	if len(ts) != 1 {
		t.Errorf("%d tokens after a restart, want the one admin token", len(ts))
	}
	// A client with the wrong pin is refused by the TLS handshake.
	bad, _ := client.New(e.c.URL(), secret, client.Options{Pin: pinOf(0), Timeout: 5 * time.Second})
	if _, err := bad.Agents(ctx(t)); err == nil || client.StatusOf(err) != 0 {
		t.Errorf("a wrong pin: %v, want a TLS error", err)
	}
	plain, _ := client.New(e.c.URL(), secret, client.Options{Timeout: 5 * time.Second})
	if _, err := plain.Agents(ctx(t)); err == nil {
		t.Error("an unpinned client trusting only the system's roots accepted the self-signed certificate")
	}
}

func pinOf(b byte) string {
	s := make([]byte, 64)
	for i := range s {
		s[i] = "0123456789abcdef"[b%16]
	}
	return string(s)
}

// TestOperatorCert: the operator's certificate is served (not a
// self-signed one made), and a client trusting it as its CA file, with
// no pin, connects.
func TestOperatorCert(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM, err := certs.SelfSigned("fullpipe test", []string{"127.0.0.1", "localhost"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	crt, key := filepath.Join(dir, "op.crt"), filepath.Join(dir, "op.key")
	if err := errors.Join(os.WriteFile(crt, certPEM, 0o644), os.WriteFile(key, keyPEM, 0o600)); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	cfg := mergeTest(Config{Store: sqliteStore(t), StateDir: state})
	cfg.TLSCert, cfg.TLSKey = crt, key
	e := start(t, cfg)
	if _, err := os.Stat(filepath.Join(state, certFile)); err == nil {
		t.Error("a self-signed certificate was made beside the operator's")
	}
	secret, _ := os.ReadFile(filepath.Join(state, "admin.token"))
	cl, err := client.New(e.c.URL(), strings.TrimSpace(string(secret)), client.Options{CAFile: crt, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.Agents(ctx(t)); err != nil {
		t.Fatalf("a client trusting the operator's certificate: %v", err)
	}
	block, _ := pem.Decode(certPEM)
	if e.c.Pin() != certs.Pin(block.Bytes) {
		t.Errorf("pin %s is not the operator's certificate's", e.c.Pin())
	}
}
