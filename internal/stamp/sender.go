package stamp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/fullpipe/fullpipe/internal/sockopt"
)

// SenderConfig configures a Sender. Target is required; the rest have
// defaults.
type SenderConfig struct {
	Target   string        // the reflector, "host:port"
	Count    int           // packets to send; default 10, at most MaxCount
	Interval time.Duration // between sends, scheduled from the previous deadline; default 100 ms
	Size     int           // octets a packet; default SenderSize (AuthSize with Key); at least that
	Wait     time.Duration // how long after the last send replies are still awaited; default 1 s
	Format   Format        // our timestamps' format (T1); default NTP
	Key      []byte        // authenticated mode when set
	// Stateful says the reflector runs in stateful mode (its sequence
	// counts what it received from us), so losses can be told apart by
	// direction.
	Stateful bool
	// Synced sets the S bit of our Error Estimate: the caller knows our
	// clock is synchronized to UTC (NTP or PTP disciplined).
	Synced bool
}

// MaxCount bounds a Sender's packets: its records are kept in memory.
const MaxCount = 1_000_000

func (c SenderConfig) validate() (SenderConfig, error) {
	if c.Target == "" {
		return c, errors.New("stamp sender: no target: pass the reflector's host:port")
	}
	if c.Count <= 0 {
		c.Count = 10
	}
	if c.Count > MaxCount {
		return c, fmt.Errorf("stamp sender: count %d is over %d: send several sessions", c.Count, MaxCount)
	}
	if c.Interval <= 0 {
		c.Interval = 100 * time.Millisecond
	}
	if c.Wait <= 0 {
		c.Wait = time.Second
	}
	minSize := SenderSize
	if len(c.Key) > 0 {
		minSize = AuthSize
	}
	if c.Size == 0 {
		c.Size = minSize
	}
	if c.Size < minSize || c.Size > 65507 {
		return c, fmt.Errorf("stamp sender: size %d octets is outside %d..65507: pass a size in that range", c.Size, minSize)
	}
	return c, nil
}

// Record is one test packet's fate. Times are wall clock; T2 and T3 are
// the reflector's clock, T1 and T4 ours.
type Record struct {
	Seq          uint32
	T1           time.Time // we sent it
	T2           time.Time // the reflector received it (zero if no reply)
	T3           time.Time // the reflector sent its reply
	T4           time.Time // we received the reply (the kernel's stamp when there is one)
	ReflectorSeq uint32    // the reply's own sequence number
	Replies      int       // replies received: 0 lost, 2 or more duplicated
	Arrival      int       // the first reply's rank among first replies (1 is the first to come); 0 if none
	Synced       bool      // the first reply's Error Estimate had its S bit: the reflector's clock is synchronized
}

// Replied reports whether a reply came.
func (r Record) Replied() bool { return r.Replies > 0 }

// RTT is the round trip without the reflector's residence time:
// (T4−T1) − (T3−T2), RFC 8762 §4.
func (r Record) RTT() time.Duration { return r.T4.Sub(r.T1) - r.T3.Sub(r.T2) }

// Sender is a STAMP Session-Sender (RFC 8762 §4.2).
type Sender struct {
	cfg SenderConfig
	now func() time.Time
}

// NewSender validates cfg.
func NewSender(cfg SenderConfig) (*Sender, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	return &Sender{cfg: cfg, now: time.Now}, nil
}

// Run sends Count packets, one every Interval, waits Wait for the last
// replies, and returns every packet's record and their summary. It
// returns early, with what it has and ctx's error, when ctx is done.
func (s *Sender) Run(ctx context.Context) (Result, error) {
	raddr, err := net.ResolveUDPAddr("udp", s.cfg.Target)
	if err != nil {
		return Result{}, fmt.Errorf("stamp sender target %q: %w", s.cfg.Target, err)
	}
	conn, err := net.DialUDP("udp", nil, raddr)
	if err != nil {
		return Result{}, fmt.Errorf("stamp sender: %w", err)
	}
	defer conn.Close()
	kernel := false
	if rc, err := conn.SyscallConn(); err == nil {
		kernel = sockopt.EnableRxStamps(rc) == nil // T4 from the kernel when it can; else the clock after the read
	}
	recs := make([]Record, s.cfg.Count)
	var mu sync.Mutex // guards recs and extra between the send loop and the receiver
	var extra Counts  // and extra.arrivals
	done := make(chan struct{})
	// The receiver goroutine ends when conn is closed (after the wait, or
	// at ctx's end); done is closed by it.
	go func() {
		defer close(done)
		s.receive(conn, recs, &mu, &extra)
	}()
	sendErr := s.send(ctx, conn, recs, &mu)
	if sendErr == nil {
		t := time.NewTimer(s.cfg.Wait)
		select {
		case <-ctx.Done():
			sendErr = ctx.Err()
		case <-t.C:
		}
		t.Stop()
	}
	conn.Close()
	<-done
	res := Summarize(recs, s.cfg.Stateful)
	res.Unknown, res.BadAuth, res.KernelStamps = extra.Unknown, extra.BadAuth, kernel
	return res, sendErr
}

