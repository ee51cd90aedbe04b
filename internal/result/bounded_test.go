package result

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// TestDecodeBoundedTestdata: every kind's real document decodes bounded,
// and its estimated decoded size is within DecodeFactor of its text with
// room to spare (a legitimate document's numbers take less as floats).
func TestDecodeBoundedTestdata(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.json")
	if len(files) < 12 {
		t.Fatalf("%d documents in testdata", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeBounded(b); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		d, _ := Decode(bytes.NewReader(b))
		s := &sizer{budget: 1 << 40}
		s.dec = newTokenDecoder(b)
		if err := s.value(reflect.TypeOf(d)); err != nil {
			t.Fatal(err)
		}
		if ratio := float64(s.total) / float64(len(b)); ratio > DecodeFactor/2 {
			t.Errorf("%s: decoded estimate %d B is %.2f × its %d B of text, want under %d/2", f, s.total, ratio, len(b), DecodeFactor)
		}
	}
}

// TestDecodeBoundedRefuses: the upload, 16 MiB of empty streams,
// is refused before decoding, naming where, with the process's heap
// grown by a few MiB (the decode it replaced took 3.9 GiB); so is a
// document nested past MaxDepth; a large one of numbers passes.
func TestDecodeBoundedRefuses(t *testing.T) {
	const head = `{"schema":1,"test":"tcp","summary":{"streams":[`
	var b bytes.Buffer
	b.WriteString(head)
	for b.Len() < 16<<20-10 {
		b.WriteString("{},")
	}
	b.WriteString("{}]}}")
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	_, err := DecodeBounded(b.Bytes())
	runtime.ReadMemStats(&m1)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), ".summary.streams[") {
		t.Fatalf("16 MiB of empty streams: %v", err)
	}
	t.Logf("%v; allocated %d MiB while refusing it", err, (m1.TotalAlloc-m0.TotalAlloc)>>20)
	if grew := (m1.TotalAlloc - m0.TotalAlloc) >> 20; grew > 256 {
		t.Errorf("refusing took %d MiB of allocations", grew)
	}

	deep := `{"schema":1,"test":"tcp","x":` + strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1) + "}"
	if _, err := DecodeBounded([]byte(deep)); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("nested %d deep: %v", MaxDepth+1, err)
	}

	b.Reset()
	b.WriteString(`{"schema":1,"test":"tcp","series":{"up":{"rate":[`)
	for i := 0; i < 200_000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"t_s":12.35,"bps":91234567}`)
	}
	b.WriteString(`]}}}`)
	if _, err := DecodeBounded(b.Bytes()); err != nil {
		t.Errorf("200,000 rate points (%d MiB): %v", b.Len()>>20, err)
	}
}
