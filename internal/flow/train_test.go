package flow

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/dispersion"
	"github.com/fullpipe/fullpipe/internal/sockopt"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// TestTrainLoopback: a train of 64 datagrams sent back to back over
// loopback into a socket with kernel receive stamps arrives whole, in
// order, at the rate it was sent (within 20 %, a loopback's scheduling),
// with no delay rise beyond a few ms; a datagram of another train
// (sequence out of range) and a second copy are not recorded.
func TestTrainLoopback(t *testing.T) {
	rx, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	_ = rx.SetReadBuffer(4 << 20)
	rc, _ := rx.SyscallConn()
	if err := sockopt.EnableRxStamps(rc); err != nil {
		t.Fatal(err)
	}
	tx, err := net.DialUDP("udp", nil, rx.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	const n, size = 64, 1000
	cookie := wire.NewCookie()
	sent, err := SendTrain(context.Background(), ConnWriter(tx), NewClock(), TrainSpec{Cookie: cookie, Packets: n, Size: size})
	if err != nil || sent.Packets != n {
		t.Fatalf("sent %d of %d: %v", sent.Packets, n, err)
	}
	extra := make([]byte, size)
	wire.PutUDP(extra, wire.UDPHeader{Type: wire.UDPData, Cookie: cookie, Seq: n + 5})
	_, _ = tx.Write(extra)
	rec := NewTrainRecorder(n, size, 28)
	buf, oob := make([]byte, 2048), make([]byte, sockopt.RxStampSpace)
	_ = rx.SetReadDeadline(time.Now().Add(2 * time.Second))
	for range n + 1 {
		m, oobn, _, _, err := rx.ReadMsgUDP(buf, oob)
		if err != nil {
			t.Fatal(err)
		}
		h, err := wire.ParseUDP(buf[:m])
		st := sockopt.ParseRxStamp(oob[:oobn])
		at := st.At
		if err != nil || !st.Stamped {
			t.Fatalf("datagram %v, stamp %v", err, st.Stamped)
		}
		rec.Add(h, at.UnixNano())
		if h.Seq == 3 {
			rec.Add(h, at.UnixNano()+1) // a duplicate
		}
	}
	r := rec.Reading()
	t.Logf("%+v", r)
	if r.Sent != n || r.Got != n || r.HeadPackets != n || r.Bytes != n*(size+28) || rec.dups != 1 {
		t.Fatalf("sent %d got %d head %d bytes %d dups %d; want %d whole, %d B, 1 duplicate", r.Sent, r.Got, r.HeadPackets, r.Bytes, rec.dups, n, n*(size+28))
	}
	if r.HeadBps < 0.8*r.SendBps {
		t.Errorf("arrived at %.0f bit/s, sent at %.0f: loopback does not space a train", r.HeadBps, r.SendBps)
	}
	if r.DelayRise > 5*time.Millisecond {
		t.Errorf("delay rose %v along a 64-packet train on loopback", r.DelayRise)
	}
}

// TestSendTrainHolds: a write that returns late after its stamp (here
// the writer blocks 3 ms in datagram 5's write, as a sender scheduled
// out in it is) is reported with its sequence number and at least that
// hold; the list stops at dispersion.MaxHolds; a recorder given the holds
// reads them into the packets and ignores holds outside the train.
func TestSendTrainHolds(t *testing.T) {
	const hold = 3 * time.Millisecond
	write := func(b []byte) error {
		h, err := wire.ParseUDP(b)
		if err != nil {
			return err
		}
		if h.Seq == 5 {
			time.Sleep(hold) // the write that blocks: real time is what SendTrain measures
		}
		return nil
	}
	sent, err := SendTrain(context.Background(), write, NewClock(), TrainSpec{Cookie: wire.NewCookie(), Packets: 16, Size: 200})
	if err != nil || sent.Packets != 16 {
		t.Fatalf("sent %d of 16: %v", sent.Packets, err)
	}
	i := slices.IndexFunc(sent.Held, func(h dispersion.Hold) bool { return h.Seq == 5 })
	if i < 0 || time.Duration(sent.Held[i].Ns) < hold {
		t.Fatalf("holds %+v: want seq 5 held at least %v", sent.Held, hold)
	}
	rec := NewTrainRecorder(16, 200, 28)
	rec.SetHeld(append(sent.Held, dispersion.Hold{Seq: 16, Ns: 1e6}, dispersion.Hold{Seq: -1, Ns: 1e6}, dispersion.Hold{Seq: 7, Ns: 1}))
	if got := rec.heldNs[5]; got != sent.Held[i].Ns {
		t.Errorf("recorder holds seq 5 for %d ns, want %d", got, sent.Held[i].Ns)
	}
	if rec.heldNs[7] != 0 && !slices.ContainsFunc(sent.Held, func(h dispersion.Hold) bool { return h.Seq == 7 }) {
		t.Errorf("a hold under dispersion.MinHold was recorded: %d ns", rec.heldNs[7])
	}

	// Every write held past MinHold: the list ends at MaxHolds.
	slow := func([]byte) error { // busy for MinHold (a sleep would be a timer's tick)
		for t0 := time.Now(); time.Since(t0) < dispersion.MinHold; {
		}
		return nil
	}
	sent, err = SendTrain(context.Background(), slow, NewClock(), TrainSpec{Cookie: wire.NewCookie(), Packets: dispersion.MaxHolds + 10, Size: 200})
	if err != nil || len(sent.Held) != dispersion.MaxHolds {
		t.Errorf("%d packets each held %v: %d holds reported (%v), want %d", dispersion.MaxHolds+10, dispersion.MinHold, len(sent.Held), err, dispersion.MaxHolds)
	}
}
