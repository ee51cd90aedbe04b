package kinds

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestExclusive: the throughput tests need their agents to themselves
// (two at once would measure each other); rtt, mtu and stamp share
// them at their defaults; a kind this build does not know is exclusive
// (the safe side), and asking its length names the kinds there are.
func TestExclusive(t *testing.T) {
	want := map[string]bool{"tcp": true, "udp": true, "trains": true, "rfc6349": true, "sweep-window": true, "sweep-msglen": true,
		"ping": true, "rfc2544": true, "y1564": true, "rtt": false, "mtu": false, "stamp": false}
	for _, k := range All() {
		w, ok := want[k.File]
		if !ok {
			t.Errorf("%s: no exclusivity said here", k.File)
			continue
		}
		if got := ExclusiveFor(k.File, nil); got != w || k.cost.Exclusive() != w {
			t.Errorf("%s: exclusive %v (kind %v), want %v", k.File, got, k.cost.Exclusive(), w)
		}
	}
	if !ExclusiveFor("fping", nil) {
		t.Error("an unknown kind is booked shared")
	}
	for _, name := range []string{"fping", "sweep window"} { // the document's test name is not the schedule's
		if _, err := Length(name, json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), `unknown test kind "`+name+`": want one of tcp, udp, rtt`) {
			t.Errorf("Length(%q): %v, want the kinds named", name, err)
		}
		if _, err := SlotFor(name, nil, 0); err == nil {
			t.Errorf("SlotFor(%q): no error", name)
		}
		if _, err := SharedRate(name, nil); err == nil {
			t.Errorf("SharedRate(%q): no error", name)
		}
	}
	if _, err := Length("udp", json.RawMessage(`{"rate_bps": -1}`)); err == nil || !strings.HasPrefix(err.Error(), "udp: ") {
		t.Errorf("a bad udp config: %v, want an error naming the kind", err)
	}
}
