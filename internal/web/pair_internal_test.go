package web

import (
	"encoding/json"
	"math"
	"reflect"
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
