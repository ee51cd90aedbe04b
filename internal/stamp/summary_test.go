package stamp

import (
	"testing"
	"time"
)

// recs builds records 0..n−1, all sent; replied maps a sender sequence
// to the reflector's sequence in its reply.
func recs(n int, replied map[uint32]uint32) []Record {
	t0 := time.Unix(1000, 0)
	out := make([]Record, n)
	for i := range out {
		out[i] = Record{Seq: uint32(i), T1: t0}
		if rs, ok := replied[uint32(i)]; ok {
			out[i].Replies, out[i].ReflectorSeq, out[i].Arrival = 1, rs, i+1
			out[i].T2, out[i].T3, out[i].T4 = t0.Add(time.Millisecond), t0.Add(2*time.Millisecond), t0.Add(4*time.Millisecond)
		}
	}
	return out
}

// The law: between replies, the sender's gap minus the reflector's gap
// was lost on the way out, the reflector's gap on the way back.
func TestLossByDirection(t *testing.T) {
	cases := []struct {
		name               string
		n                  int
		replied            map[uint32]uint32
		fwd, back, unknown int
	}{
		{"none lost", 3, map[uint32]uint32{0: 0, 1: 1, 2: 2}, 0, 0, 0},
		{"first two lost out", 4, map[uint32]uint32{2: 0, 3: 1}, 2, 0, 0},
		{"first two lost back", 4, map[uint32]uint32{2: 2, 3: 3}, 0, 2, 0},
		{"one each way, then the tail", 6, map[uint32]uint32{0: 0, 3: 2}, 1, 1, 2},
		{"nothing came back", 5, nil, 0, 0, 5},
		{"a duplicate on the way out", 3, map[uint32]uint32{0: 0, 1: 2, 2: 3}, 0, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := Summarize(recs(c.n, c.replied), true)
			if res.LostForward != c.fwd || res.LostBackward != c.back || res.LostUnknown != c.unknown || res.Lost != c.fwd+c.back+c.unknown {
				t.Errorf("forward %d back %d unknown %d (lost %d); want %d %d %d",
					res.LostForward, res.LostBackward, res.LostUnknown, res.Lost, c.fwd, c.back, c.unknown)
			}
			// (T4−T1) − (T3−T2) = 4 ms − 1 ms.
			if res.Received > 0 && (res.RTT.MinUs != 3000 || res.RTT.MaxUs != 3000 || res.Residence.MaxUs != 1000) {
				t.Errorf("RTT %+v residence %+v: want 3 ms and 1 ms", res.RTT, res.Residence)
			}
		})
	}
}
