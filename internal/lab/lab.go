package lab

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/vishvananda/netns"
	"golang.zx2c4.com/wireguard/tun"

	"github.com/fullpipe/fullpipe/internal/frame"
)

// StateDir holds one JSON state file and one stats socket per running lab.
const StateDir = "/run/fullpipe/lab"

// End is one side of the path.
type End struct {
	NetNS string     `json:"netns"`
	Addr  netip.Addr `json:"addr"`
}

// State is what a running lab publishes for other commands (down, stats,
// exec) and for scripts (`lab up --json`).
type State struct {
	Name    string    `json:"name"`
	PID     int       `json:"pid"`
	Client  End       `json:"client"`
	Server  End       `json:"server"`
	Seed    uint64    `json:"seed"`
	Config  Config    `json:"config"`
	Started time.Time `json:"started"`
}

func statePath(name string) string  { return filepath.Join(StateDir, name+".json") }
func socketPath(name string) string { return filepath.Join(StateDir, name+".sock") }

// ReadState reads a running lab's state.
func ReadState(name string) (*State, error) {
	b, err := os.ReadFile(statePath(name))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no lab %q is up (no %s)", name, statePath(name))
		}
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("state of lab %q: %w", name, err)
	}
	return &s, nil
}

// Addresses of lab k: 198.18.k.1 (client) and 198.18.k.2 (server), inside
// the RFC 2544 benchmarking range 198.18.0.0/15.
func addrs(k int) (client, server netip.Addr) {
	return netip.AddrFrom4([4]byte{198, 18, byte(k), 1}), netip.AddrFrom4([4]byte{198, 18, byte(k), 2})
}

// slot picks the address block: the one name already had, or the lowest
// free one (the default lab "fp" gets 0 when free).
func slot(name string) int {
	used := map[int]bool{}
	files, _ := filepath.Glob(filepath.Join(StateDir, "*.json"))
	for _, f := range files {
		var s State
		if b, err := os.ReadFile(f); err == nil && json.Unmarshal(b, &s) == nil {
			k := int(s.Client.Addr.As4()[2])
			if s.Name == name {
				return k
			}
			if alive(s.PID) {
				used[k] = true
			}
		}
	}
	for k := range 256 {
		if !used[k] {
			return k
		}
	}
	return 255
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	return err == nil && p.Signal(nilSignal) == nil
}

// Lab is a running path.
type Lab struct {
	State
	ends  [2]netns.NsHandle
	tuns  [2]tun.Device
	taps  [2]*tap  // nil where none opened
	pipes [2]*pipe // up, down
	paths [2]*Path // the pipes' chains, for statistics
	stats [2]*DirStats
	ln    net.Listener
}

// Cleanup removes whatever a lab of this name left behind: a process still
// running it (asked to stop, then killed), namespaces, state. A second
// `up` calls it first, so a crashed run never blocks the next.
func Cleanup(name string) error {
	if s, err := ReadState(name); err == nil && s.PID != os.Getpid() && alive(s.PID) {
		stopProcess(s.PID, 5*time.Second)
	}
	var errs []error
	for _, side := range []string{"client", "server"} {
		if err := deleteNS(name + "-" + side); err != nil {
			errs = append(errs, err)
		}
	}
	_ = os.Remove(statePath(name))
	_ = os.Remove(socketPath(name))
	return errors.Join(errs...)
}

// Up builds the lab: namespaces, TUN devices, addresses, and the chains.
// Run then forwards; Close tears it all down.
func Up(cfg Config) (l *Lab, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("the lab needs root (network namespaces and TUN devices)")
	}
	if err := Cleanup(cfg.Name); err != nil {
		return nil, fmt.Errorf("clean up an earlier lab %q: %w", cfg.Name, err)
	}
	if err := os.MkdirAll(StateDir, 0o755); err != nil {
		return nil, err
	}
	k := slot(cfg.Name)
	ca, sa := addrs(k)
	l = &Lab{State: State{Name: cfg.Name, PID: os.Getpid(), Seed: cfg.Seed, Config: cfg, Started: time.Now(),
		Client: End{NetNS: cfg.Name + "-client", Addr: ca}, Server: End{NetNS: cfg.Name + "-server", Addr: sa}}}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	for i, e := range []End{l.Client, l.Server} {
		if l.ends[i], err = createNS(e.NetNS); err != nil {
			return l, err
		}
		if l.tuns[i], err = openTUN(l.ends[i]); err != nil {
			return l, fmt.Errorf("%s: %w", e.NetNS, err)
		}
	}
	if err = configure(l.ends[0], p2p(ca, sa)); err != nil {
		return l, fmt.Errorf("%s: %w", l.Client.NetNS, err)
	}
	if err = configure(l.ends[1], p2p(sa, ca)); err != nil {
		return l, fmt.Errorf("%s: %w", l.Server.NetNS, err)
	}
	for i := range l.ends {
		if cfg.StampInputs {
			l.taps[i], _ = openTap(l.ends[i]) // without, input waits go unseen (DirectionStats.InputStamped)
		}
	}
	start := time.Now()
	for i, d := range []Direction{cfg.Up, cfg.Down} {
		st := &DirStats{}
		p := newPipe([]string{"up", "down"}[i], []tun.Device{l.tuns[i]}, []tun.Device{l.tuns[1-i]},
			[]*DirStats{st}, []*DirStats{st}, start)
		p.taps = []*tap{l.taps[i]}
		back := func([]byte) int { return 0 } // frag-needed goes back into the one input
		l.paths[i] = Build(d, cfg.Framing, cfg.Seed+uint64(i)*1000, p.dropper(st), p.tooBig(d, back, st))
		p.net = single{path: l.paths[i]}
		l.pipes[i], l.stats[i] = p, st
	}
	return l, nil
}

