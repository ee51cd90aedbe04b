package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/tun"

	"github.com/fullpipe/fullpipe/internal/link"
)

// A sites lab is a hub with N spokes: each site is a network namespace
// with one TUN device and one address, joined to the hub by its own
// access link, Up (site → hub) and Down (hub → site). A packet from
// site i to site j crosses i's uplink, then j's downlink: every flow
// leaving i shares i's uplink (its rate, its queue), every flow entering
// j shares j's downlink, as on real access lines behind a core that is
// never the bottleneck. The hub itself adds nothing.
//
// Addresses: site i of the lab in slot K is 198.19.K.(i+1), inside the
// RFC 2544 range like the two-ended labs' 198.18.k.1/.2, but in the other
// half of it so the two kinds never meet. Each site routes 198.19.K.0/24
// through its TUN device; packets to an address no site has are dropped
// and counted (SiteStats.NoRoute).
//
// MTU and ICMP work as in the two-ended lab: a packet above a link's MTU
// is dropped there and, with Direction.ICMP, answered with ICMP
// frag-needed written straight back into its source site (no delay).

// maxSites is how many sites fit the /24 of one slot (.1 to .254).
const maxSites = 254

// sitesDir holds one JSON state file per sites lab, beside (not among)
// the two-ended labs' files, and the lock that serialises choosing slots.
var sitesDir = filepath.Join(StateDir, "sites")

// Site is one spoke: its name and its access link.
type Site struct {
	Name string    `json:"name"` // 1..8 lower-case letters and digits; names the namespace LAB-NAME
	Up   Direction `json:"up"`   // site → hub
	Down Direction `json:"down"` // hub → site
}

// SitesConfig is a whole sites lab. Framing "" means ethernet.
type SitesConfig struct {
	Name    string  `json:"name"` // 1..8 lower-case letters and digits
	Seed    uint64  `json:"seed"`
	Framing Framing `json:"framing,omitempty"`
	Sites   []Site  `json:"sites"`
}

// Validate checks the config: names, framing, and every link.
func (c SitesConfig) Validate() error {
	if err := validName("name", c.Name); err != nil {
		return err
	}
	if c.Framing != "" && c.Framing != FramingEthernet && c.Framing != FramingNone {
		return fmt.Errorf("framing %q: want ethernet or none", c.Framing)
	}
	if len(c.Sites) < 2 || len(c.Sites) > maxSites {
		return fmt.Errorf("%d sites: want 2..%d", len(c.Sites), maxSites)
	}
	seen := map[string]bool{}
	for _, s := range c.Sites {
		if err := validName("site name", s.Name); err != nil {
			return err
		}
		if s.Name == "client" || s.Name == "server" || seen[s.Name] {
			return fmt.Errorf("site name %q: taken (names are unique; client and server belong to two-ended labs)", s.Name)
		}
		seen[s.Name] = true
		if err := s.Up.Validate("site " + s.Name + " up"); err != nil {
			return err
		}
		if err := s.Down.Validate("site " + s.Name + " down"); err != nil {
			return err
		}
	}
	return nil
}

func validName(what, name string) error {
	if name == "" || len(name) > 8 {
		return fmt.Errorf("%s %q: want 1..8 characters", what, name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return fmt.Errorf("%s %q: use lower-case letters and digits", what, name)
		}
	}
	return nil
}

// Truth is the path from site i to site j as configured: the base RTT
// of i → j and back (both access links' one-way delays, each way: no
// serialisation, no queueing, no jitter) and the bottleneck rate of
// i → j, the lower of i's uplink and j's downlink (0 when both are
// unlimited). The rate is counted on the wire as the links count it
// (with Framing, or in ATM cells): a TCP flow's ideal goodput over
// Ethernet framing is rfc6349.MaxTCPThroughput(rate, 1500, 1448,
// rfc6349.Ethernet), 1448/1538 of it. A frame-relay link's rate is its
// CIR (or its access rate if lower); a policer is not counted.
func (c SitesConfig) Truth(i, j int) (rtt time.Duration, rateBps int64) {
	a, b := c.Sites[i], c.Sites[j]
	rtt = a.Up.Delay + b.Down.Delay + b.Up.Delay + a.Down.Delay
	for _, r := range []int64{linkRate(a.Up), linkRate(b.Down)} {
		if r > 0 && (rateBps == 0 || r < rateBps) {
			rateBps = r
		}
	}
	return rtt, rateBps
}

