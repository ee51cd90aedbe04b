package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"time"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/fullpipe/fullpipe/internal/stats"
)

// The endpoints run as child processes inside the lab's namespaces (ip
// netns exec), so they do not share this process's Go runtime with the
// forwarder, as real endpoints would not. Each datagram carries its
// sequence number and the sender's CLOCK_MONOTONIC (one clock for every
// namespace), so the receiver measures one-way delay: 16 bytes, which
// fits the 18-byte payload of a 64-byte frame.

func mono() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// sendReport is what the sender prints.
type sendReport struct {
	Sent   int     `json:"sent"`
	Secs   float64 `json:"secs"`
	PPS    float64 `json:"pps"`
	Errors int     `json:"errors"`
}

// send paces size-byte datagrams to addr at pps for secs, in sendmmsg
// batches, on a locked thread sleeping with nanosleep and 1 ns slack.
// With -gso N each message is N datagrams in one UDP GSO send
// (UDP_SEGMENT), which the TUN device hands to the forwarder as one
// super-packet.
func send(args []string) error {
	fs := flag.NewFlagSet("send", flag.ExitOnError)
	to := fs.String("to", "", "destination host:port")
	size := fs.Int("size", 18, "UDP payload bytes (>= 16)")
	pps := fs.Float64("pps", 1000, "packets per second")
	secs := fs.Float64("secs", 5, "seconds")
	gso := fs.Int("gso", 1, "datagrams per GSO send (1 = no GSO; at most 64)")
	_ = fs.Parse(args)
	if *size < 16 || *gso < 1 || *gso > 64 {
		return errors.New("size below 16, or gso outside 1..64")
	}
	c, err := net.Dial("udp4", *to)
	if err != nil {
		return err
	}
	defer c.Close()
	uc := c.(*net.UDPConn)
	_ = uc.SetWriteBuffer(4 << 20)
	if *gso > 1 {
		rc, _ := uc.SyscallConn()
		_ = rc.Control(func(fd uintptr) { err = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_SEGMENT, *size) })
		if err != nil {
			return fmt.Errorf("UDP_SEGMENT: %w", err)
		}
	}
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	rep := pace(ipv4.NewPacketConn(uc), *size, *gso, *pps, *secs)
	return json.NewEncoder(os.Stdout).Encode(rep)
}

// pace sends gso datagrams per message, as many messages per sendmmsg
// as are due (at most 64).
func pace(pc *ipv4.PacketConn, size, gso int, pps, secs float64) sendReport {
	const batch = 64
	msgs := make([]ipv4.Message, batch)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, size*gso)}
	}
	rep := sendReport{}
	start := mono()
	end := start + int64(secs*1e9)
	for now := start; now < end; now = mono() {
		due := (int(float64(now-start)*pps/1e9) + gso - rep.Sent) / gso // messages
		if due <= 0 {
			ts := unix.NsecToTimespec(max(int64(1e9*float64(gso)/pps), 20_000))
			_ = unix.Nanosleep(&ts, nil)
			continue
		}
		n := min(due, batch)
		for i := range n {
			b := msgs[i].Buffers[0]
			for j := range gso {
				binary.LittleEndian.PutUint64(b[j*size:], uint64(rep.Sent+i*gso+j))
				binary.LittleEndian.PutUint64(b[j*size+8:], uint64(mono()))
			}
		}
		k, err := pc.WriteBatch(msgs[:n], 0)
		if err != nil {
			rep.Errors++
		}
		rep.Sent += max(k, 0) * gso
	}
	rep.Secs = float64(mono()-start) / 1e9
	rep.PPS = float64(rep.Sent) / rep.Secs
	return rep
}

// recvReport is what the receiver prints: packets, the rate between the
// first and the last, and one-way delay percentiles (sender's stamp to
// the receiver's clock after recvmmsg).
type recvReport struct {
	Received  int     `json:"received"`
	MaxSeq    int     `json:"max_seq"`
	PPS       float64 `json:"pps"`
	OWDMinMs  float64 `json:"owd_min_ms"`
	OWDP50Ms  float64 `json:"owd_p50_ms"`
	OWDP99Ms  float64 `json:"owd_p99_ms"`
	OWDMaxMs  float64 `json:"owd_max_ms"`
	SockDrops uint32  `json:"sock_drops"`
}

// recv counts datagrams on addr until idle for a second after the
// first, or for at most secs.
func recv(args []string) error {
	fs := flag.NewFlagSet("recv", flag.ExitOnError)
	addr := fs.String("l", "", "listen host:port")
	secs := fs.Float64("secs", 30, "at most this long")
	_ = fs.Parse(args)
	c, err := net.ListenPacket("udp4", *addr)
	if err != nil {
		return err
	}
	defer c.Close()
	uc := c.(*net.UDPConn)
	_ = uc.SetReadBuffer(4 << 20)
	fmt.Fprintln(os.Stderr, "ready", *addr)
	pc := ipv4.NewPacketConn(uc)
	msgs := make([]ipv4.Message, 64)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, 2048)}
	}
	rep := recvReport{}
	var owd []int64
	var first, last int64
	deadline := time.Now().Add(time.Duration(*secs * 1e9))
	for time.Now().Before(deadline) {
		idle := time.Second
		if rep.Received == 0 {
			idle = time.Until(deadline)
		}
		_ = uc.SetReadDeadline(time.Now().Add(idle))
		n, err := pc.ReadBatch(msgs, 0)
		if err != nil {
			break
		}
		now := mono()
		for _, m := range msgs[:n] {
			if m.N < 16 {
				continue
			}
			b := m.Buffers[0]
			rep.MaxSeq = max(rep.MaxSeq, int(binary.LittleEndian.Uint64(b[0:])))
			if len(owd) < 2_000_000 {
				owd = append(owd, now-int64(binary.LittleEndian.Uint64(b[8:])))
			}
			rep.Received++
		}
		if first == 0 {
			first = now
		}
		last = now
	}
	if rep.Received > 1 && last > first {
		rep.PPS = float64(rep.Received-1) / (float64(last-first) / 1e9)
	}
	rep.OWDMinMs, rep.OWDP50Ms, rep.OWDP99Ms, rep.OWDMaxMs = quantiles(owd)
	rep.SockDrops = sockDrops(uc)
	return json.NewEncoder(os.Stdout).Encode(rep)
}

// quantiles is the one-way delays v (ns) in ms: min, median, p99 (the
// project's nearest-rank percentiles) and max.
func quantiles(v []int64) (mn, p50, p99, mx float64) {
	if len(v) == 0 {
		return
	}
	ms := make([]float64, len(v))
	for i, ns := range v {
		ms[i] = float64(ns) / 1e6
	}
	slices.Sort(ms)
	return ms[0], stats.Percentile(ms, 50), stats.Percentile(ms, 99), ms[len(ms)-1]
}

// sockDrops reads SO_RXQ_OVFL-style drops from the socket's meminfo:
// SK_MEMINFO_DROPS (index 8).
func sockDrops(c *net.UDPConn) uint32 {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0
	}
	var drops uint32
	_ = rc.Control(func(fd uintptr) {
		var mi [9]uint32
		l := uint32(len(mi) * 4)
		if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_MEMINFO,
			uintptr(unsafe.Pointer(&mi)), uintptr(unsafe.Pointer(&l)), 0); e == 0 {
			drops = mi[8]
		}
	})
	return drops
}
