package report

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/rfc6349"
	"github.com/fullpipe/fullpipe/internal/sweep"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

func sample() *result.RFC6349 {
	return &result.RFC6349{
		MTU:  result.PathMTU{UpBytes: 1500, DownBytes: 1400, LocalBytes: 1500},
		RTT:  result.Baseline{BaselineMs: 20.1, Probes: 20},
		BB:   result.BB{UpBps: 100e6, DownBps: 100e6, CIRBps: 100e6},
		BDP:  result.BDP{UpBytes: 251_250, DownBytes: 251_250},
		Walk: []result.WalkRow{{Direction: "up", Percent: 25, WindowBytes: 62_812, Connections: 1, IdealBps: 25e6, ActualBps: 23.6e6, EfficiencyPct: 100}},
		Throughput: map[vocab.Direction]*result.ThroughputRow{vocab.Up: {WindowBytes: 251_250, Connections: 1, IdealBps: 94.1e6, ActualBps: 91.5e6, TTR: 1.03, EfficiencyPct: 100, Pass: true,
			Series: &result.TCPSeries{RateClock: "responder", RTTClock: "client", WindowS: 0.1,
				Rate: []result.RatePoint{{TS: 0.1, Bps: 40e6}, {TS: 0.15, Bps: 90e6}, {TS: 0.2, Bps: 93e6}},
				RTT:  []result.RTTPoint{{TS: 0.1, Us: 20_500}, {TS: 0.2, Us: 21_300}}}}},
		Sweep: map[vocab.Direction]*result.WindowSweep{vocab.Up: {
			Points: []sweep.WindowPoint{{WindowBytes: 84_000, GoodputBps: 32e6, Region: "linear"}, {WindowBytes: 336_000, GoodputBps: 92e6, DelayIncrementMs: 8.3, Region: "saturation"},
				{WindowBytes: 672_000, GoodputBps: 91.7e6, DelayIncrementMs: 11.8, RetransSegs: 168, Region: "overflow"}},
			Analysis: sweep.SweepAnalysis{PlateauBps: 92e6, BDPBytes: 239_000, OverflowEdgeBytes: 672_000, QueueBytes: 433_000, QueueMinBytes: 97_000}}},
		Shaping:   map[vocab.Direction]*result.ShapingRow{vocab.Up: {Verdict: vocab.Shaped, Detail: "shaped <b>"}},
		Verdict:   result.Verdict{Pass: false, Reasons: []string{"down: no throughput measured"}},
		Diagnosis: []rfc6349.Finding{{Cause: "mtu", Detail: "path MTU down is 1400 B ... black hole"}},
	}
}

// The report is one file: nothing fetched from a network, text escaped.
func TestHTMLSelfContained(t *testing.T) {
	page, err := RenderRFC6349.HTML(sample())
	if err != nil {
		t.Fatal(err)
	}
	h := string(page)
	if m := regexp.MustCompile(`(src|href)\s*=\s*["']?https?:`).FindString(h); m != "" {
		t.Fatalf("report fetches from the network: %s", m)
	}
	for _, want := range []string{"Verdict: FAIL", "<svg", "black hole", "shaped &lt;b&gt;", "94.10 Mbit/s",
		"up: rate and RTT over time", "up: window sweep", "queue ≈ 433000 B", "168 seg", "ideal 94.10 Mbit/s", "baseline 20.100 ms", "responder clock"} {
		if !strings.Contains(h, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	var b bytes.Buffer
	if err := RenderRFC6349.Text(&b, sample()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "verdict: FAIL") || !strings.Contains(b.String(), "[mtu]") {
		t.Errorf("text report: %s", b.String())
	}
}

// TestHTMLRendersInChromium renders the report in headless Chromium (the
// Debian package; CI installs it) and checks the rendered DOM and that a
// screenshot has content.
func TestHTMLRendersInChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (apt-get install -y chromium); CI installs it")
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "r.html")
	h, err := RenderRFC6349.HTML(sample())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, h, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + filepath.Join(dir, "profile")}
	dom, err := exec.CommandContext(ctx, bin, append(flags, "--dump-dom", "file://"+page)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	if !strings.Contains(string(dom), "Verdict: FAIL") || !strings.Contains(string(dom), "<rect") || !strings.Contains(string(dom), "<polyline") {
		t.Fatalf("rendered DOM lacks the verdict, the walk chart or the time chart")
	}
	shot := filepath.Join(dir, "r.png")
	cmd := exec.CommandContext(ctx, bin, append(flags, "--screenshot="+shot, "--window-size=1000,1400", "file://"+page)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	if st, err := os.Stat(shot); err != nil || st.Size() < 10_000 {
		t.Fatalf("screenshot missing or blank: %v", err)
	}
}
