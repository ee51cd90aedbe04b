// Package icmpping sends the single-ended tests' probes to any host, no
// responder needed: ICMP echo requests (an unprivileged ping socket where
// net.ipv4.ping_group_range allows it, else a raw socket, which needs
// CAP_NET_RAW), or UDP datagrams to a closed port whose ICMP
// port-unreachable errors come back on the socket's error queue
// (IP_RECVERR). Replies are matched by the run's token and each probe's
// sequence number carried in the payload (and the echo identifier),
// timed from the send to the kernel's receive stamp (SO_TIMESTAMPNS).
// IPv4 and IPv6. The fates are read by package ping (docs/single.md).
package icmpping

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fullpipe/fullpipe/internal/frame"
	"github.com/fullpipe/fullpipe/internal/ping"
)

// Probe is what a run sends.
type Probe string

// The probes.
const (
	Echo    Probe = "echo"    // ICMP echo requests, answered by echo replies
	Unreach Probe = "unreach" // UDP datagrams to a closed port, answered by ICMP port unreachable
)

// Limits of one run: they bound its memory (three words per probe) and
// the rate a Go timer paces honestly.
const (
	MaxCount    = 100_000
	MinInterval = 50 * time.Microsecond // 20,000 probes/s
	MinSize     = headerLen
	MaxSize     = frame.EthernetMTU - frame.IPv4UDP // a 1500-byte IPv4 packet's UDP payload or ICMP data (ICMP's header is as long as UDP's)
	maxSize6    = frame.EthernetMTU - frame.IPv6UDP // the same over IPv6
	headerLen   = 12                                // the run's token (8 bytes) and the probe's sequence number (4)
)

// Config is one run.
type Config struct {
	Dst      netip.Addr
	Probe    Probe
	Count    int
	Interval time.Duration
	Size     int           // ICMP data or UDP payload, bytes (≥ 12: the token and sequence number)
	Port     int           // Unreach: the closed UDP port
	Wait     time.Duration // after the last send, how long late replies are awaited
}

// Run is what a run saw.
type Run struct {
	Fates      []ping.Fate // in send order; Sent from the first send
	Socket     string      // "ping" (unprivileged ICMP datagram), "raw" or "udp"
	IPv6       bool
	Stamped    int    // replies timed by the kernel's receive stamp (the others by the read)
	Duplicates int    // replies to a probe already answered
	OtherICMP  int    // Unreach: ICMP errors other than port unreachable (host or net unreachable, prohibited...)
	Unmatched  int    // Unreach: errors quoting too little of the datagram to tell which probe
	SendErrors int    // probes the local stack refused to send (counted lost)
	LocalDrops uint32 // echo: datagrams this host's socket dropped for want of buffer (SO_RXQ_OVFL)
}

func (c Config) check() error {
	switch {
	case !c.Dst.IsValid():
		return fmt.Errorf("icmpping: no host")
	case c.Dst.Unmap().Is6() && c.Size > maxSize6:
		return fmt.Errorf("icmpping: size %d: an IPv6 probe carries at most %d bytes in %d", c.Size, maxSize6, frame.EthernetMTU)
	case c.Probe != Echo && c.Probe != Unreach:
		return fmt.Errorf("icmpping: probe %q: want %q or %q", c.Probe, Echo, Unreach)
	case c.Count < 1 || c.Count > MaxCount:
		return fmt.Errorf("icmpping: count %d: want 1 to %d", c.Count, MaxCount)
	case c.Interval < MinInterval:
		return fmt.Errorf("icmpping: interval %v is below %v", c.Interval, MinInterval)
	case c.Size < MinSize || c.Size > MaxSize:
		return fmt.Errorf("icmpping: size %d: want %d to %d bytes", c.Size, MinSize, MaxSize)
	case c.Probe == Unreach && (c.Port < 1 || c.Port > 65535):
		return fmt.Errorf("icmpping: port %d: want 1 to 65535", c.Port)
	case c.Wait <= 0 || c.Wait > time.Minute:
		return fmt.Errorf("icmpping: wait %v: want (0, 1m]", c.Wait)
	}
	return nil
}

// reply is one answer a socket read: the probe's sequence number, when
// it arrived, whether the kernel stamped that time, and the socket's
// count of datagrams dropped so far.
type reply struct {
	seq     uint32
	at      time.Time // wall clock of the kernel's stamp, or of the read
	mono    time.Time // the read, on the monotonic clock
	stamped bool
	drops   uint32
}

// conn is a socket that sends probe i and reads replies.
type conn interface {
	send(payload []byte, seq uint32) error
	// read returns the next reply of this run (token), or an error when
	// the deadline passes or the socket closes; skip counts what it read
	// that was not one.
	read(token []byte, deadline time.Time, r *Run) (reply, error)
	close() error
	kind() string
}