// send writes the packets on their schedule: deadline k is start + k ×
// Interval, so a late wake-up does not shift the ones after it.
func (s *Sender) send(ctx context.Context, conn *net.UDPConn, recs []Record, mu *sync.Mutex) error {
	buf := make([]byte, s.cfg.Size)
	est := EstimateFor(time.Millisecond, s.cfg.Format, s.cfg.Synced)
	start := s.now()
	t := time.NewTimer(0)
	defer t.Stop()
	for k := range recs {
		if k > 0 {
			t.Reset(start.Add(time.Duration(k) * s.cfg.Interval).Sub(s.now()))
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
			}
		}
		t1 := s.now()
		p := SenderPacket{Seq: uint32(k), Timestamp: Stamp(t1, s.cfg.Format), ErrorEstimate: est}
		var err error
		if len(s.cfg.Key) > 0 {
			err = EncodeSenderAuth(buf, p, s.cfg.Key)
		} else {
			err = EncodeSender(buf, p, false)
		}
		if err != nil {
			return err
		}
		mu.Lock()
		recs[k].Seq, recs[k].T1 = uint32(k), t1
		mu.Unlock()
		if _, err := conn.Write(buf); err != nil {
			return fmt.Errorf("stamp sender: send %d: %w", k, err)
		}
	}
	return nil
}

// Counts are replies that fit no record.
type Counts struct {
	Unknown int // undecodable, or a sequence number we did not send
	BadAuth int // authenticated mode: HMAC mismatch

	arrivals int // first replies so far
}

// receive reads replies until conn is closed.
func (s *Sender) receive(conn *net.UDPConn, recs []Record, mu *sync.Mutex, extra *Counts) {
	buf := make([]byte, 65536)
	oob := make([]byte, sockopt.RxStampSpace)
	for {
		n, oobn, _, _, err := conn.ReadMsgUDPAddrPort(buf, oob)
		t4 := s.now()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // e.g. ECONNREFUSED from an ICMP error: keep reading until closed
		}
		if st := sockopt.ParseRxStamp(oob[:oobn]); st.Stamped {
			t4 = st.At
		}
		if n >= ReflectedTimingMin && n < TWAMPReflectedMin && len(s.cfg.Key) == 0 {
			clear(buf[n:TWAMPReflectedMin]) // a TWAMP-Light reply without its Sender TTL: read it as 0
			n = TWAMPReflectedMin
		}
		var p ReflectorPacket
		if len(s.cfg.Key) > 0 {
			p, err = DecodeReflectorAuth(buf[:n], s.cfg.Key)
		} else {
			p, err = DecodeReflector(buf[:n])
		}
		mu.Lock()
		switch {
		case errors.Is(err, ErrHMAC):
			extra.BadAuth++
		case err != nil || int(p.SenderSeq) >= len(recs) || recs[p.SenderSeq].T1.IsZero():
			extra.Unknown++
		default:
			r := &recs[p.SenderSeq]
			r.Replies++
			if r.Replies == 1 {
				extra.arrivals++
				r.Arrival = extra.arrivals
				r.T2 = p.ReceiveTimestamp.Time(p.ErrorEstimate.Format)
				r.T3 = p.Timestamp.Time(p.ErrorEstimate.Format)
				r.T4, r.ReflectorSeq, r.Synced = t4, p.Seq, p.ErrorEstimate.Synced
			}
		}
		mu.Unlock()
	}
}