// linkRate is a direction's serialisation bottleneck; 0 = unlimited.
func linkRate(d Direction) int64 {
	if d.FRAccessBps > 0 {
		return min(d.FRAccessBps, d.FRCIRBps)
	}
	return d.RateBps
}

// SitesState is what a running sites lab records in StateDir/sites:
// enough for CleanupSites to remove it after its process died. It is
// written before the first namespace is made.
type SitesState struct {
	Name    string      `json:"name"`
	PID     int         `json:"pid"`
	Seed    uint64      `json:"seed"`
	Config  SitesConfig `json:"config"`
	Sites   []End       `json:"sites"` // in Config.Sites order
	Started time.Time   `json:"started"`
}

// Sites is a running sites lab; it forwards from UpSites until Close.
// Its methods are safe for concurrent use.
type Sites struct {
	SitesState
	ends     []netns.NsHandle
	tuns     []tun.Device
	taps     []*tap // per site; none opened yet (Config.StampInputs is the two-ended lab's)
	pipe     *pipe
	hub      *hub
	up, down []*DirStats

	cancel    context.CancelFunc
	wg        sync.WaitGroup // the forwarder's goroutines
	errOnce   sync.Once
	err       error // the forwarder's first error; set once (errOnce), read after wg.Wait
	closeOnce sync.Once
	closeErr  error
}

func sitesStatePath(name string) string { return filepath.Join(sitesDir, name+".json") }

// sitesAddr is site i's address in slot k.
func sitesAddr(k, i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 19, byte(k), byte(i + 1)}) }

// CleanupSites removes what a sites lab of this name left behind after
// its process died (even by SIGKILL): its namespaces and its state. A
// lab still owned by another live process is an error, not killed: it
// is likely another test run. One of this process is removed (taken as
// left over by a test that did not Close it). UpSites calls it first.
func CleanupSites(name string) error {
	b, err := os.ReadFile(sitesStatePath(name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var s SitesState
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("state of sites lab %q: %w; remove %s and its namespaces (ip netns list) by hand", name, err, sitesStatePath(name))
	}
	if s.PID != os.Getpid() && alive(s.PID) {
		return fmt.Errorf("sites lab %q is in use by process %d: close it there, stop that process, or pick another name", name, s.PID)
	}
	var errs []error
	for _, e := range s.Sites {
		errs = append(errs, deleteNS(e.NetNS))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return os.Remove(sitesStatePath(name))
}

// UpSites builds a sites lab and starts forwarding: a namespace per site
// (LAB-SITE) with loopback and a TUN device fp0 up, the site's address
// on it and the lab's /24 routed through it. It needs root. Close
// removes everything; after a crash CleanupSites (or the next UpSites of
// that name) does.
func UpSites(cfg SitesConfig) (s *Sites, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("the sites lab needs root (network namespaces and TUN devices)")
	}
	st, err := claimSites(cfg)
	if err != nil {
		return nil, err
	}
	s = &Sites{SitesState: *st}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	for _, e := range s.Sites {
		h, err := createNS(e.NetNS)
		if err != nil {
			return s, err
		}
		s.ends = append(s.ends, h)
		t, err := openTUN(h)
		if err != nil {
			return s, fmt.Errorf("%s: %w", e.NetNS, err)
		}
		s.tuns = append(s.tuns, t)
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: e.Addr.AsSlice(), Mask: net.CIDRMask(24, 32)}}
		if err := configure(h, addr); err != nil {
			return s, fmt.Errorf("%s: %w", e.NetNS, err)
		}
	}
	s.build()
	s.start()
	return s, nil
}

// claimSites cleans up an earlier lab of the name, picks a free slot and
// writes the state, all under the sites lock so that labs coming up at
// once (in this process or others) never share a slot.
func claimSites(cfg SitesConfig) (*SitesState, error) {
	if err := os.MkdirAll(sitesDir, 0o755); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(sitesDir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	defer lock.Close() // releases the lock
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return nil, fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	if err := CleanupSites(cfg.Name); err != nil {
		return nil, fmt.Errorf("clean up an earlier sites lab %q: %w", cfg.Name, err)
	}
	k, err := sitesSlot()
	if err != nil {
		return nil, err
	}
	st := &SitesState{Name: cfg.Name, PID: os.Getpid(), Seed: cfg.Seed, Config: cfg, Started: time.Now()}
	for i, site := range cfg.Sites {
		st.Sites = append(st.Sites, End{NetNS: cfg.Name + "-" + site.Name, Addr: sitesAddr(k, i)})
	}
	b, _ := json.MarshalIndent(st, "", "  ")
	tmp := sitesStatePath(cfg.Name) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return nil, err
	}
	return st, os.Rename(tmp, sitesStatePath(cfg.Name))
}

