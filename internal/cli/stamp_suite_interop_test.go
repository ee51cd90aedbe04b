package cli

// Interop with asmie/stamp-suite 1.0.0 (Rust, RFC 8762/8972, MIT), an
// independent STAMP implementation published on crates.io, run as a real
// second process: its sender against `fullpipe reflector`, and `fullpipe
// stamp` against its reflector, on loopback and, as root, across a lab
// path. .ci/run builds it with `cargo install` and names it with
// FULLPIPE_STAMP_SUITE; otherwise a `stamp-suite` on PATH is used, or
// the tests skip (fail with FULLPIPE_REQUIRE_STAMP_SUITE=1, as CI sets).
// Both sides write NTP timestamps: stamp-suite writes UTC seconds into
// PTP ones, 37 s off ours (TAI), so one-way delays are checked in NTP.

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/lab"
	"github.com/fullpipe/fullpipe/internal/lab/labtest"
	"github.com/fullpipe/fullpipe/internal/result"
)

// stampSuitePath is the stamp-suite binary: FULLPIPE_STAMP_SUITE, else
// stamp-suite on PATH, else the test skips (or fails, in CI).
func stampSuitePath(t *testing.T) string {
	t.Helper()
	p := os.Getenv("FULLPIPE_STAMP_SUITE")
	if p == "" {
		p, _ = exec.LookPath("stamp-suite")
	}
	if p != "" {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	msg := "stamp-suite is not installed: cargo install stamp-suite --version 1.0.0 --locked, then put it on PATH or name it with FULLPIPE_STAMP_SUITE (" + p + ")"
	if os.Getenv("FULLPIPE_REQUIRE_STAMP_SUITE") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// interopKey is one HMAC key as each side takes it: a file for fullpipe,
// hex for stamp-suite.
type interopKey struct{ file, hex string }

// interopKeys writes the right key and a wrong one, 33 bytes each; their
// last byte is not a newline, which fullpipe would drop.
func interopKeys(t *testing.T) (right, wrong interopKey) {
	t.Helper()
	dir := t.TempDir()
	key := func(name, k string) interopKey {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(k), 0o600); err != nil {
			t.Fatal(err)
		}
		return interopKey{file, hex.EncodeToString([]byte(k))}
	}
	return key("stamp.key", "fullpipe-stamp-suite-interop-key!"), key("wrong.key", "not-the-key-fullpipe-was-given-!!")
}

// loopProbes is how many test packets each loopback interop run sends.
const loopProbes = 50

// ssSummary is what we check of stamp-suite sender's JSON summary
// (--output-format json). Delays are in ms.
type ssSummary struct {
	Sent         int     `json:"packets_sent"`
	Received     int     `json:"packets_received"`
	Lost         int     `json:"packets_lost"`
	MinRTT       float64 `json:"min_rtt_ms"`
	MaxRTT       float64 `json:"max_rtt_ms"`
	Measurements struct {
		LastReflectorSeq *int `json:"last_reflector_sequence"`
		Unknown          int  `json:"unknown_replies"`
		Duplicates       int  `json:"duplicate_replies"`
	} `json:"measurements"`
	OWD struct {
		Samples    int     `json:"samples"`
		ForwardMin float64 `json:"forward_min_ms"`
		ReverseMin float64 `json:"reverse_min_ms"`
	} `json:"owd"`
}

// stampSuiteSend runs stamp-suite's sender (argv: the command, e.g.
// inside a namespace, and its flags), 30 s at most, and decodes its
// summary.
func stampSuiteSend(t *testing.T, argv ...string) ssSummary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], "--output-format", "json", "-L", "1")...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%q: %v\n%s", argv, err, errb.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, `{"type":"summary"`) {
			var s ssSummary
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				t.Fatalf("stamp-suite summary: %v in %q", err, line)
			}
			return s
		}
	}
	t.Fatalf("%q printed no summary:\n%s\n%s", argv, out.String(), errb.String())
	return ssSummary{}
}

// waitLog waits until a daemon's output contains s, 10 s at most.
func waitLog(t *testing.T, out *logBuffer, s string) {
	t.Helper()
	if !out.waitContains(10*time.Second, s) {
		t.Fatalf("no %q after 10 s:\n%s", s, out.String())
	}
}

