package sockopt

import (
	"net"
	"testing"
	"time"
)

// TestRxTimestamp: a datagram read 50 ms after it arrived still carries
// its arrival time, to within the 20 ms a busy machine may add to the
// sender's own clock reading.
func TestRxTimestamp(t *testing.T) {
	rx, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	rc, _ := rx.SyscallConn()
	if err := EnableRxTimestamps(rc); err != nil {
		t.Fatal(err)
	}
	tx, err := net.DialUDP("udp", nil, rx.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	sent := time.Now()
	if _, err := tx.Write([]byte("stamp me")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the point: read late
	_ = rx.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf, oob := make([]byte, 64), make([]byte, RxTimestampSpace)
	n, oobn, _, _, err := rx.ReadMsgUDP(buf, oob)
	if err != nil || string(buf[:n]) != "stamp me" {
		t.Fatalf("read %q: %v", buf[:n], err)
	}
	at, ok := RxTimestamp(oob[:oobn])
	if !ok {
		t.Fatalf("no receive stamp in %d bytes of control messages", oobn)
	}
	if d := at.Sub(sent); d < 0 || d > 20*time.Millisecond {
		t.Fatalf("stamped %v after sending, want 0-20 ms (read 50 ms later)", d)
	}
	if _, ok := RxTimestamp(nil); ok {
		t.Fatal("a stamp from no control messages")
	}
}
