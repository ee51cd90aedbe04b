package tcpinfo

import (
	"io"
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

func TestFromRawUnits(t *testing.T) {
	raw := &unix.TCPInfo{Rtt: 1500, Rttvar: 250, Min_rtt: 1000, Snd_mss: 1448, Snd_cwnd: 10,
		Delivery_rate: 1_250_000, Busy_time: 2_000_000, Bytes_sent: 100, Bytes_retrans: 7}
	i := FromRaw(raw)
	if i.RTT.Microseconds() != 1500 || i.RTTVar.Microseconds() != 250 || i.MinRTT.Microseconds() != 1000 {
		t.Fatalf("rtt conversion: %+v", i)
	}
	if i.CwndBytes != 14480 {
		t.Fatalf("cwnd bytes = %d, want 14480", i.CwndBytes)
	}
	if i.DeliveryRateBps != 10_000_000 {
		t.Fatalf("delivery rate = %d bit/s, want 10,000,000", i.DeliveryRateBps)
	}
	if i.BusyTime.Seconds() != 2 {
		t.Fatalf("busy = %v", i.BusyTime)
	}
}

// TestOfLoopback moves a known number of bytes and checks the sender's
// TCP_INFO counts at least that many (bytes_sent includes retransmissions).
func TestOfLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan int64)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- -1
			return
		}
		n, _ := io.Copy(io.Discard, c)
		c.Close()
		done <- n
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	const total = 4 << 20
	if _, err := c.Write(make([]byte, total)); err != nil {
		t.Fatal(err)
	}
	tc := c.(*net.TCPConn)
	_ = tc.CloseWrite()
	if n := <-done; n != total {
		t.Fatalf("receiver got %d bytes", n)
	}
	i, err := Of(tc)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if i.BytesSent < total || i.BytesAcked < total {
		t.Fatalf("bytes_sent %d, bytes_acked %d, want >= %d", i.BytesSent, i.BytesAcked, total)
	}
	if i.SndMSS == 0 || i.RTT <= 0 {
		t.Fatalf("implausible info %+v", i)
	}
}