// ssReflectorTotal reads "Total packets <what>: N" from stamp-suite
// reflector's statistics, printed when it stops.
func ssReflectorTotal(t *testing.T, log, what string) int {
	t.Helper()
	m := regexp.MustCompile(`Total packets ` + what + `: (\d+)`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no total %s in stamp-suite's statistics:\n%s", what, log)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestStampSuiteSenderToReflector: stamp-suite's sender against fullpipe
// reflector on loopback, stateless, stateful and authenticated. Every
// probe is answered once; stamp-suite decodes our reply's fields: the
// sequence numbers (0..n−1, ours in stateful mode), our HMAC, and our
// NTP timestamps (its one-way delays on one host's clock are between 0
// and 1 s, not 37 s or an era off). A wrong key: no reply, all counted
// bad_auth by the reflector.
func TestStampSuiteSenderToReflector(t *testing.T) {
	ss := stampSuitePath(t)
	key, wrong := interopKeys(t)
	const n = loopProbes
	for _, c := range []struct {
		name      string
		reflector []string
		sender    []string
		replies   int
	}{
		{"stateless", nil, nil, n},
		{"stateful", []string{"--stateful"}, nil, n},
		{"authenticated", []string{"--stateful", "--key-file", key.file}, []string{"-A", "A", "--hmac-key", key.hex}, n},
		{"wrong key", []string{"--key-file", key.file}, []string{"-A", "A", "--hmac-key", wrong.hex}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := "127.0.0.1:" + strconv.Itoa(freeUDPPort(t))
			log, stop := daemon(t, append([]string{bin, "reflector", "--listen", addr}, c.reflector...)...)
			waitLog(t, log, "stamp reflector listening")
			host, port, _ := strings.Cut(addr, ":")
			s := stampSuiteSend(t, append([]string{ss, "-r", host, "-p", port, "-c", strconv.Itoa(n), "-d", "10"}, c.sender...)...)
			stop()
			reflected, badAuth := reflectorCounter(t, log.String(), "reflected"), reflectorCounter(t, log.String(), "bad_auth")
			if c.replies == 0 {
				if s.Sent != n || s.Received != 0 || reflected != 0 || badAuth != n {
					t.Errorf("wrong key: stamp-suite sent %d, received %d; reflector reflected %d, bad_auth %d; want %d sent, none answered, all bad_auth", s.Sent, s.Received, reflected, badAuth, n)
				}
				return
			}
			last := -1
			if s.Measurements.LastReflectorSeq != nil {
				last = *s.Measurements.LastReflectorSeq
			}
			if s.Sent != n || s.Received != n || s.Lost != 0 || s.Measurements.Unknown != 0 || s.Measurements.Duplicates != 0 || last != n-1 || reflected != n || badAuth != 0 {
				t.Errorf("stamp-suite %+v, reflector reflected %d, bad_auth %d; want %d sent and answered once, last reflector sequence %d", s, reflected, badAuth, n, n-1)
			}
			if s.MinRTT <= 0 || s.MaxRTT > 1000 || s.OWD.Samples != n || s.OWD.ForwardMin < 0 || s.OWD.ForwardMin > 1000 || s.OWD.ReverseMin < 0 || s.OWD.ReverseMin > 1000 {
				t.Errorf("stamp-suite delays: rtt %.3f..%.3f ms, one-way %+v; want round trips in (0, 1 s] and one-way minima in [0, 1 s] (one clock)", s.MinRTT, s.MaxRTT, s.OWD)
			}
			t.Logf("stamp-suite: %d/%d, rtt %.3f..%.3f ms, forward min %.3f ms, reverse min %.3f ms", s.Received, s.Sent, s.MinRTT, s.MaxRTT, s.OWD.ForwardMin, s.OWD.ReverseMin)
		})
	}
}

// TestStampToStampSuiteReflector: fullpipe stamp against stamp-suite's
// reflector on loopback, stateless, stateful and authenticated, both
// clocks stated synchronized (so our one-way delays are reported: on one
// host's clock they lie between 0 and 1 s). A wrong key gets no reply:
// exit status 3.
func TestStampToStampSuiteReflector(t *testing.T) {
	ss := stampSuitePath(t)
	key, wrong := interopKeys(t)
	const n = loopProbes
	for _, c := range []struct {
		name      string
		reflector []string
		sender    []string
	}{
		{"stateless", nil, nil},
		{"stateful", []string{"--stateful-reflector"}, []string{"--stateful"}},
		{"authenticated", []string{"--stateful-reflector", "-A", "A", "--hmac-key", key.hex}, []string{"--stateful", "--key-file", key.file}},
	} {
		t.Run(c.name, func(t *testing.T) {
			port := strconv.Itoa(freeUDPPort(t))
			log, stop := daemon(t, append([]string{ss, "-i", "-S", "127.0.0.1", "-o", port, "--clock-synchronized"}, c.reflector...)...)
			waitLog(t, log, "STAMP Reflector listening")
			d := stampRun(t, append([]string{bin, "stamp", "127.0.0.1:" + port, "-n", strconv.Itoa(n), "-i", "10ms", "--timeout", "500ms", "--clock-synced", "--json"}, c.sender...)...)
			if c.name == "authenticated" {
				if code, _, errs := runBin(t, "stamp", "127.0.0.1:"+port, "-n", "3", "-i", "10ms", "--timeout", "300ms", "--key-file", wrong.file); code != 3 {
					t.Errorf("a wrong key: exit %d, want 3 (no reply):\n%s", code, errs)
				}
			}
			stop()
			s := d.Summary
			if s.Sent != n || s.Received != n || s.Lost != 0 || s.Unknown != 0 || s.BadAuth != 0 || s.Duplicates != 0 || s.RTT.Count != n || s.RTT.MinUs <= 0 || s.Residence.MinUs < 0 || s.Residence.MaxUs > 1e6 {
				t.Errorf("%+v; want %d replies, residence in [0, 1 s]", s, n)
			}
			if s.Forward == nil || s.Backward == nil || s.Forward.MinUs < 0 || s.Forward.MaxUs > 1e6 || s.Backward.MinUs < 0 || s.Backward.MaxUs > 1e6 {
				t.Fatalf("one-way: %q, forward %+v, backward %+v; want both reported, in [0, 1 s]", s.OneWay, s.Forward, s.Backward)
			}
			if got := ssReflectorTotal(t, log.String(), "reflected"); got != n {
				t.Errorf("stamp-suite reflected %d, want %d:\n%s", got, n, log)
			}
			t.Logf("fullpipe stamp: %d/%d, rtt min %.1f µs, residence max %.1f µs, forward min %.1f µs, backward min %.1f µs", s.Received, s.Sent, s.RTT.MinUs, s.Residence.MaxUs, s.Forward.MinUs, s.Backward.MinUs)
		})
	}
}

// labTruth is what the lab's up direction (client → server) carried
// between two snapshots: the path's truth. Besides our n test packets the
// kernel sends a few of its own in a fresh namespace's first seconds
// (IPv6 router solicitations and the like: 2 up in 10 s of idle here);
// those are Stray, and the loss may hit them too, so of the Lost packets
// the lab dropped, between Lost − Stray and Lost were test packets.
type labTruth struct{ Stray, Lost int }

// labDelta reads the truth for n test packets sent up; nothing may be
// dropped down (the path has no loss there).
func labDelta(t *testing.T, before, after lab.Stats) labTruth {
	t.Helper()
	var downDropped uint64
	for cause, k := range after.Down.Drops {
		downDropped += k - before.Down.Drops[cause]
	}
	tr := labTruth{Stray: int(after.Up.RxPackets-before.Up.RxPackets) - labProbes, Lost: int(after.Up.Drops["loss"] - before.Up.Drops["loss"])}
	// Binomial: 200 × 0.1 = 20, σ = 4.2; ±4σ says the lab did drop.
	if tr.Stray < 0 || tr.Stray > 10 || tr.Lost < 3 || tr.Lost > 37+tr.Stray || downDropped != 0 {
		t.Fatalf("the lab carried %d packets besides the test's %d up (want a few at most), dropped %d up (want about 20), %d down (want 0)", tr.Stray, labProbes, tr.Lost, downDropped)
	}
	return tr
}

// droppedTest says whether lost test packets are what the lab dropped.
func (tr labTruth) droppedTest(lost int) bool { return lost <= tr.Lost && lost >= tr.Lost-tr.Stray }

// TestStampSuiteAcrossLab (root): across a lab path, 5 ms each way, 10 %
// random loss towards the server only (seed 8762), 200 probes 10 ms
// apart each way. The lab counts what it carried and dropped: that is the
// truth the counts are held to (exactly, but for the few packets of the
// kernel's own the lab also carried: labTruth). stamp-suite's sender → our stateful
// reflector: it lost what the lab dropped, and its last reply carries
// our count of what arrived (minus one: we number from 0). fullpipe
// stamp → stamp-suite's stateful reflector: every loss is placed forward
// (or after the last reply), none backward. Delays: the lab adds 5 ms
// one way, 10 ms round trip, as a minimum; its forwarding (a user-space
// TUN pipe) adds well under 2.5 ms per crossing, so minima are held to
// [5, 7.5) ms one way and [10, 15) ms round trip. One-way delays are
// real here: both namespaces read one clock.
func TestStampSuiteAcrossLab(t *testing.T) {
	ss := stampSuitePath(t)
	if os.Geteuid() != 0 {
		t.Skip("the lab needs root")
	}
	l := interopLab(t, "fpss")
	t.Run("stamp-suite to fullpipe reflector", func(t *testing.T) { labStampSuiteSender(t, l, ss) })
	t.Run("fullpipe stamp to stamp-suite reflector", func(t *testing.T) { labStampToStampSuite(t, l, ss) })
}

const labProbes = 200

func labStampSuiteSender(t *testing.T, l *lab.Lab, ss string) {
	server := l.Server.Addr.String()
	var s ssSummary
	var truth labTruth
	var got int
	labtest.Held(t, l, lab.CountBudget, func(int) {
		log, stop := daemon(t, inNS(l.Server.NetNS, bin, "reflector", "--listen", server+":862", "--stateful")...)
		waitLog(t, log, "stamp reflector listening")
		before := l.Snapshot()
		s = stampSuiteSend(t, inNS(l.Client.NetNS, ss, "-r", server, "-p", "862", "-c", strconv.Itoa(labProbes), "-d", "10")...)
		truth = labDelta(t, before, l.Snapshot())
		stop()
		got = reflectorCounter(t, log.String(), "received")
	})
	last := -1
	if s.Measurements.LastReflectorSeq != nil {
		last = *s.Measurements.LastReflectorSeq
	}
	if s.Sent != labProbes || !truth.droppedTest(labProbes-got) || s.Received != got || s.Lost != labProbes-got || last != got-1 || s.Measurements.Unknown != 0 || s.Measurements.Duplicates != 0 {
		t.Errorf("stamp-suite sent %d, received %d, lost %d, last reflector sequence %d; our reflector received %d; the lab %+v: want %d sent, lost = dropped, received = what arrived, last sequence = arrived − 1",
			s.Sent, s.Received, s.Lost, last, got, truth, labProbes)
	}
	if s.MinRTT < 10 || s.MinRTT >= 15 || s.OWD.ForwardMin < 5 || s.OWD.ForwardMin >= 7.5 || s.OWD.ReverseMin < 5 || s.OWD.ReverseMin >= 7.5 {
		t.Errorf("stamp-suite: rtt min %.3f ms, forward min %.3f ms, reverse min %.3f ms; want [10, 15), [5, 7.5), [5, 7.5)", s.MinRTT, s.OWD.ForwardMin, s.OWD.ReverseMin)
	}
	t.Logf("stamp-suite → fullpipe reflector: lab %+v of %d; stamp-suite lost %d, last reflector sequence %d; reflector received %d; rtt min %.3f ms, forward min %.3f ms, reverse min %.3f ms",
		truth, labProbes, s.Lost, last, got, s.MinRTT, s.OWD.ForwardMin, s.OWD.ReverseMin)
}

func labStampToStampSuite(t *testing.T, l *lab.Lab, ss string) {
	server := l.Server.Addr.String()
	var s result.STAMPSummary
	var truth labTruth
	var reflected int
	labtest.Held(t, l, lab.CountBudget, func(int) {
		log, stop := daemon(t, inNS(l.Server.NetNS, ss, "-i", "-S", server, "-o", "862", "--stateful-reflector", "--clock-synchronized")...)
		waitLog(t, log, "STAMP Reflector listening")
		before := l.Snapshot()
		d := stampRun(t, inNS(l.Client.NetNS, bin, "stamp", server, "-n", strconv.Itoa(labProbes), "-i", "10ms", "--stateful", "--clock-synced", "--json")...)
		truth = labDelta(t, before, l.Snapshot())
		stop()
		s = d.Summary
		reflected = ssReflectorTotal(t, log.String(), "reflected")
	})
	if s.Sent != labProbes || !truth.droppedTest(s.Lost) || s.LostForward+s.LostUnknown != s.Lost || s.LostBackward != 0 || reflected != s.Received || s.Unknown != 0 {
		t.Errorf("fullpipe stamp: lost %d (forward %d, backward %d, unknown %d) of %d, received %d; stamp-suite reflected %d; the lab %+v up: want lost = dropped, all forward, received = reflected",
			s.Lost, s.LostForward, s.LostBackward, s.LostUnknown, s.Sent, s.Received, reflected, truth)
	}
	if s.Forward == nil || s.Backward == nil {
		t.Fatalf("one-way not reported: %s", s.OneWay)
	}
	if s.RTT.MinUs < 10_000 || s.RTT.MinUs >= 15_000 || s.Forward.MinUs < 5_000 || s.Forward.MinUs >= 7_500 || s.Backward.MinUs < 5_000 || s.Backward.MinUs >= 7_500 {
		t.Errorf("fullpipe stamp: rtt min %.0f µs, forward min %.0f µs, backward min %.0f µs; want [10, 15) ms, [5, 7.5) ms, [5, 7.5) ms", s.RTT.MinUs, s.Forward.MinUs, s.Backward.MinUs)
	}
	t.Logf("fullpipe stamp → stamp-suite reflector: lab %+v of %d; lost forward %d, backward %d, unknown %d; stamp-suite reflected %d; rtt min %.0f µs, forward min %.0f µs, backward min %.0f µs, residence max %.0f µs",
		truth, labProbes, s.LostForward, s.LostBackward, s.LostUnknown, reflected, s.RTT.MinUs, s.Forward.MinUs, s.Backward.MinUs, s.Residence.MaxUs)
}
