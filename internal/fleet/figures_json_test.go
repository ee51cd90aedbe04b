package fleet

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// plainDecode is encoding/json's reading of b, the reference.
func plainDecode(b []byte) (Figures, error) {
	type plain Figures
	var p plain
	err := json.Unmarshal(b, &p)
	return Figures(p), err
}

// TestFiguresJSON: what the store writes reads back the same on the
// fast path, and every other input reads as encoding/json reads it.
func TestFiguresJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func() float64 {
		switch rng.IntN(4) {
		case 0:
			return 0
		case 1:
			return math.Round(rng.Float64() * 1e9)
		case 2:
			return rng.Float64() * 100
		}
		return rng.ExpFloat64() * 1e-7
	}
	for i := 0; i < 10_000; i++ {
		want := Figures{pick(), pick(), pick(), pick(), pick(), pick(), []string{"", "pass", "fail", "partial"}[rng.IntN(4)], rng.IntN(2) == 0,
			[]string{"", "minimum RTT 1e+09 ms: no path's is outside 0 to 2s", "loss 101 % is outside 0 to 100 %"}[rng.IntN(3)], // ASCII: others take the slow path,
			pick(), pick(), pick(), pick(), pick()}
		b, _ := json.Marshal(want)
		var fast Figures
		if !fast.scan(b) {
			t.Fatalf("the fast path refused what encoding/json wrote: %s", b)
		}
		if fast != want {
			t.Fatalf("%s: fast %+v, want %+v", b, fast, want)
		}
	}
	for _, in := range []string{
		`{}`, `{"rtt_ms":1}`, `{ "rtt_ms": 1 }`, `{"rtt_ms":1,"other":2}`, `{"verdict":"pa\"ss"}`, `{"verdict":null}`,
		`{"rtt_ms":01}`, `{"rtt_ms":+1}`, `{"rtt_ms":.5}`, `{"rtt_ms":1.}`, `{"rtt_ms":1e}`, `{"rtt_ms":-0.5e-3}`, `{"rtt_ms":1,}`,
		`{"rtt_ms":1}x`, `{"implausible":"a \"b\""}`, `{"implausible":"µs"}`, `{"partial":tru}`, `{"partial":true}`, `{"partial":false,"rtt_ms":2}`, `null`, ``, `{`, `{"rtt_ms"}`,
		`{"RTT_ms":3}`, `{"rtt_ms":1e400}`, `[1]`, `{"rtt_ms":"1"}`,
	} {
		var got Figures
		gotErr := json.Unmarshal([]byte(in), &got)
		want, wantErr := plainDecode([]byte(in))
		if (gotErr != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %+v (%v), encoding/json %+v (%v)", in, got, gotErr, want, wantErr)
		}
	}
}

// FuzzFiguresJSON: on any input, the fast path either declines or reads
// exactly what encoding/json reads.
func FuzzFiguresJSON(f *testing.F) {
	for _, s := range []string{`{"throughput_bps":9.3e+07,"rtt_ms":10.5,"verdict":"pass","partial":true}`, `{}`, `{"loss_pct":-0}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast Figures
		if !fast.scan(b) {
			return
		}
		want, err := plainDecode(b)
		if err != nil || fast != want {
			t.Fatalf("%q: fast %+v, encoding/json %+v (%v)", b, fast, want, err)
		}
	})
}

func BenchmarkFiguresJSON(b *testing.B) {
	in := []byte(`{"throughput_bps":92480000,"ideal_bps":94140000,"rtt_ms":20.1,"rtt_loaded_ms":21.3,"loss_pct":0.01,"buffer_delay_pct":6,"verdict":"pass","down_throughput_bps":93090000,"down_rtt_loaded_ms":21.2,"down_buffer_delay_pct":5.8}`)
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			var f Figures
			_ = f.UnmarshalJSON(in)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			_, _ = plainDecode(in)
		}
	})
}
