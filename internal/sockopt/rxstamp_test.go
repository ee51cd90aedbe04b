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
	if err := EnableRxStamps(rc); err != nil {
		t.Fatal(err)
	}
	tx, err := net.DialUDP("udp", nil, rx.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	// The kernel turns arrival stamping on in deferred work when the
	// first socket of the system asks; until then a datagram is stamped
	// when it is read. So: up to 20 tries, each a datagram read 50 ms
	// after it was sent, until one carries its arrival time.
	buf, oob := make([]byte, 64), make([]byte, RxStampSpace)
	var st RxStamp
	var late time.Duration
	for try := 0; try < 20; try++ {
		sent := time.Now()
		if _, err := tx.Write([]byte("stamp me")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // real time: the point is a late read of a real socket, the kernel's stamp against the clock
		_ = rx.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, oobn, _, _, err := rx.ReadMsgUDP(buf, oob)
		if err != nil || string(buf[:n]) != "stamp me" {
			t.Fatalf("read %q: %v", buf[:n], err)
		}
		if st = ParseRxStamp(oob[:oobn]); !st.Stamped {
			t.Fatalf("no receive stamp in %d bytes of control messages", oobn)
		}
		if late = st.At.Sub(sent); late >= 0 && late < 20*time.Millisecond {
			break
		}
	}
	if late < 0 || late > 20*time.Millisecond {
		t.Fatalf("stamped %v after sending, want 0-20 ms (read 50 ms later)", late)
	}
	if st.Counted && st.Drops != 0 {
		t.Fatalf("%d drops counted on a socket that dropped nothing", st.Drops)
	}
	if st := ParseRxStamp(nil); st.Stamped || st.Counted {
		t.Fatal("a stamp from no control messages")
	}
}
