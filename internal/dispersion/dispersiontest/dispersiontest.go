// Package dispersiontest runs packet trains through the emulator's own link
// stages in virtual time: a fake network for tests of what sends and
// reads trains, with the physics of the lab's queues and policers.
package dispersiontest

import (
	"math/rand/v2"
	"time"

	"github.com/fullpipe/fullpipe/internal/dispersion"
	"github.com/fullpipe/fullpipe/internal/link"
)

// Send runs one train of n packets of ipBytes each (their size on the
// path), sent back to back at senderBps, through a fresh chain from mk.
// Each packet counts countBytes in the train's rates (what a receiver
// adds: headers, framing). Each receive time gets a uniform error in
// [0, noise) from rng (a receiver's stamps; rng may be nil with no noise).
func Send(mk func() *link.Chain, n, ipBytes, countBytes int, senderBps float64, noise time.Duration, rng *rand.Rand) dispersion.Train {
	gap := time.Duration(float64(ipBytes) * 8 / senderBps * 1e9)
	at := make([]time.Duration, n)
	for i := range at {
		at[i] = time.Duration(i) * gap
	}
	return run(mk, at, ipBytes, countBytes, noise, rng)
}

// SendHeldOnce is Send from a sender held once, for hold, between its
// stamp for packet at and that packet's write (as flow.SendTrain reports
// it, Held from dispersion.MinHold; at < 0: never): what fell due meanwhile
// leaves back to back at 10 × senderBps when it runs again, each packet
// stamped as it leaves, then the rest at its pace.
func SendHeldOnce(mk func() *link.Chain, n, ipBytes, countBytes int, senderBps float64, at int, hold, noise time.Duration, rng *rand.Rand) dispersion.Train {
	gap := time.Duration(float64(ipBytes) * 8 / senderBps * 1e9)
	leave := make([]time.Duration, n)
	for i := range leave {
		leave[i] = time.Duration(i) * gap
		switch {
		case i == at:
			leave[i] += hold
		case at >= 0 && i > at:
			leave[i] = max(leave[i], leave[i-1]+gap/10)
		}
	}
	t := run(mk, leave, ipBytes, countBytes, noise, rng)
	if at >= 0 && at < n && hold >= dispersion.MinHold {
		t[at].SentAt, t[at].Held = leave[at]-hold, hold
	}
	return t
}

// Pacer is a paced sender as flow.SendTrain is one on a busy host: it
// sleeps until a datagram is due within Lead, each sleep waking late by
// an exponentially distributed time of mean Overshoot (a busy host's
// timer and scheduler), and sends what is due by then back to back at
// BurstBps (its socket and device). Datagrams are due RateBps apart
// from the first.
type Pacer struct {
	RateBps   float64
	BurstBps  float64
	Lead      time.Duration
	Overshoot time.Duration
}

// SendPaced is Send with p's sender: a train whose head and tail leave in
// bursts after each late wake-up. The sender's stamps are the times the
// datagrams left (the sender stamps each just before its write). rng
// draws the wake-ups and the receive stamps' noise.
func SendPaced(mk func() *link.Chain, n, ipBytes, countBytes int, p Pacer, noise time.Duration, rng *rand.Rand) dispersion.Train {
	return SendHeld(mk, n, ipBytes, countBytes, p, 0, 0, false, noise, rng)
}

// SendHeld is SendPaced with a sender that is held, with probability
// holdP after each stamp, for an exponentially distributed time of mean
// hold before its datagram leaves (scheduled out between taking the
// stamp and the write): the datagram carries the earlier stamp. When
// report, each packet's Held is how long after its stamp it left, as
// flow.SendTrain reports it (from dispersion.MinHold); otherwise 0, a sender
// that does not say.
func SendHeld(mk func() *link.Chain, n, ipBytes, countBytes int, p Pacer, holdP float64, hold time.Duration, report bool, noise time.Duration, rng *rand.Rand) dispersion.Train {
	gap := time.Duration(float64(ipBytes) * 8 / p.RateBps * 1e9)
	burst := time.Duration(float64(ipBytes) * 8 / p.BurstBps * 1e9)
	stamps, at := make([]time.Duration, n), make([]time.Duration, n)
	var now time.Duration
	for i := range at {
		if due := time.Duration(i) * gap; due-now > p.Lead {
			now = due - p.Lead + time.Duration(rng.ExpFloat64()*float64(p.Overshoot))
		}
		stamps[i] = now
		if holdP > 0 && rng.Float64() < holdP { // no draw without holds: SendPaced's draws as before
			now += time.Duration(rng.ExpFloat64() * float64(hold))
		}
		at[i] = now
		now += burst
	}
	t := run(mk, at, ipBytes, countBytes, noise, rng)
	for i := range t {
		t[i].SentAt = stamps[i]
		if h := at[i] - stamps[i]; report && h >= dispersion.MinHold {
			t[i].Held = h
		}
	}
	return t
}

// run sends a packet of ipBytes at each of at (non-decreasing) through a
// fresh chain from mk and reads what arrived.
func run(mk func() *link.Chain, at []time.Duration, ipBytes, countBytes int, noise time.Duration, rng *rand.Rand) dispersion.Train {
	c := mk()
	t := make(dispersion.Train, len(at))
	index := map[*link.Packet]int{}
	deliver := func(p *link.Packet) {
		i := index[p]
		t[i].Got, t[i].RecvAt = true, p.Time
		if noise > 0 {
			t[i].RecvAt += time.Duration(rng.Int64N(int64(noise)))
		}
	}
	var end time.Duration
	for i, sent := range at {
		t[i] = dispersion.Packet{Bytes: countBytes, SentAt: sent}
		c.Advance(sent, deliver)
		p := &link.Packet{Data: make([]byte, ipBytes), Class: 1}
		index[p] = i
		c.Push(sent, p)
		end = sent
	}
	c.Advance(end+time.Hour, deliver)
	return t
}