// Run forwards both directions and serves statistics until ctx ends.
func (l *Lab) Run(ctx context.Context) error {
	if err := l.publish(); err != nil {
		return err
	}
	spareProcs(len(l.pipes))
	favourProcess()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 4)
	var wg sync.WaitGroup
	for _, p := range l.pipes {
		wg.Add(2)
		go func() { defer wg.Done(); errc <- p.routineRead(0) }()
		go func() { defer wg.Done(); errc <- p.routineWrite(ctx) }()
	}
	go l.routineStats(ctx)
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		if err != nil {
			err = fmt.Errorf("forwarder: %w", err)
		}
	}
	cancel()
	for _, t := range l.tuns {
		if t != nil {
			_ = t.Close() // ends the readers
		}
	}
	wg.Wait()
	return err
}

// publish writes the state file and opens the stats socket.
func (l *Lab) publish() error {
	_ = os.Remove(socketPath(l.Name))
	ln, err := net.Listen("unix", socketPath(l.Name))
	if err != nil {
		return err
	}
	l.ln = ln
	b, _ := json.MarshalIndent(l.State, "", "  ")
	tmp := statePath(l.Name) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, statePath(l.Name))
}

// Close stops forwarding and removes namespaces, devices and state.
func (l *Lab) Close() error {
	if l.ln != nil {
		l.ln.Close()
	}
	for _, t := range l.tuns {
		if t != nil {
			_ = t.Close()
		}
	}
	for _, t := range l.taps {
		t.release()
	}
	for _, h := range l.ends {
		if h.IsOpen() {
			h.Close()
		}
	}
	var errs []error
	for _, e := range []End{l.Client, l.Server} {
		if e.NetNS != "" {
			errs = append(errs, deleteNS(e.NetNS))
		}
	}
	_ = os.Remove(statePath(l.Name))
	_ = os.Remove(socketPath(l.Name))
	return errors.Join(errs...)
}

// fragNeeded builds the ICMPv4 "fragmentation needed" (type 3 code 4,
// RFC 1191) answer to an IPv4 packet with DF set that exceeded mtu: from
// the packet's destination back to its source, quoting its header and
// first 8 payload bytes. nil for anything else.
func fragNeeded(ip []byte, mtu int) []byte {
	if len(ip) < 20 || ip[0]>>4 != 4 || ip[6]&0x40 == 0 {
		return nil // not IPv4, or DF clear
	}
	ihl := int(ip[0]&0x0f) * 4
	if ip[9] == 1 && len(ip) > ihl {
		switch ip[ihl] { // never answer an ICMP error with one (RFC 1122)
		case 3, 4, 5, 11, 12:
			return nil
		}
	}
	quote := ip[:min(len(ip), ihl+8)]
	out := make([]byte, frame.IPv4Header+frame.ICMPHeader+len(quote))
	out[0], out[8], out[9] = 0x45, 64, 1 // v4, TTL 64, ICMP
	binary.BigEndian.PutUint16(out[2:], uint16(len(out)))
	copy(out[12:16], ip[16:20]) // from the original destination
	copy(out[16:20], ip[12:16]) // to the original source
	binary.BigEndian.PutUint16(out[10:], checksum(out[:frame.IPv4Header]))
	icmp := out[frame.IPv4Header:]
	icmp[0], icmp[1] = 3, 4
	binary.BigEndian.PutUint16(icmp[6:], uint16(mtu))
	copy(icmp[frame.ICMPHeader:], quote)
	binary.BigEndian.PutUint16(icmp[2:], checksum(icmp))
	return out
}

func checksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return ^uint16(s)
}

// InServer runs f on a thread inside the server namespace: sockets it
// opens (a responder's listeners) live there.
func (l *Lab) InServer(f func() error) error { return inNS(l.ends[1], f) }

// InClient runs f on a thread inside the client namespace: sockets it
// opens (a generator's) live there.
func (l *Lab) InClient(f func() error) error { return inNS(l.ends[0], f) }
