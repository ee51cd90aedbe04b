package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/fullpipe/fullpipe/internal/link"
)

var nilSignal = syscall.Signal(0)

// Stats is a snapshot of both directions.
type Stats struct {
	Name    string         `json:"name"`
	UptimeS float64        `json:"uptime_s"`
	Up      DirectionStats `json:"up"`
	Down    DirectionStats `json:"down"`
}

// DirectionStats is one direction's counters and queue.
type DirectionStats struct {
	RxPackets     uint64            `json:"rx_packets"`
	RxBytes       uint64            `json:"rx_bytes"`
	TxPackets     uint64            `json:"forwarded_packets"`
	TxBytes       uint64            `json:"forwarded_bytes"`
	Drops         map[string]uint64 `json:"drops"` // by cause: queue, policer, loss, ber, mtu, cell
	ICMPSent      uint64            `json:"icmp_frag_needed_sent"`
	QueueBytes    int               `json:"queue_bytes"`     // waiting now, all bottleneck queues
	QueueMaxBytes int               `json:"queue_max_bytes"` // most ever waiting in one queue
	// The forwarder's own failures, never the path's (see overload.go):
	// packets the kernel dropped because the forwarder did not read them
	// in time (and super-packets the reader could not split); reads that
	// found packets waiting after the reader was away for more than
	// LateLimit; packets in failed TUN writes; packets written more than
	// LateLimit after their virtual departure. LabLimited is any of them.
	ReadDrops  uint64 `json:"forwarder_read_drops"`
	ReadStalls uint64 `json:"forwarder_read_stalls"`
	// InputWaits counts packets that waited in the input device more
	// than LateLimit before the forwarder read them (the kernel's stamp
	// of their entry, from a tap on the device): they entered the path
	// late. A figure, not part of LabLimited; a Budget judges the waits
	// by WaitHist. InputStamped says whether the device has a tap:
	// without, only waits while the reader was away are seen.
	InputWaits   uint64 `json:"forwarder_input_waits"`
	InputStamped bool   `json:"input_stamped"`
	WriteDrops   uint64 `json:"forwarder_write_drops"`
	LatePackets  uint64 `json:"late_packets"`
	LabLimited   bool   `json:"lab_limited"`
	// Why the writer wrote late (DirStats.WriterStalls): how often it
	// woke more than StallLimit after the time it asked for, a TUN write
	// took that long, and it waited that long for a reader's lock.
	// Figures that explain late_packets, not failures of their own.
	WriterWakesLate  uint64 `json:"forwarder_writer_wakes_late"`
	WriterWritesSlow uint64 `json:"forwarder_writer_writes_slow"`
	WriterLockWaits  uint64 `json:"forwarder_writer_lock_waits"`
	// LateHist counts the forwarded packets by how late after their
	// virtual departure they were written, in LateBucket (10 µs) steps,
	// trailing zeros trimmed (Lab.Mark, ByName: the lab judges itself).
	LateHist []uint64 `json:"late_hist_10us,omitempty"`
	// WaitHist counts the packets read by how long they may have waited
	// in the input device first (Mark.Waits), in the same steps.
	WaitHist []uint64 `json:"input_wait_hist_10us,omitempty"`
}

// Snapshot reads the counters.
func (l *Lab) Snapshot() Stats {
	s := Stats{Name: l.Name, UptimeS: time.Since(l.Started).Seconds()}
	for i, dst := range []*DirectionStats{&s.Up, &s.Down} {
		p := l.pipes[i]
		p.mu.Lock()
		*dst = readStats(l.stats[i], l.paths[i])
		p.mu.Unlock()
		dst.lossOnRead(tunDrops(l.ends[i])) // direction i reads end i's device
		dst.LateHist = trimZeros(p.histogram())
		dst.WaitHist = trimZeros(p.waits.read())
	}
	return s
}

func trimZeros(h []uint64) []uint64 {
	for len(h) > 0 && h[len(h)-1] == 0 {
		h = h[:len(h)-1]
	}
	return h
}

// lossOnRead adds the kernel's drops at the direction's input device
// (tunDrops, read outside the pipe's lock) and sets LabLimited.
func (d *DirectionStats) lossOnRead(n uint64) {
	d.ReadDrops += n
	d.LabLimited = d.ReadDrops+d.ReadStalls+d.WriteDrops+d.LatePackets > 0
}

// readStats reads one direction's counters and its path's queues; the
// caller holds the mutex that guards path.
func readStats(st *DirStats, path *Path) DirectionStats {
	d := DirectionStats{RxPackets: st.RxPackets.Load(), RxBytes: st.RxBytes.Load(),
		TxPackets: st.TxPackets.Load(), TxBytes: st.TxBytes.Load(), ICMPSent: st.ICMPSent.Load(),
		WriteDrops: st.WriteDrops.Load(), LatePackets: st.Late.Load(), ReadStalls: st.ReadStalls.Load(),
		InputWaits: st.InputWaits.Load(), InputStamped: st.Tapped.Load(),
		ReadDrops:       st.ReadErrors.Load(), // plus the kernel's, added by lossOnRead
		WriterWakesLate: st.WriterStalls[stallWake].Load(), WriterWritesSlow: st.WriterStalls[stallWrite].Load(),
		WriterLockWaits: st.WriterStalls[stallLock].Load(),
		Drops:           map[string]uint64{}, QueueBytes: path.Chain.QueuedBytes()}
	for _, c := range link.Causes() {
		d.Drops[c.String()] = st.Drops[c].Load()
	}
	for _, b := range path.Bottlenecks {
		d.QueueMaxBytes = max(d.QueueMaxBytes, b.MaxQueuedBytes())
	}
	d.LabLimited = d.ReadStalls+d.WriteDrops+d.LatePackets > 0
	return d
}

// routineStats answers each connection to the stats socket with one JSON
// snapshot. It ends when the listener is closed (Close) or ctx ends.
func (l *Lab) routineStats(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() { l.ln.Close() })
	defer stop()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		_ = json.NewEncoder(c).Encode(l.Snapshot())
		c.Close()
	}
}

// ReadStats asks a running lab for its statistics.
func ReadStats(name string) (*Stats, error) {
	if _, err := ReadState(name); err != nil {
		return nil, err
	}
	c, err := net.DialTimeout("unix", socketPath(name), 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("lab %q does not answer (%w); `fullpipe lab down --name %s` cleans up", name, err, name)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		return nil, err
	}
	var s Stats
	return &s, json.Unmarshal(b, &s)
}

// stopProcess sends SIGTERM, waits up to grace for the process to exit,
// then SIGKILL.
func stopProcess(pid int, grace time.Duration) {
	p, err := os.FindProcess(pid)
	if err != nil {
		return
	}
	_ = p.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = p.Signal(syscall.SIGKILL)
}
