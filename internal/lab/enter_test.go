package lab

import (
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/link"
	"golang.zx2c4.com/wireguard/tun"
)

// enterPipe is a pipe over a 1 ms delay path with no devices, its clock
// started a second ago; stamped says whether its inputs have taps.
func enterPipe(stamped bool) *pipe {
	st := &DirStats{}
	p := newPipe("up", nil, []tun.Device{nil}, []*DirStats{st}, []*DirStats{st}, time.Now().Add(-time.Second))
	p.stamped = stamped
	p.net = single{path: Build(Direction{Delay: time.Millisecond}, FramingNone, 1, p.dropper(st), nil)}
	return p
}

// enterAt enters one 28-byte IPv4 UDP packet per arrival time, as one read.
func enterAt(p *pipe, arrived ...time.Duration) {
	pks := make([]*link.Packet, len(arrived))
	sizes := make([]int, len(arrived))
	for i := range pks {
		pks[i] = p.free.get()
		ip := pks[i].Buf[headroom:]
		copy(ip, []byte{0x45, 0, 0, 28, 0, byte(i), 0, 0, 64, 17, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2})
		sizes[i] = 28
	}
	p.enter(0, pks, sizes, arrived)
}

// departures advances p's fabric past everything and returns the
// departures it delivered, in order.
func departures(p *pipe) []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advance(p.now() + time.Hour)
	var out []time.Duration
	for _, pk := range p.ready[0] {
		out = append(out, pk.Time)
	}
	p.ready[0] = nil
	return out
}

// TestEnterAtStamps: with taps, packets enter the emulated path at their
// stamps, so packets a late reader found waiting leave the path when
// their arrival says (1 ms after it here), not bunched after the read,
// even when the writer had advanced the idle path to now meanwhile; a
// packet stamped before something the path already did enters then
// (events stay in order). Without taps a packet enters at its read,
// after whatever the fabric was advanced to, as before.
func TestEnterAtStamps(t *testing.T) {
	p := enterPipe(true)
	now := p.now()
	p.mu.Lock()
	p.advance(now) // the writer's wake on an idle path
	p.mu.Unlock()
	a1, a2 := now-3*time.Millisecond, now-2900*time.Microsecond
	enterAt(p, a1, a2)
	if got := departures(p); len(got) != 2 || got[0] != a1+time.Millisecond || got[1] != a2+time.Millisecond {
		t.Errorf("departures %v, want %v and %v: 1 ms after each stamp", got, a1+time.Millisecond, a2+time.Millisecond)
	}
	enterAt(p, a1-5*time.Millisecond) // before the last departure the path made
	if got := departures(p); len(got) != 1 || got[0] != a2+2*time.Millisecond {
		t.Errorf("a packet stamped before the path's last event left at %v, want %v: entered at that event", got, a2+2*time.Millisecond)
	}

	q := enterPipe(false)
	now = q.now()
	q.mu.Lock()
	q.advance(now)
	q.mu.Unlock()
	enterAt(q, now-3*time.Millisecond)
	if got := departures(q); len(got) != 1 || got[0] < now+time.Millisecond {
		t.Errorf("without taps a packet left at %v, want from %v: entered at its read", got, now+time.Millisecond)
	}
}