// sitesSlot is the lowest slot no live sites lab holds; the caller holds
// the sites lock and has removed this name's own state.
func sitesSlot() (int, error) {
	used := map[int]bool{}
	files, _ := filepath.Glob(filepath.Join(sitesDir, "*.json"))
	for _, f := range files {
		var s SitesState
		if b, err := os.ReadFile(f); err == nil && json.Unmarshal(b, &s) == nil && alive(s.PID) &&
			len(s.Sites) > 0 && s.Sites[0].Addr.Is4() {
			used[int(s.Sites[0].Addr.As4()[2])] = true
		}
	}
	for k := range 256 {
		if !used[k] {
			return k, nil
		}
	}
	return 0, errors.New("all 256 sites slots are taken by running labs: close one (CleanupSites)")
}

// build makes each site's two chains and the pipe that runs them.
func (s *Sites) build() {
	n := len(s.Sites)
	for range n {
		s.up, s.down = append(s.up, &DirStats{}), append(s.down, &DirStats{})
	}
	p := newPipe("sites", s.tuns, s.tuns, s.up, s.down, time.Now())
	p.taps = s.taps
	a4 := s.Sites[0].Addr.As4()
	h := &hub{prefix: [3]byte{a4[0], a4[1], a4[2]}, n: n, upSt: s.up, downSt: s.down}
	for i, site := range s.Config.Sites {
		seed := s.Seed + uint64(2*i)*1000
		h.up = append(h.up, Build(site.Up, s.Config.Framing, seed, p.dropper(s.up[i]), p.tooBig(site.Up, h.src, s.up[i])))
		h.down = append(h.down, Build(site.Down, s.Config.Framing, seed+1000, p.dropper(s.down[i]), p.tooBig(site.Down, h.src, s.down[i])))
	}
	p.net = h
	s.pipe, s.hub = p, h
}

// start runs the forwarder: routineRead per site, one routineWrite for
// all of them. They end when Close cancels the writer and closes the
// TUN devices.
func (s *Sites) start() {
	spareProcs(1)
	favourProcess()
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	fail := func(err error) {
		if err != nil {
			s.errOnce.Do(func() { s.err = fmt.Errorf("forwarder: %w", err) })
		}
	}
	for i := range s.tuns {
		s.wg.Add(1)
		go func() { defer s.wg.Done(); fail(s.pipe.routineRead(i)) }()
	}
	s.wg.Add(1)
	go func() { defer s.wg.Done(); fail(s.pipe.routineWrite(ctx)) }()
}

