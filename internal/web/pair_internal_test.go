package web

import (
	"encoding/json"
	"math"
	"reflect"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"testing"
)

// TestAppendSeries: the hand-written history JSON says what
// encoding/json would, nulls and escapes included.
func TestAppendSeries(t *testing.T) {
	nan := math.NaN()
	all := []series{
		{Label: `a → "b"`, Pair: "a:b", Truncated: true, T: []int64{1, 2}, Tput: nums{92.48, nan}, Down: nums{nan, 1e-7},
			RTT: nums{10, 20}, RTTL: nums{nan, nan}, Loss: nums{0, 0.01}, Delay: nums{123456, 0.5}},
		{Label: "c → d", Pair: "c:d", T: []int64{}, Tput: nums{}, Down: nums{}, RTT: nums{}, RTTL: nums{}, Loss: nums{}, Delay: nums{}},
	}
	var got, want any
	if err := json.Unmarshal(appendSeries(nil, 5, 6, all), &got); err != nil {
		t.Fatalf("not JSON: %v: %s", err, appendSeries(nil, 5, 6, all))
	}
	ref, _ := json.Marshal(map[string]any{"from": 5, "to": 6, "pairs": all})
	if err := json.Unmarshal(ref, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("hand-written\n%v\nencoding/json\n%v", got, want)
	}
}

// TestSeriesPassesImplausible: a result marked implausible (a forged RTT
// of 10^9 ms) is a gap in every chart, not a point that flattens the
// others; its neighbours stay.
func TestSeriesPassesImplausible(t *testing.T) {
	rs := []fleet.Result{ // newest first
		{Received: time.Unix(3, 0), Figures: fleet.Figures{ThroughputBps: 90e6, RTTMs: 20}},
		{Received: time.Unix(2, 0), Figures: fleet.Figures{ThroughputBps: 90e6, RTTMs: 1e9, Implausible: "minimum RTT"}},
		{Received: time.Unix(1, 0), Figures: fleet.Figures{ThroughputBps: 80e6, RTTMs: 21}},
	}
	s := seriesOf("a → b", rs)
	for name, col := range map[string]nums{"tput": s.Tput, "down": s.Down, "rtt": s.RTT, "rttl": s.RTTL, "loss": s.Loss, "delay": s.Delay} {
		if !math.IsNaN(col[1]) {
			t.Errorf("%s: the implausible result is %v, want a gap", name, col[1])
		}
	}
	if s.RTT[0] != 21 || s.RTT[2] != 20 || s.Tput[0] != 80 {
		t.Errorf("the plausible neighbours: rtt %v, tput %v", s.RTT, s.Tput)
	}
}
