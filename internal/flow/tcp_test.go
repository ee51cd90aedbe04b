package flow

import (
	"context"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fullpipe/fullpipe/internal/testkit"
)

// tcpPair connects two TCP sockets over loopback.
func tcpPair(t *testing.T) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan *net.TCPConn, 1)
	go func() { // ends with the accept (the listener closes on return)
		c, _ := ln.AcceptTCP()
		accepted <- c
	}()
	client, err = net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// TestRecvCountsExactlyWhatWasSent: the receiver counts exactly the bytes
// the sender wrote, whether the kernel drops them (MSG_TRUNC), the kernel
// refuses MSG_TRUNC and the receiver falls back to copying, or it copies
// from the start; the series and the first/last stamps agree. The size is
// not a multiple of any read or write size, so a short or doubled count
// of one call shows.
func TestRecvCountsExactlyWhatWasSent(t *testing.T) {
	const total = 3*RecvSize + 4*DefaultWriteSize + 12_345
	refuse := func(uintptr, []byte) (int, error) { return 0, unix.EOPNOTSUPP }
	for _, tc := range []struct {
		name     string
		recv     recvFunc // nil: the real MSG_TRUNC receive
		copyOnly bool
		wantCopy bool // the discarder ends up copying
	}{
		{"MSG_TRUNC", nil, false, false},
		{"kernel refuses MSG_TRUNC", refuse, false, true},
		{"copying", nil, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := tcpPair(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var tx Counter
			sent := make(chan error, 1)
			go func() { sent <- SendTCP(ctx, client, SendSpec{Bytes: total, WriteSize: 100_000}, &tx) }()
			d := newDiscarder(server)
			if tc.recv != nil {
				d.recv = tc.recv
			}
			if tc.copyOnly {
				d.rc = nil
			}
			var rx Counter
			rx.Series = NewSeries(time.Minute)
			if err := recvCounted(ctx, d, NewClock(), &rx); err != nil {
				t.Fatal(err)
			}
			if err := <-sent; err != nil {
				t.Fatal(err)
			}
			if got := tx.Bytes.Load(); got != total {
				t.Errorf("sender counted %d bytes, want %d", got, total)
			}
			if got := rx.Bytes.Load(); got != total {
				t.Errorf("receiver counted %d bytes, want %d", got, total)
			}
			if w, want := tx.Writes.Load(), int64((total+99_999)/100_000); w != want {
				t.Errorf("%d writes of 100,000 B, want %d", w, want)
			}
			var binned int64
			for _, b := range rx.Series.Bins(0, rx.Series.Len()) {
				binned += b
			}
			if binned != total {
				t.Errorf("series holds %d bytes, want %d", binned, total)
			}
			if f, l := rx.FirstNs.Load(), rx.LastNs.Load(); f <= 0 || l < f {
				t.Errorf("first %d ns, last %d ns", f, l)
			}
			if copying := d.rc == nil; copying != tc.wantCopy {
				t.Errorf("copying %v, want %v", copying, tc.wantCopy)
			}
		})
	}
}

// TestRecvStopsWithContext: a receiver whose sender never closes returns
// nil once its context ends, in the MSG_TRUNC path as in the copying one.
func TestRecvStopsWithContext(t *testing.T) {
	for _, copyOnly := range []bool{false, true} {
		client, server := tcpPair(t)
		if _, err := client.Write(make([]byte, 1000)); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		d := newDiscarder(server)
		if copyOnly {
			d.rc = nil
		}
		var rx Counter
		start := time.Now()
		err := recvCounted(ctx, d, NewClock(), &rx)
		cancel()
		if err != nil {
			t.Errorf("copying %v: %v", copyOnly, err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("copying %v: returned after %v", copyOnly, took)
		}
		if got := rx.Bytes.Load(); got != 1000 {
			t.Errorf("copying %v: counted %d bytes, want 1000", copyOnly, got)
		}
	}
}

// TestSendCountsAsTheSocketTakes: a message larger than the socket can
// hold shows in the sender's counter before it is all written: the
// counter follows each system call, not each message.
func TestSendCountsAsTheSocketTakes(t *testing.T) {
	client, server := tcpPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var tx Counter
	sent := make(chan error, 1)
	const msg = 64 << 20 // far above loopback's autotuned send + receive buffers
	go func() { sent <- SendTCP(ctx, client, SendSpec{Bytes: msg, WriteSize: msg}, &tx) }()
	// nobody reads: the sender stalls once the buffers fill
	testkit.Poll(10*time.Second, func() bool { return tx.Bytes.Load() > 0 })
	if got := tx.Bytes.Load(); got == 0 || got >= msg {
		t.Fatalf("with the receiver stalled the sender counted %d of a %d-byte message", got, msg)
	}
	if w := tx.Writes.Load(); w != 0 {
		t.Errorf("%d messages counted before the first was written", w)
	}
	var rx Counter
	if err := RecvTCP(ctx, server, NewClock(), &rx); err != nil {
		t.Fatal(err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if rx.Bytes.Load() != msg || tx.Bytes.Load() != msg || tx.Writes.Load() != 1 {
		t.Errorf("sent %d in %d writes, received %d; want %d in 1", tx.Bytes.Load(), tx.Writes.Load(), rx.Bytes.Load(), msg)
	}
}
