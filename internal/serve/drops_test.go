package serve

import (
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/wire"
)

// TestUploadLocalDrops: an upload's local drops are the shared socket's
// drop count at its latest datagram minus the count at its first. The
// kernel attaches the count (SO_RXQ_OVFL) only once the socket has
// dropped one, so a first datagram without it is a baseline of 0: drops
// that happen during the upload all count, including the first ones.
func TestUploadLocalDrops(t *testing.T) {
	s := socketless(t, Config{})
	req := wire.Request{Kind: wire.KindUDP, RateBps: 1e6, Size: 100, Duration: time.Second}
	for _, tc := range []struct {
		name string
		rx   []rxInfo
		want uint64
	}{
		{"none counted", []rxInfo{{}, {}}, 0},
		{"first drops during the upload", []rxInfo{{}, {drops: 3, counted: true}, {drops: 5, counted: true}}, 5},
		{"drops before the upload", []rxInfo{{drops: 7, counted: true}, {drops: 9, counted: true}}, 2},
	} {
		ss := addSession(t, s, req)
		for i, rx := range tc.rx {
			ss.udpData(wire.UDPHeader{Type: wire.UDPData, Cookie: ss.cookie, Seq: uint64(i)}, req.Size, rx)
		}
		if got := ss.localDrops(); got != tc.want {
			t.Errorf("%s: local drops %d, want %d", tc.name, got, tc.want)
		}
		s.unregister(ss)
	}
}
