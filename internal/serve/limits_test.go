package serve

import (
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/flow"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// TestAddrKey: per-address limits count an IPv4 address alone and an
// IPv6 address by its /64 (one host usually holds a whole /64, so
// per-address caps keyed by the full address would not bind), and a
// v4-mapped address as its IPv4 address.
func TestAddrKey(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"2001:db8:1:2::1", "2001:db8:1:2:ffff::9"},
		{"::ffff:192.0.2.1", "192.0.2.1"},
	} {
		if addrKey(netip.MustParseAddr(tc.a)) != addrKey(netip.MustParseAddr(tc.b)) {
			t.Errorf("%s and %s count as different addresses", tc.a, tc.b)
		}
	}
	for _, tc := range []struct{ a, b string }{
		{"2001:db8:1:2::1", "2001:db8:1:3::1"},
		{"192.0.2.1", "192.0.2.2"},
	} {
		if addrKey(netip.MustParseAddr(tc.a)) == addrKey(netip.MustParseAddr(tc.b)) {
			t.Errorf("%s and %s count as one address", tc.a, tc.b)
		}
	}
}

// TestLimitsFromConfig: what the responder checks and announces is its
// filled configuration, field by field; allowlists are never nil (an
// empty one refuses every name, an unknown one would refuse none).
func TestLimitsFromConfig(t *testing.T) {
	s := socketless(t, Config{MaxStreams: 3, MaxDuration: time.Minute, MaxRateBps: 5e6, MaxWindow: 1 << 20, MaxWriteSize: 1 << 16,
		MaxProbeRate: 7, MaxTrainBytes: 1 << 22, AllowCC: []string{"no-such-cc"}, AllowDSCP: []int{0, 46}})
	want := wire.Limits{MaxStreams: 3, MaxDuration: time.Minute, MaxRateBps: 5e6, MaxWindow: 1 << 20, MaxWriteSize: 1 << 16,
		MaxProbeRate: 7, MaxTrainBytes: 1 << 22, AllowCC: []string{}, AllowDSCP: []int{0, 46}}
	if got := s.Limits(); !reflect.DeepEqual(got, want) {
		t.Errorf("limits %+v, want %+v", got, want)
	}
	d := socketless(t, Config{}).Limits()
	if d.MaxStreams != DefaultMaxStreams || d.MaxDuration != DefaultMaxDuration || d.MaxWriteSize != DefaultMaxWriteSize ||
		d.MaxProbeRate != DefaultMaxProbeRate || d.MaxTrainBytes != DefaultMaxTrainBytes || d.MaxWindow <= 0 || d.MaxRateBps != 0 ||
		d.AllowCC == nil || len(d.AllowDSCP) != 48 {
		t.Errorf("default limits %+v", d)
	}
	if flow.DefaultWriteSize != wire.DefaultWriteSize {
		t.Errorf("the sender writes %d bytes per call by default, the protocol says %d", flow.DefaultWriteSize, wire.DefaultWriteSize)
	}
}