// Close stops forwarding, waits for the forwarder's goroutines and
// removes the namespaces (with their devices) and the state. It returns
// the forwarder's error, if it failed, and what removing failed on.
// Calling it again returns the same.
func (s *Sites) Close() error {
	s.closeOnce.Do(func() {
		if s.cancel != nil {
			s.cancel()
		}
		for _, t := range s.tuns {
			_ = t.Close() // ends the readers
		}
		s.wg.Wait()
		for _, t := range s.taps {
			t.release()
		}
		errs := []error{s.err}
		for _, h := range s.ends {
			h.Close()
		}
		for _, e := range s.Sites {
			errs = append(errs, deleteNS(e.NetNS))
		}
		if err := os.Remove(sitesStatePath(s.Name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// Truth is SitesConfig.Truth of this lab's config.
func (s *Sites) Truth(i, j int) (rtt time.Duration, rateBps int64) { return s.Config.Truth(i, j) }

// Addr is site i's address.
func (s *Sites) Addr(i int) netip.Addr { return s.Sites[i].Addr }

// NetNS is site i's namespace name, for `ip netns exec NAME CMD` (or
// Exec) to run a process there.
func (s *Sites) NetNS(i int) string { return s.Sites[i].NetNS }

// Index is the index of the site named name, or -1.
func (s *Sites) Index(name string) int {
	for i, site := range s.Config.Sites {
		if site.Name == name {
			return i
		}
	}
	return -1
}

// In runs f on a thread inside site i's namespace: sockets it opens (a
// responder's listeners, a tester's connections) live there.
func (s *Sites) In(i int, f func() error) error { return inNS(s.ends[i], f) }

// SiteStats is one site's counters. Up counts what its TUN device gave
// (rx) and what left its uplink for a downlink (forwarded); Down what
// entered its downlink (rx) and what was written into its TUN device
// (forwarded).
type SiteStats struct {
	Name    string         `json:"name"`
	Up      DirectionStats `json:"up"`
	Down    DirectionStats `json:"down"`
	NoRoute uint64         `json:"no_route"` // read from the site but addressed to no site: dropped
}

// Stats reads every site's counters, in Config.Sites order.
func (s *Sites) Stats() []SiteStats {
	s.pipe.mu.Lock()
	out := make([]SiteStats, len(s.Sites))
	for i := range out {
		out[i] = SiteStats{Name: s.Config.Sites[i].Name, NoRoute: s.up[i].NoRoute.Load(),
			Up: readStats(s.up[i], s.hub.up[i]), Down: readStats(s.down[i], s.hub.down[i])}
	}
	s.pipe.mu.Unlock()
	for i := range out {
		out[i].Up.lossOnRead(tunDrops(s.ends[i])) // a site's uplink reads its device
	}
	return out
}

// Trace returns the ICMP echo records so far, every site's, in arrival
// order: Arrived is when the source site's TUN device gave the packet,
// Departed when the destination's downlink released it, QueuedAhead what
// waited in the source's uplink queue.
func (s *Sites) Trace() []TraceRecord { return s.pipe.records() }

// hub is a sites lab's fabric: input i is site i's TUN device, entering
// site i's uplink chain; what leaves it enters the downlink chain of the
// site it is addressed to, at the same virtual time; what leaves that is
// written into that site's TUN device (output j).
type hub struct {
	prefix       [3]byte // 198.19.K
	n            int
	up, down     []*Path
	upSt, downSt []*DirStats // per site: forwarded by the uplink, entered the downlink
}

// site is the index of the site with IPv4 address a, or -1.
func (h *hub) site(a []byte) int {
	if [3]byte(a[:3]) != h.prefix || a[3] == 0 || int(a[3]) > h.n {
		return -1
	}
	return int(a[3]) - 1
}

// dst is the site an IP packet is addressed to, or -1.
func (h *hub) dst(ip []byte) int {
	if len(ip) < 20 || ip[0]>>4 != 4 {
		return -1
	}
	return h.site(ip[16:20])
}

// src is the site an IP packet came from, or -1 (where ICMP goes).
func (h *hub) src(ip []byte) int {
	if len(ip) < 20 || ip[0]>>4 != 4 {
		return -1
	}
	return h.site(ip[12:16])
}

func (h *hub) push(now time.Duration, in int, pk *link.Packet) bool {
	if h.dst(pk.Data) < 0 {
		return false
	}
	h.up[in].Chain.Push(now, pk)
	return true
}

// advance runs the uplinks in global time order, each event at the
// earliest time any uplink has one, so that the downlinks receive their
// packets in time order; then every downlink up to now.
func (h *hub) advance(now time.Duration, deliver func(int, *link.Packet)) {
	for {
		first, at := -1, time.Duration(0)
		for i, p := range h.up {
			if t, ok := p.Chain.Next(); ok && t <= now && (first < 0 || t < at) {
				first, at = i, t
			}
		}
		if first < 0 {
			break
		}
		h.up[first].Chain.Advance(at, func(pk *link.Packet) { h.handoff(first, pk, deliver) })
	}
	for j, p := range h.down {
		p.Chain.Advance(now, func(pk *link.Packet) { deliver(j, pk) })
	}
}

// handoff moves a packet that left site i's uplink at pk.Time into its
// destination's downlink, advanced to that time first.
func (h *hub) handoff(i int, pk *link.Packet, deliver func(int, *link.Packet)) {
	j := h.dst(pk.Data) // push let only routable packets in
	n := uint64(len(pk.Data))
	h.upSt[i].TxPackets.Add(1)
	h.upSt[i].TxBytes.Add(n)
	h.downSt[j].RxPackets.Add(1)
	h.downSt[j].RxBytes.Add(n)
	d := h.down[j].Chain
	d.Advance(pk.Time, func(q *link.Packet) { deliver(j, q) })
	d.Push(pk.Time, pk)
}

func (h *hub) next() (time.Duration, bool) {
	var best time.Duration
	found := false
	for _, paths := range [][]*Path{h.up, h.down} {
		for _, p := range paths {
			if t, ok := p.Chain.Next(); ok && (!found || t < best) {
				best, found = t, true
			}
		}
	}
	return best, found
}

func (h *hub) queuedAhead(in int) (bytes, packets int) { return queuedIn(h.up[in]) }