// Start opens the socket for cfg and runs it: Count probes Interval
// apart (each deadline the previous plus Interval, sent late rather than
// skipped when the process is behind), then a Wait for the last
// replies. onReply, when not nil, hears each reply (from the receiving
// goroutine). Stopped by ctx, the run returns what it saw with ctx's
// error.
func Start(ctx context.Context, cfg Config, onReply func(seq int, rtt time.Duration)) (*Run, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	var c conn
	var err error
	if cfg.Probe == Echo {
		c, err = openEcho(cfg.Dst.Unmap())
	} else {
		c, err = openUnreach(cfg.Dst.Unmap(), cfg.Port)
	}
	if err != nil {
		return nil, err
	}
	defer c.close()
	return run(ctx, c, cfg, onReply)
}

// probes are the send times of a run's probes, written by the sender and
// read by the receiver (atomics: a reply reads its probe's time while
// later probes are still being sent).
type probes struct {
	mono  []atomic.Int64 // ns since the run's start on the monotonic clock; 0 not sent
	wall  []atomic.Int64 // Unix ns
	start time.Time
}

func run(ctx context.Context, c conn, cfg Config, onReply func(int, time.Duration)) (*Run, error) {
	r := &Run{Socket: c.kind(), Fates: make([]ping.Fate, cfg.Count), IPv6: cfg.Dst.Unmap().Is6()}
	p := &probes{mono: make([]atomic.Int64, cfg.Count), wall: make([]atomic.Int64, cfg.Count), start: time.Now()}
	token := make([]byte, 8)
	_, _ = randRead(token)
	var sendErrs atomic.Int64
	var wg sync.WaitGroup
	lastSent := make(chan time.Time, 1) // the sender's last send; closed unsent when stopped
	wg.Add(1)
	go func() { // the sender: ends after the last probe or when ctx ends
		defer wg.Done()
		sendAll(ctx, c, cfg, p, token, &sendErrs, lastSent)
	}()
	err := receive(ctx, c, cfg, p, token, r, lastSent, onReply)
	wg.Wait()
	r.SendErrors = int(sendErrs.Load())
	for i := range r.Fates {
		r.Fates[i].Sent = time.Duration(p.mono[i].Load())
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return r, ctxErr
	}
	return r, err
}

// sendAll paces the probes; it sends lastSent the time of the last one
// and returns, or closes lastSent when stopped early.
func sendAll(ctx context.Context, c conn, cfg Config, p *probes, token []byte, errs *atomic.Int64, lastSent chan<- time.Time) {
	payload := make([]byte, cfg.Size)
	copy(payload, token)
	timer := time.NewTimer(0)
	defer timer.Stop()
	due := p.start
	for i := range cfg.Count {
		if wait := time.Until(due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				close(lastSent)
				return
			case <-timer.C:
			}
		} else if ctx.Err() != nil {
			close(lastSent)
			return
		}
		binary.BigEndian.PutUint32(payload[8:12], uint32(i))
		now := time.Now()
		p.wall[i].Store(now.UnixNano())
		p.mono[i].Store(max(int64(now.Sub(p.start)), 1))
		if err := c.send(payload, uint32(i)); err != nil {
			errs.Add(1)
		}
		due = due.Add(cfg.Interval)
	}
	lastSent <- time.Now()
}

// receive reads replies until every probe is answered, the Wait after
// the last send passes, or ctx ends.
func receive(ctx context.Context, c conn, cfg Config, p *probes, token []byte, r *Run, lastSent <-chan time.Time, onReply func(int, time.Duration)) error {
	end := time.Time{} // unknown until the last send
	answered := 0
	for answered < cfg.Count {
		deadline := time.Now().Add(50 * time.Millisecond) // short, so that ctx is heard
		if !end.IsZero() && end.Before(deadline) {
			deadline = end
		}
		select {
		case t, ok := <-lastSent:
			if !ok {
				return ctx.Err()
			}
			end, lastSent = t.Add(cfg.Wait), nil
			continue
		default:
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rep, err := c.read(token, deadline, r)
		if errors.Is(err, errTimeout) {
			if !end.IsZero() && !time.Now().Before(end) {
				return nil
			}
			continue
		}
		if err != nil {
			return err
		}
		if int(rep.seq) >= cfg.Count || p.mono[rep.seq].Load() == 0 {
			continue
		}
		r.LocalDrops = max(r.LocalDrops, rep.drops)
		f := &r.Fates[rep.seq]
		if f.Answered {
			r.Duplicates++
			continue
		}
		f.Answered, f.RTT = true, rtt(p, rep, r)
		answered++
		if onReply != nil {
			onReply(int(rep.seq), f.RTT)
		}
	}
	return nil
}

// rtt is the reply's round trip: from the send's wall clock to the
// kernel's stamp when it has one and it is consistent with the
// monotonic clock's (the wall clock did not step in between), else on
// the monotonic clock from the send to the read.
func rtt(p *probes, rep reply, r *Run) time.Duration {
	mono := rep.mono.Sub(p.start) - time.Duration(p.mono[rep.seq].Load())
	if rep.stamped {
		k := rep.at.Sub(time.Unix(0, p.wall[rep.seq].Load()))
		if k > 0 && k <= mono {
			r.Stamped++
			return k
		}
	}
	return mono
}

// randRead fills b from the system's random source: the run's token and
// the raw socket's echo identifier.
func randRead(b []byte) (int, error) { return crand.Read(b) }
