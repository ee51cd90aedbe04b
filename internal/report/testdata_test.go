package report

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fullpipe/fullpipe/internal/result"
)

// keyFigures are what each old document's text and page must show: its
// headline figures with their units, as the documents in
// internal/result/testdata hold them.
var keyFigures = map[string]struct{ text, html []string }{
	"tcp": {[]string{"10.54 Gbit/s", "TCP Efficiency 99.871 %", "idle median 165 µs"},
		[]string{"10.54 Gbit/s", "99.871 %", "goodput per interval, by direction", "smoothed RTT per interval", "retransmitted segments per interval", "idle vs under the load"}},
	"udp": {[]string{"10.00 Mbit/s", "893 datagrams", "jitter 23 µs"},
		[]string{"10.00 Mbit/s", "893", "23 µs", "loss per interval", "jitter per interval"}},
	"rtt":          {[]string{"5 probes", "median 133 µs"}, []string{"133 µs", "186 µs", "round-trip time"}},
	"mtu":          {[]string{"65535 B (TCP MSS 65495 B"}, []string{"65535 B (TCP MSS 65495 B", "100.0 ms"}},
	"trains":       {[]string{"up: clean", "down: clean"}, []string{"up: clean", "down: clean", "400.2 Mbit/s"}},
	"rfc6349":      {[]string{"RFC 6349 verdict"}, []string{"Verdict:", "Window walk", "<svg"}},
	"sweep window": {[]string{"773.62 Mbit/s", "5,792 B (5.66 KiB)"}, []string{"773.62 Mbit/s", "5,792 B (5.66 KiB)", "goodput against the window"}},
	"stamp": {[]string{"5 STAMP test packets", "min 22 µs", "lost forward (tester → reflector) 0", "one way forward (T2 − T1), tester→reflector clock"},
		[]string{"22 µs", "118 µs", "reflector residence", "one way backward"}},
	"rfc2544":      {[]string{"84459", "LOSSY LINE", "BER 9.85e-07"}, []string{"84459", "A lossy line", "9.85e-07", "throughput against frame size", "frame loss against offered load", "86.49 Mbit/s"}},
	"sweep msglen": {[]string{"TCP goodput", "1,024 B (1.00 KiB)"}, []string{"TCP goodput", "UDP received", "1,024 B (1.00 KiB)"}},
	"ping":         {[]string{"5 probes, 5 answered", "median 0.030 ms", "no loss"}, []string{"0.030 ms", "0.039 ms", "every probe answered"}},
	"y1564":        {[]string{"data, up: FAIL", "not policed: IR 32.50 Mbit/s", "Y.1564 verdict: FAIL"}, []string{"Y.1564 verdict: FAIL", "32.50 Mbit/s", "not policed", "information rate per step", "<svg"}},
	// The documents beside one per kind (more): a udp stream's latency
	// probes, Y.1564's delay in ns (schema 1), each step's FTD and FDV.
	"udp-latency": {[]string{"89/89 probes", "min 30 µs, mean 87 µs, p50 76 µs, p90 101 µs, p99 1.18 ms, max 1.18 ms, IPDV 44 µs"},
		[]string{"30 µs", "87 µs", "76 µs", "101 µs", "1.18 ms", "44 µs"}},
	"y1564-delay": {[]string{"205 µs", "1.64 ms", "149.9 ms", "2.88 ms", "87.6 ms", "Y.1564 verdict: FAIL"},
		[]string{"205 µs", "1.64 ms", "149.9 ms", "2.88 ms", "87.6 ms", "Y.1564 verdict: FAIL"}},
}

// more are the testdata documents beside one per kind (its README): each
// file's kind.
var more = map[string]string{"udp-latency": "udp", "y1564-delay": "y1564"}

// renderers are the renderers by kind, as the table of kinds (package
// kinds, which imports this one) holds them; TestOldDocuments fails on a
// kind missing here.
var renderers = map[string]Renderer{"tcp": RenderTCP, "udp": RenderUDP, "rtt": RenderRTT, "mtu": RenderMTU, "trains": RenderTrains,
	"rfc6349": RenderRFC6349, "sweep-window": RenderWindowSweep, "sweep-msglen": RenderMsgLenSweep, "ping": RenderPing,
	"stamp": RenderSTAMP, "rfc2544": RenderRFC2544, "y1564": RenderY1564}

// TestOldDocuments: every document an earlier binary emitted
// (internal/result/testdata, schema 1, upgraded as it is decoded)
// decodes and renders as text and as a page, both showing its key
// figures with their units; the page is well formed and has no NaN or
// Inf. With REPORT_OUT=DIR set the pages are written there, to look at.
func TestOldDocuments(t *testing.T) {
	type doc struct{ file, kind, figures string }
	var docs []doc
	for _, k := range result.Kinds() {
		docs = append(docs, doc{k.File, k.File, k.Test})
	}
	for file, kind := range more {
		docs = append(docs, doc{file, kind, file})
	}
	for _, dc := range docs {
		t.Run(dc.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("..", "result", "testdata", dc.file+".json"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			d, err := result.Decode(f)
			if err != nil {
				t.Fatal(err)
			}
			r, ok := renderers[dc.kind]
			if !ok {
				t.Fatalf("no renderer for kind %q", dc.kind)
			}
			var text bytes.Buffer
			if err := r.Text(&text, d); err != nil {
				t.Fatal(err)
			}
			page, err := r.HTML(d)
			if err != nil {
				t.Fatal(err)
			}
			want, ok := keyFigures[dc.figures]
			if !ok {
				t.Fatalf("no key figures for %q: add them to keyFigures", dc.figures)
			}
			contains(t, "text", text.String(), want.text)
			contains(t, "page", string(page), want.html)
			wellFormed(t, page)
			if dir := os.Getenv("REPORT_OUT"); dir != "" {
				if err := os.WriteFile(filepath.Join(dir, "report-"+dc.file+".html"), page, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func contains(t *testing.T, what, got string, want []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q", what, w)
		}
	}
	if m := nonFinite.FindString(got); m != "" {
		t.Errorf("%s has %q", what, m)
	}
}

// nonFinite is what a formatted NaN, Inf or a bad verb looks like.
var nonFinite = regexp.MustCompile(`NaN|\bInf\b|%!`)
