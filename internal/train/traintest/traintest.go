// Package traintest runs packet trains through the emulator's own link
// stages in virtual time: a fake network for tests of what sends and
// reads trains, with the physics of the lab's queues and policers.
package traintest

import (
	"math/rand/v2"
	"time"

	"github.com/fullpipe/fullpipe/internal/link"
	"github.com/fullpipe/fullpipe/internal/train"
)

// Send runs one train of n packets of ipBytes each (their size on the
// path), sent back to back at senderBps, through a fresh chain from mk.
// Each packet counts countBytes in the train's rates (what a receiver
// adds: headers, framing). Each receive time gets a uniform error in
// [0, noise) from rng (a receiver's stamps; rng may be nil with no noise).
func Send(mk func() *link.Chain, n, ipBytes, countBytes int, senderBps float64, noise time.Duration, rng *rand.Rand) train.Train {
	c := mk()
	t := make(train.Train, n)
	gap := time.Duration(float64(ipBytes) * 8 / senderBps * 1e9)
	index := map[*link.Packet]int{}
	deliver := func(p *link.Packet) {
		i := index[p]
		t[i].Got, t[i].RecvAt = true, p.Time
		if noise > 0 {
			t[i].RecvAt += time.Duration(rng.Int64N(int64(noise)))
		}
	}
	for i := range t {
		at := time.Duration(i) * gap
		t[i] = train.Packet{Bytes: countBytes, SentAt: at}
		c.Advance(at, deliver)
		p := &link.Packet{Data: make([]byte, ipBytes), Class: 1}
		index[p] = i
		c.Push(at, p)
	}
	c.Advance(time.Duration(n)*gap+time.Hour, deliver)
	return t
}
