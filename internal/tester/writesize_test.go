package tester

import (
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/flow"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/serve"
)

// TestWriteSizeReachesBothSenders: the request's write size is what each
// sender uses: bytes / writes equals it (all writes full but the last,
// cut by the deadline), for the client sending and the responder sending;
// without it the sender writes flow.DefaultWriteSize at a time.
func TestWriteSizeReachesBothSenders(t *testing.T) {
	_, addr := startServer(t, serve.Config{})
	for _, tc := range []struct {
		name    string
		reverse bool
		size    int
		want    int
	}{{"client 1000 B", false, 1000, 1000}, {"responder 1000 B", true, 1000, 1000}, {"responder default", true, 0, flow.DefaultWriteSize}} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := RunTCP(testCtx(t, 20*time.Second), Target{Addr: addr}, result.TCPConfig{Streams: 1, Duration: 500 * time.Millisecond, Interval: 100 * time.Millisecond, Reverse: tc.reverse, WriteSize: tc.size}, nil)
			if err != nil {
				t.Fatal(err)
			}
			st := res.Summary.Streams[0]
			if st.Writes < 2 {
				t.Fatalf("writes %d", st.Writes)
			}
			full := st.Bytes / int64(tc.want)
			if st.Writes != full && st.Writes != full+1 {
				t.Errorf("%d bytes in %d writes, want %d-byte writes (%d or %d writes)", st.Bytes, st.Writes, tc.want, full, full+1)
			}
		})
	}
}
