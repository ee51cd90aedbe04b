package result_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/fullpipe/fullpipe/internal/result"
)

// TestUpgradeFigures: reading a schema 1 document keeps every figure of
// its delays, in today's keys (docs/json.md, Schema versions): an
// RTTStats' median_us is its p50_us, Y.1564's delay in ns is the same in
// µs, and each distribution counts its received probes or replies. The
// old document's objects are matched with the new one's by path; the
// count of each old shape found is pinned, so an object the upgrade
// missed (left without its figures) fails here as well as one it got
// wrong. Encoding the upgraded document and decoding it again changes
// nothing.
func TestUpgradeFigures(t *testing.T) {
	for _, tc := range []struct {
		file string
		// schema 1's shapes: RTTStats (median_us), Y.1564's delay (ns), a
		// udp stream's latency (replies and p50_us), STAMP's (side)
		rttStats, ns, latency, stamp int
	}{
		{"tcp.json", 2, 0, 0, 0},
		{"rtt.json", 1, 0, 0, 0},
		{"ping.json", 1, 0, 0, 0},
		{"udp-latency.json", 0, 0, 1, 0},
		{"rfc2544.json", 0, 0, 12, 0},
		{"stamp.json", 0, 0, 0, 4},
		{"y1564-delay.json", 0, 7, 0, 0},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			d, err := result.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			again, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			var found [4]int
			pairs(t, "", tree(t, b), tree(t, again), func(path string, old, now map[string]any) {
				switch {
				case old["median_us"] != nil:
					found[0]++
					same(t, path, now, map[string]any{"p50_us": old["median_us"], "count": old["received"]})
					if now["median_us"] != nil {
						t.Errorf("%s: median_us kept beside p50_us", path)
					}
				case old["min_ns"] != nil:
					found[1]++
					for _, k := range []string{"min", "mean", "p99", "max"} {
						us, _ := now[k+"_us"].(float64)
						if ns := old[k+"_ns"].(float64); math.Abs(us*1e3-ns) > 1e-6 {
							t.Errorf("%s: %s_us %v, want %s_ns %v / 1000", path, k, now[k+"_us"], k, ns)
						}
					}
					same(t, path, now, map[string]any{"count": old["replies"], "probes": old["probes"], "replies": old["replies"]})
				case old["replies"] != nil && old["p50_us"] != nil:
					found[2]++
					same(t, path, now, map[string]any{"count": old["replies"]})
				case old["side"] != nil && old["p50_us"] != nil:
					found[3]++
					same(t, path, now, map[string]any{"count": old["count"], "stddev_us": 0.0})
				}
			})
			if want := [4]int{tc.rttStats, tc.ns, tc.latency, tc.stamp}; found != want {
				t.Errorf("schema 1 delay objects found (RTTStats, Y.1564 ns, udp latency, STAMP) %v, want %v", found, want)
			}
			d2, err := result.Decode(bytes.NewReader(again))
			if err != nil {
				t.Fatal(err)
			}
			if twice, _ := json.Marshal(d2); !bytes.Equal(twice, again) || d2.Head().UpgradedFrom != 1 {
				t.Errorf("decoding the upgraded document again changed it (upgraded from %d)", d2.Head().UpgradedFrom)
			}
		})
	}
}

// tree is JSON document b as maps, slices and float64s.
func tree(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// pairs calls f on each object of old with the object at the same path
// of now (a missing one fails).
func pairs(t *testing.T, path string, old, now any, f func(path string, old, now map[string]any)) {
	t.Helper()
	switch o := old.(type) {
	case map[string]any:
		n, ok := now.(map[string]any)
		if !ok {
			t.Errorf("%s: an object, now %T", path, now)
			return
		}
		f(path, o, n)
		for k, v := range o {
			pairs(t, path+"."+k, v, n[k], f)
		}
	case []any:
		n, ok := now.([]any)
		if !ok || len(n) != len(o) {
			t.Errorf("%s: %d elements, now %v", path, len(o), now)
			return
		}
		for i := range o {
			pairs(t, fmt.Sprintf("%s[%d]", path, i), o[i], n[i], f)
		}
	}
}

// same fails for each key of want whose value in now differs.
func same(t *testing.T, path string, now, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if now[k] != v {
			t.Errorf("%s.%s = %v, want %v", path, k, now[k], v)
		}
	}
}

// TestUpgradeAllocates: reading a schema 1 document allocates about what
// reading today's does, since its upgrade reads only the old keys into
// small types of its own: 4 MiB of unknown empty objects, which decoding
// skips (and DecodeBounded's budget counts as nothing), are not built as
// maps. A peer's document was bounded for today's types; its upgrade must
// not take more.
func TestUpgradeAllocates(t *testing.T) {
	doc := func(schema int) []byte {
		return fmt.Appendf(nil, `{"schema":%d,"test":"tcp","junk":[%s{}]}`, schema, strings.Repeat("{},", 1<<20))
	}
	alloc := func(b []byte) uint64 {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		if _, err := result.Decode(bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&m1)
		return m1.TotalAlloc - m0.TotalAlloc
	}
	today, old := alloc(doc(result.Schema)), alloc(doc(1))
	t.Logf("decoding %d bytes allocated %d as schema %d, %d as schema 1", len(doc(1)), today, result.Schema, old)
	if old > 2*today+1<<20 {
		t.Errorf("a schema 1 document took %d bytes to decode, today's %d: its upgrade should take at most as much again", old, today)
	}
}
