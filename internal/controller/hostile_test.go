package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/fleet/fleettest"
	"github.com/fullpipe/fullpipe/internal/kinds"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/testkit"
)

// TestForgedRTT: one agent token uploads a tcp result whose minimum RTT
// is 10^12 µs (11.6 days). Before, the pair's next run was booked for a
// year. The result is stored as sent, marked implausible, and the next
// run of the pair is sized at the default RTT, as if the pair had no
// figure; a plausible 1.5 s RTT (a double satellite hop) still sizes
// the slot.
func TestForgedRTT(t *testing.T) {
	e := start(t, Config{})
	a := e.agent("a", nil)
	e.agent("b", nil)
	forged := bytes.ReplaceAll(tcpDoc(t), []byte(`"rtt_min_us": 1`), []byte(`"rtt_min_us": 1000000000000`))
	run := bookOne(t, e, pairSchedule("a", "b"))
	if _, err := a.Upload(ctx(t), run.ID, fleet.Upload{State: fleet.RunFinished, Doc: forged}); err != nil {
		t.Fatal(err)
	}
	res, err := e.admin.Result(ctx(t), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Figures.RTTMs != 1e9 || !strings.Contains(res.Figures.Implausible, "minimum RTT") {
		t.Fatalf("the forged result's figures %+v: want its RTT kept, marked implausible", res.Figures)
	}
	next := bookOne(t, e, pairSchedule("a", "b"))
	wantSlot(t, next, e.c.cfg.DefaultRTT)
	if d := next.End.Sub(next.Start); d > time.Minute {
		t.Errorf("a forged RTT stretched the pair's slot to %v", d)
	}

	sat := bytes.ReplaceAll(tcpDoc(t), []byte(`"rtt_min_us": 1`), []byte(`"rtt_min_us": 1500000`))
	if _, err := a.Upload(ctx(t), next.ID, fleet.Upload{State: fleet.RunFinished, Doc: sat}); err != nil {
		t.Fatal(err)
	}
	wantSlot(t, bookOne(t, e, pairSchedule("a", "b")), slotRTT(1500*time.Millisecond))
}

// TestImplausible: each figure no path can give is named; a path's
// figures pass.
func TestImplausible(t *testing.T) {
	ok := fleet.Figures{ThroughputBps: 9e8, RTTMs: 1999, RTTLoadedMs: 5000, LossPct: 100}
	if why := implausible(ok, &result.TCP{}); why != "" {
		t.Errorf("a path's figures %+v: %s", ok, why)
	}
	stamp := func(res, rtt float64) *result.STAMP {
		var s result.STAMP
		s.Summary.Residence.MinUs, s.Summary.RTT.MinUs = res, rtt
		return &s
	}
	for _, c := range []struct {
		f    fleet.Figures
		d    result.Doc
		want string
	}{
		{fleet.Figures{RTTMs: 2001}, &result.TCP{}, "minimum RTT"},
		{fleet.Figures{RTTMs: -1}, &result.RTT{}, "minimum RTT"},
		{fleet.Figures{ThroughputBps: -1}, &result.TCP{}, "throughput"},
		{fleet.Figures{DownRTTLoadedMs: -3}, &result.TCP{}, "down loaded RTT"},
		{fleet.Figures{LossPct: 101}, &result.UDP{}, "loss"},
		{fleet.Figures{DownLossPct: -0.1}, &result.UDP{}, "loss"},
		{fleet.Figures{RTTMs: 1}, stamp(-5, 1000), "residence"},
		{fleet.Figures{RTTMs: 1}, stamp(5, -1000), "residence"},
	} {
		if why := implausible(c.f, c.d); !strings.Contains(why, c.want) {
			t.Errorf("%+v: %q, want it to name %q", c.f, why, c.want)
		}
	}
}

// TestUploadOnlyWhenExpected: a run cancelled before it started, or
// missed, takes no upload (409, nothing stored); a scheduled run takes
// one, and the same upload again is a retry (200, stored once). (A run
// cancelled while it ran keeps its partial document: agent's
// TestRunCancelled.)
func TestUploadOnlyWhenExpected(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	e := start(t, Config{Now: testkit.NewClock(now).Now})
	a := e.agent("a", nil)
	e.agent("b", nil)
	book := func(state fleet.RunState, at time.Duration) fleet.Run {
		t.Helper()
		r, err := e.st.Book(ctx(t), fleet.Run{Source: "a", Dest: "b", Test: fleet.Test{Kind: "tcp"}, Exclusive: true,
			Start: now.Add(at), End: now.Add(at + time.Second), State: fleet.RunScheduled, Created: now}, now.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if state != fleet.RunScheduled {
			if ok, err := e.st.SetRunState(ctx(t), r.ID, []fleet.RunState{fleet.RunScheduled}, state, "", now); !ok || err != nil {
				t.Fatalf("set %s: %v %v", state, ok, err)
			}
		}
		return r
	}
	up := fleet.Upload{State: fleet.RunFinished, Doc: tcpDoc(t)}
	for i, state := range []fleet.RunState{fleet.RunCancelled, fleet.RunMissed} {
		r := book(state, time.Duration(i+1)*time.Minute)
		_, err := a.Upload(ctx(t), r.ID, up)
		wantStatus(t, "upload to a "+string(state)+" run", err, http.StatusConflict)
		if _, err := e.admin.Result(ctx(t), r.ID); err == nil {
			t.Errorf("a %s run's refused upload was stored", state)
		}
	}
	r := book(fleet.RunScheduled, 10*time.Minute)
	for i, want := range []bool{true, false} {
		stored, err := a.Upload(ctx(t), r.ID, up)
		if err != nil || stored != want {
			t.Errorf("upload %d: stored %v, %v; want %v", i+1, stored, err, want)
		}
	}
	wantStatus(t, "a failure after the finish", func() error {
		_, err := a.Upload(ctx(t), r.ID, fleet.Upload{State: fleet.RunFailed, Error: "boom"})
		return err
	}(), http.StatusConflict)
}

// TestEventBounds: a run takes events while it runs and for eventGrace
// after it ended, not after (on the controller's clock, a manual one);
// never a cancelled run's; at most MaxRunEvents in all (413 for the
// batch past it, nothing of it stored); and reads come a page at a time.
func TestEventBounds(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	clock := testkit.NewClock(now)
	e := start(t, Config{Now: clock.Now})
	a := e.agent("a", nil)
	e.agent("b", nil)
	r, err := e.st.Book(ctx(t), fleet.Run{Source: "a", Dest: "b", Test: fleet.Test{Kind: "tcp"}, Exclusive: true,
		Start: now, End: now.Add(time.Second), State: fleet.RunScheduled, Created: now}, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	events := func(from, n int) []fleet.Event { return fleettest.LineEvents(now, from, n) }
	for from := 1; from <= MaxRunEvents; from += 2500 {
		if err := a.Events(ctx(t), r.ID, events(from, 2500)); err != nil {
			t.Fatalf("events from %d: %v", from, err)
		}
	}
	wantStatus(t, "an event past the run's cap", a.Events(ctx(t), r.ID, events(MaxRunEvents+1, 1)), http.StatusRequestEntityTooLarge)
	if n, _, err := e.st.EventsSize(ctx(t), r.ID); err != nil || n != MaxRunEvents {
		t.Errorf("stored %d events (%v), want the cap, %d", n, err, MaxRunEvents)
	}
	all, err := e.admin.RunEvents(ctx(t), r.ID, 0)
	if err != nil || len(all) != MaxRunEvents || all[len(all)-1].Seq != MaxRunEvents {
		t.Errorf("read back %d events (%v), want %d in pages", len(all), err, MaxRunEvents)
	}
	secret, err := os.ReadFile(filepath.Join(e.c.cfg.StateDir, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	code, fe := e.raw("GET", "/v1/runs/"+r.ID+"/events?limit=10001", strings.TrimSpace(string(secret)), nil)
	if code != http.StatusBadRequest {
		t.Errorf("a page of 10,001: %d %q, want 400", code, fe.Error)
	}

	// A run that ended takes events for eventGrace after its end.
	r2, err := e.st.Book(ctx(t), fleet.Run{Source: "a", Dest: "b", Test: fleet.Test{Kind: "rtt"},
		Start: now.Add(time.Minute), End: now.Add(2 * time.Minute), State: fleet.RunScheduled, Created: now}, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Upload(ctx(t), r2.ID, fleet.Upload{State: fleet.RunFailed, Error: "stopped"}); err != nil {
		t.Fatal(err)
	}
	ended, err := e.admin.Run(ctx(t), r2.ID)
	if err != nil {
		t.Fatal(err)
	}
	last := ended.End
	if ended.Finished.After(last) {
		last = ended.Finished
	}
	clock.Set(last.Add(eventGrace - time.Millisecond))
	if err := a.Events(ctx(t), r2.ID, events(1, 1)); err != nil {
		t.Errorf("an event within eventGrace of the run's end: %v", err)
	}
	clock.Set(last.Add(eventGrace))
	wantStatus(t, "an event eventGrace after the run ended", a.Events(ctx(t), r2.ID, events(2, 1)), http.StatusConflict)

	r3 := e.cancelledRun(last.Add(time.Hour))
	wantStatus(t, "a cancelled run's event", a.Events(ctx(t), r3.ID, events(1, 1)), http.StatusConflict)
}

// TestUploadBounded: the upload, a 15 MiB tcp document of empty
// streams (it took the controller from 26 MiB to 3.9 GiB), is refused
// 413 naming where, with the test process's allocations during it a
// small multiple of the body; while maxUploads uploads are being stored
// the next is 429 with Retry-After, and it goes once one ends.
func TestUploadBounded(t *testing.T) {
	e := start(t, Config{})
	a := e.agent("a", nil)
	e.agent("b", nil)
	run := bookOne(t, e, pairSchedule("a", "b"))
	doc := fleettest.EmptyStreams(15 << 20)
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	_, err := a.Upload(ctx(t), run.ID, fleet.Upload{State: fleet.RunFinished, Doc: doc})
	runtime.ReadMemStats(&m1)
	wantStatus(t, "16 MiB of empty streams", err, http.StatusRequestEntityTooLarge)
	alloc := (m1.TotalAlloc - m0.TotalAlloc) >> 20
	t.Logf("%v; the test process allocated %d MiB meanwhile (client and controller)", err, alloc)
	if alloc > 16*15 {
		t.Errorf("%d MiB allocated for a 15 MiB upload", alloc)
	}

	for range maxUploads {
		e.c.uploads <- struct{}{}
	}
	_, err = a.Upload(ctx(t), run.ID, fleet.Upload{State: fleet.RunFinished, Doc: tcpDoc(t)})
	wantStatus(t, "an upload while 4 are stored", err, http.StatusTooManyRequests)
	is, err := e.admin.Enrol(ctx(t), fleet.Enrolment{Name: "c"}) // any agent's token meets the limit first
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx(t), "PUT", e.c.URL()+"/v1/agent/runs/"+run.ID+"/result", strings.NewReader(`{"state":"failed","error":"x"}`))
	req.Header.Set("Authorization", "Bearer "+is.Secret)
	resp, err := e.httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("the 5th upload at once: %d, Retry-After %q; want 429, 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	<-e.c.uploads
	if _, err := a.Upload(ctx(t), run.ID, fleet.Upload{State: fleet.RunFinished, Doc: tcpDoc(t)}); err != nil {
		t.Errorf("an upload once one ended: %v", err)
	}
	for range maxUploads - 1 {
		<-e.c.uploads
	}
}

// TestResultsDocsStream: results with their documents are written one
// at a time from the store; the answer is the same list, each with its
// whole document, newest first, and limit bounds it.
func TestResultsDocsStream(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	clock := testkit.NewClock(now)
	e := start(t, Config{Now: clock.Now})
	a := e.agent("a", nil)
	e.agent("b", nil)
	var ids []string
	for i := range 3 {
		r, err := e.st.Book(ctx(t), fleet.Run{Source: "a", Dest: "b", Test: fleet.Test{Kind: "rtt"},
			Start: now.Add(time.Duration(i+1) * time.Hour), End: now.Add(time.Duration(i+1)*time.Hour + time.Minute), State: fleet.RunScheduled, Created: now}, now.Add(24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Upload(ctx(t), r.ID, fleet.Upload{State: fleet.RunFinished, Doc: rttDoc(t)}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
		clock.Set(clock.Now().Add(time.Millisecond)) // results are ordered by the controller's receive time, in ms
	}
	for _, c := range []struct{ limit, want int }{{0, 3}, {2, 2}} {
		rs, err := e.admin.Results(ctx(t), fleet.ResultFilter{Limit: c.limit}, true)
		if err != nil || len(rs) != c.want {
			t.Fatalf("limit %d: %d results (%v), want %d", c.limit, len(rs), err, c.want)
		}
		for i, r := range rs {
			if r.RunID != ids[len(ids)-1-i] || !json.Valid(r.Doc) || !bytes.Contains(r.Doc, []byte(`"test":"rtt"`)) {
				t.Errorf("limit %d, result %d: run %s, document %.60s", c.limit, i, r.RunID, r.Doc)
			}
		}
	}
	if rs, err := e.admin.Results(ctx(t), fleet.ResultFilter{Source: "nobody"}, true); err != nil || len(rs) != 0 {
		t.Errorf("no results with documents: %v, %v", rs, err)
	}
}

// TestRevokeCancelsRuns: revoking an agent (all its tokens, or its last
// one by ID) cancels its scheduled and running runs, so each peer's next
// orders list them cancelled and no longer accept their keys; a run of
// two other agents is left alone.
func TestRevokeCancelsRuns(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	e := start(t, Config{})
	e.agent("a", nil)
	b := e.agent("b", nil)
	e.agent("c", nil)
	is, err := e.admin.Enrol(ctx(t), fleet.Enrolment{Name: "d"}) // d's one token, revoked by ID below
	if err != nil {
		t.Fatal(err)
	}
	book := func(src string, at time.Duration) fleet.Run {
		t.Helper()
		r, err := e.st.Book(ctx(t), fleet.Run{Source: src, Dest: "b", Test: fleet.Test{Kind: "rtt"}, Key: []byte("k"),
			Start: now.Add(at), End: now.Add(at + time.Second), State: fleet.RunScheduled, Created: now}, now.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	fromA, fromC, fromD := book("a", 2*time.Second), book("c", 2*time.Second), book("d", 2*time.Second)
	if err := e.admin.RevokeAgent(ctx(t), "a"); err != nil {
		t.Fatal(err)
	}
	if err := e.admin.RevokeToken(ctx(t), is.ID); err != nil {
		t.Fatal(err)
	}
	o, err := b.Heartbeat(ctx(t), fleet.Heartbeat{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []fleet.Run{fromA, fromD} {
		got, _ := e.admin.Run(ctx(t), r.ID)
		if got.State != fleet.RunCancelled || !slices.Contains(o.Cancelled, r.ID) || slices.ContainsFunc(o.Accept, func(a fleet.Accept) bool { return a.RunID == r.ID }) {
			t.Errorf("run %s of a revoked source: %s; b's orders %+v: want it cancelled, listed so, not accepted", r.Source, got.State, o)
		}
	}
	if got, _ := e.admin.Run(ctx(t), fromC.ID); got.State != fleet.RunScheduled || !slices.ContainsFunc(o.Accept, func(a fleet.Accept) bool { return a.RunID == fromC.ID }) {
		t.Errorf("c's run: %s, accepted %v: want scheduled and accepted", got.State, o.Accept)
	}
}

// brokenStore is a store whose token and lease calls fail once broken.
type brokenStore struct {
	fleet.Store
	broken atomic.Bool
}

var errBroken = errors.New("store down: secret detail")

func (b *brokenStore) Tokens(ctx context.Context) ([]fleet.Token, error) {
	if b.broken.Load() {
		return nil, errBroken
	}
	return b.Store.Tokens(ctx)
}

func (b *brokenStore) Lease(ctx context.Context, name, holder string, ttl time.Duration, now time.Time) (bool, error) {
	if b.broken.Load() {
		return false, errBroken
	}
	return b.Store.Lease(ctx, name, holder, ttl, now)
}

// TestHealthzReadsNothing: /healthz answers from the scheduler's last
// lease renewal, not the store: with the store broken it still answers
// 200 until LeaseTTL has passed on the controller's clock (a manual
// one), then 503 saying nothing of the store's error; it never names the
// host.
func TestHealthzReadsNothing(t *testing.T) {
	clock := testkit.NewClock(time.Now().UTC())
	st := &brokenStore{Store: sqliteStore(t)}
	e := start(t, Config{Store: st, Now: clock.Now})
	health := func() (int, string) {
		t.Helper()
		resp, err := e.httpClient().Get(e.c.URL() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if !poll(5*time.Second, func() bool { c, _ := health(); return c == http.StatusOK }) {
		t.Fatal("never healthy")
	}
	host, _ := os.Hostname()
	st.broken.Store(true)
	if code, body := health(); code != http.StatusOK || strings.Contains(body, host) || strings.Contains(body, "holder") {
		t.Errorf("right after the store broke: %d %s; want 200 (nothing read), no host name", code, body)
	}
	clock.Set(clock.Now().Add(e.c.cfg.LeaseTTL + time.Millisecond))
	code, body := health()
	if code != http.StatusServiceUnavailable || strings.Contains(body, "secret") || strings.Contains(body, host) {
		t.Errorf("LeaseTTL after the store's last answer: %d %s; want 503 without the store's error", code, body)
	}
	st.broken.Store(false)
}

// TestHeartbeatBounded: a heartbeat listing more than maxRunningIDs runs
// (each outside the orders' window a store lookup) is refused; one at
// the bound is answered.
func TestHeartbeatBounded(t *testing.T) {
	e := start(t, Config{})
	a := e.agent("a", nil)
	ids := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%032x", i)
		}
		return out
	}
	if _, err := a.Heartbeat(ctx(t), fleet.Heartbeat{Running: ids(maxRunningIDs)}); err != nil {
		t.Errorf("%d running runs: %v", maxRunningIDs, err)
	}
	_, err := a.Heartbeat(ctx(t), fleet.Heartbeat{Running: ids(maxRunningIDs + 1)})
	wantStatus(t, "a heartbeat past the bound", err, http.StatusBadRequest)
}

// TestAgentAddresses: an agent connecting from 127.0.0.1 that advertises
// a third party's address (a rogue agent pointing every source's stamp,
// ping and unreach at it) gets it pending, not dialled: its runs are
// not booked (no address to dial) until an admin approves it, and it
// stays approved when the agent registers again. Addresses no
// responder can be at are refused with the address named.
func TestAgentAddresses(t *testing.T) {
	e := start(t, Config{})
	is, err := e.admin.Enrol(ctx(t), fleet.Enrolment{Name: "rogue"})
	if err != nil {
		t.Fatal(err)
	}
	rogue := e.client(is.Secret)
	reg := func(addrs ...string) (fleet.Agent, error) {
		return rogue.Register(ctx(t), fleet.Registration{Name: "rogue", Version: "test", Capabilities: kinds.Names(), Addresses: addrs})
	}
	for _, bad := range []string{"169.254.169.254:80", "[fd00:ec2::254]:80", "224.0.0.1:862", "0.0.0.0:862", "[fe80::1%eth0]:862", "255.255.255.255:9"} {
		_, err := reg(bad)
		wantStatus(t, "advertising "+bad, err, http.StatusBadRequest)
		if err != nil && !strings.Contains(err.Error(), bad) {
			t.Errorf("the refusal of %s does not name it: %v", bad, err)
		}
	}
	a, err := reg("127.0.0.1:6349", "198.18.0.9:6349", "victim.example:862")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Addresses, []string{"127.0.0.1:6349"}) || !slices.Equal(a.PendingAddresses, []string{"198.18.0.9:6349", "victim.example:862"}) {
		t.Fatalf("dialled %v, pending %v: want only the address it connects from dialled", a.Addresses, a.PendingAddresses)
	}
	a, err = reg("198.18.0.9:6349")
	if err != nil {
		t.Fatal(err)
	}
	e.agent("src", nil)
	sc, err := e.admin.CreateSchedule(ctx(t), fleet.Schedule{Name: "to the rogue", Test: fleet.Test{Kind: "rtt"},
		From: fleet.Selector{Agents: []string{"src"}}, To: fleet.Selector{Agents: []string{"rogue"}}})
	if err != nil {
		t.Fatal(err)
	}
	n := e.ticks()
	if !poll(5*time.Second, func() bool { return e.ticks() >= n+3 }) {
		t.Fatal("the scheduler did not tick")
	}
	if rs, _ := e.admin.Runs(ctx(t), fleet.RunFilter{Schedule: sc.ID}); len(rs) != 0 || len(a.Addresses) != 0 {
		t.Errorf("a run to an address not approved: %d runs, dialled %v", len(rs), a.Addresses)
	}
	if a, err = e.admin.ApproveAgent(ctx(t), "rogue"); err != nil || !slices.Equal(a.Addresses, []string{"198.18.0.9:6349"}) || len(a.PendingAddresses) != 0 {
		t.Fatalf("approve: %+v, %v", a, err)
	}
	if a, err = reg("198.18.0.9:6349"); err != nil || !slices.Equal(a.Addresses, []string{"198.18.0.9:6349"}) {
		t.Errorf("registered again after the approval: dialled %v (%v)", a.Addresses, err)
	}
	_, err = e.client(is.Secret).ApproveAgent(ctx(t), "rogue")
	wantStatus(t, "an agent approving itself", err, http.StatusForbidden)
}

// TestSpecialAddress: each range no responder can be at is named; a
// loopback address is another host's own unless the agent connects from
// loopback; ordinary and lab addresses pass.
func TestSpecialAddress(t *testing.T) {
	lo, lab := netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("198.18.0.1")
	for _, c := range []struct {
		ip   string
		from netip.Addr
		want string
	}{
		{"127.0.0.1", lab, "loopback"}, {"::1", lab, "loopback"}, {"127.0.0.1", lo, ""}, {"::ffff:127.0.0.1", lo, ""},
		{"169.254.169.254", lab, "link-local"}, {"fe80::1", lab, "link-local"}, {"fd00:ec2::254", lab, "metadata"},
		{"224.0.0.251", lab, "multicast"}, {"ff02::1", lab, "multicast"}, {"0.0.0.0", lab, "unspecified"}, {"::", lab, "unspecified"},
		{"255.255.255.255", lab, "broadcast"}, {"198.18.0.2", lab, ""}, {"203.0.113.7", lab, ""}, {"2001:db8::1", lab, ""},
	} {
		if got := specialAddress(netip.MustParseAddr(c.ip), c.from); c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("%s from %s: %q, want %q", c.ip, c.from, got, c.want)
		}
	}
}

// TestDestSharedCeiling: twelve sources each schedule a STAMP session of
// 1 Mbit/s (the fastest that shares) to one destination: the runs that
// would put it past DestSharedBps are moved after the first ones end,
// so at no instant does it get more than 10 Mbit/s of them. A faster
// session is booked exclusive.
func TestDestSharedCeiling(t *testing.T) {
	e := start(t, Config{})
	e.agent("dst", nil)
	var srcs []string
	for i := range 12 {
		n := fmt.Sprintf("s%02d", i)
		e.agent(n, nil)
		srcs = append(srcs, n)
	}
	sc, err := e.admin.CreateSchedule(ctx(t), fleet.Schedule{Name: "stamp mesh",
		Test: fleet.Test{Kind: "stamp", Config: json.RawMessage(`{"count":2000,"interval_ns":1000000,"size_bytes":97}`)},
		From: fleet.Selector{Agents: srcs}, To: fleet.Selector{Agents: []string{"dst"}}})
	if err != nil {
		t.Fatal(err)
	}
	rs := waitRuns(t, e, sc.ID, 12)
	if len(rs) != 12 {
		t.Fatalf("%d runs booked, want 12", len(rs))
	}
	most := 0
	for _, r := range rs {
		if r.Exclusive {
			t.Errorf("a 1 Mbit/s STAMP run was booked exclusive")
		}
		n := 0 // runs live at r's start
		for _, o := range rs {
			if !o.Start.After(r.Start) && o.End.After(r.Start) {
				n++
			}
		}
		most = max(most, n)
	}
	if most != 10 {
		t.Errorf("at most %d runs of 1 Mbit/s at once, want 10 (DestSharedBps)", most)
	}
	fast := bookOne(t, e, fleet.Schedule{Name: "fast", Test: fleet.Test{Kind: "stamp", Config: json.RawMessage(`{"interval_ns":100000,"size_bytes":1000}`)},
		From: fleet.Selector{Agents: []string{"s00"}}, To: fleet.Selector{Agents: []string{"dst"}}})
	if !fast.Exclusive {
		t.Errorf("an 80 Mbit/s STAMP run was booked shared")
	}
}

// TestDestSharedCeilingEarlier: shared runs that started before a new
// run's start still count while they last: ten STAMP sessions of 1
// Mbit/s to one destination, begun a second ago and lasting 30 min,
// push a new one past their end.
func TestDestSharedCeilingEarlier(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	e := start(t, Config{})
	e.agent("dst", nil)
	e.agent("src", nil)
	cfg := json.RawMessage(`{"count":2000,"interval_ns":1000000,"size_bytes":97}`)
	end := now.Add(30 * time.Minute)
	for range 10 {
		if _, err := e.st.Book(ctx(t), fleet.Run{Source: "src", Dest: "dst", Test: fleet.Test{Kind: "stamp", Config: cfg},
			Start: now.Add(-time.Second), End: end, State: fleet.RunScheduled, Created: now}, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	r := bookOne(t, e, fleet.Schedule{Name: "one more", Test: fleet.Test{Kind: "stamp", Config: cfg},
		From: fleet.Selector{Agents: []string{"src"}}, To: fleet.Selector{Agents: []string{"dst"}}})
	if r.Start.Before(end) {
		t.Errorf("a shared run booked at %v, beside ten of 1 Mbit/s until %v", r.Start, end)
	}
}
