package lab

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/link"
)

// udp4 builds an IPv4/UDP packet of ipLen bytes from src to dst:port,
// with valid IP and UDP checksums and seq in the first payload bytes.
func udp4(src, dst netip.Addr, port uint16, ipLen int, seq uint32) []byte {
	b := make([]byte, ipLen)
	b[0], b[8], b[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(b[2:], uint16(ipLen))
	s4, d4 := src.As4(), dst.As4()
	copy(b[12:16], s4[:])
	copy(b[16:20], d4[:])
	binary.BigEndian.PutUint16(b[10:], checksum(b[:20]))
	u := b[20:]
	binary.BigEndian.PutUint16(u[0:], 40000)
	binary.BigEndian.PutUint16(u[2:], port)
	binary.BigEndian.PutUint16(u[4:], uint16(len(u)))
	binary.BigEndian.PutUint32(u[8:], seq)
	pseudo := make([]byte, 12+len(u))
	copy(pseudo[0:4], s4[:])
	copy(pseudo[4:8], d4[:])
	pseudo[9] = 17
	binary.BigEndian.PutUint16(pseudo[10:], uint16(len(u)))
	copy(pseudo[12:], u)
	binary.BigEndian.PutUint16(u[6:], checksum(pseudo))
	return b
}

// TestWriteBurstOfSmallUDP writes 1,000 packets of one small UDP flow
// (46-byte IP packets: 64-byte frames) into the real server TUN device
// in one writeOut, as the writer does after a late wake-up. The tun
// package coalesces a flow's packets of one Write into a UDP GSO packet,
// and the kernel refuses one of more than UDP_MAX_SEGMENTS segments
// (EINVAL): before the writes were bounded to maxWriteBatch packets, the
// whole batch was lost and still counted as forwarded. Every packet must
// reach the socket, and the counters must say so.
func TestWriteBurstOfSmallUDP(t *testing.T) {
	needRoot(t)
	l, err := Up(Config{Name: "fpburst", Seed: 1, Framing: FramingEthernet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	var rc *net.UDPConn
	if err := l.InServer(func() error {
		var err error
		rc, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(l.Server.Addr, 9100)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	_ = rc.SetReadBuffer(4 << 20)
	const n = 1000
	p := l.pipes[0]
	now := p.now()
	batch := make([][]*link.Packet, 1)
	for i := range n {
		pk := p.free.get()
		pk.Data = pk.Buf[headroom : headroom+copy(pk.Buf[headroom:], udp4(l.Client.Addr, l.Server.Addr, 9100, 46, uint32(i)))]
		pk.Time = now
		batch[0] = append(batch[0], pk)
	}
	if _, err := p.writeOut(batch); err != nil {
		t.Fatalf("writeOut: %v", err)
	}
	got, buf := 0, make([]byte, 2048)
	for got < n {
		_ = rc.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := rc.Read(buf); err != nil {
			break
		}
		got++
	}
	st := l.stats[0]
	t.Logf("wrote %d packets in one writeOut: %d received, forwarded %d, write drops %d",
		n, got, st.TxPackets.Load(), st.WriteDrops.Load())
	if got != n || st.WriteDrops.Load() != 0 || st.TxPackets.Load() != n {
		t.Errorf("received %d of %d, forwarded %d, write drops %d; want all, all, 0",
			got, n, st.TxPackets.Load(), st.WriteDrops.Load())
	}
}

// TestLateCountsAsLabLimited: a packet written more than LateLimit after
// its virtual departure is counted and makes the direction lab-limited;
// one written within it does not.
func TestLateCountsAsLabLimited(t *testing.T) {
	var p pipe
	st := &DirStats{}
	p.written(st, &link.Packet{Time: 0}, LateLimit, LateLimit)
	if st.Late.Load() != 0 {
		t.Fatalf("a packet exactly LateLimit late counted as late")
	}
	path := Build(Direction{}, FramingEthernet, 1, nil, nil)
	if readStats(st, path).LabLimited {
		t.Fatal("lab-limited without a late packet")
	}
	p.written(st, &link.Packet{Time: 0}, LateLimit+time.Nanosecond, LateLimit+time.Nanosecond)
	if d := readStats(st, path); d.LatePackets != 1 || !d.LabLimited {
		t.Fatalf("late %d, lab-limited %v; want 1, true", d.LatePackets, d.LabLimited)
	}
}
