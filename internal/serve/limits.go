package serve

// Limits: what one connection, one address and one request may cost the
// responder, and the arithmetic that keeps those sums from wrapping.

import (
	"math"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fullpipe/fullpipe/internal/wire"
)

// Defaults of the limits added for a responder on a public address.
const (
	// DefaultMaxSessionsPerAddr lets one address run a sweep (an rtt
	// session beside its tcp test) and little more.
	DefaultMaxSessionsPerAddr = 4
	// DefaultMaxProbeRate is the most echo replies per second of test
	// duration a session may ask for.
	DefaultMaxProbeRate = 1000
	// DefaultMaxWriteSize bounds a request's write_size.
	DefaultMaxWriteSize = 16 << 20
	// fdReserve is what the default connection cap leaves of
	// RLIMIT_NOFILE for listeners, logs and the runtime.
	fdReserve = 64
	// maxTrackedSeq bounds a UDP receiver's duplicate-detection bitmap
	// on the responder (2 MiB): higher sequence numbers still count.
	maxTrackedSeq = 1 << 24
	// forcedMaxWindow is the default --max-window with --force-sndbuf.
	forcedMaxWindow = 64 << 20
)

// DefaultMaxConns is the default global connection cap: the process's
// open-file limit less a reserve, at least 16.
func DefaultMaxConns() int {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil || r.Cur > math.MaxInt32 {
		return 1 << 16
	}
	return max(16, int(r.Cur)-fdReserve)
}

// KernelMaxWindow is the largest window a sender can hold without
// SO_SNDBUFFORCE: Linux autotunes up to 1 MiB and beyond that fullpipe
// asks for a buffer that net.core.wmem_max caps.
func KernelMaxWindow() int {
	b, err := os.ReadFile("/proc/sys/net/core/wmem_max")
	if err != nil {
		return 1 << 20
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 1 << 20
	}
	return max(1<<20, n)
}

// AllowedCC is the default congestion-control allowlist: what
// /proc/sys/net/ipv4/tcp_allowed_congestion_control lists plus the
// default, kept to what is loaded (tcp_available_congestion_control), so
// no request makes the kernel load a module.
func AllowedCC() []string {
	allowed := procWords("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
	allowed = append(allowed, procWords("/proc/sys/net/ipv4/tcp_congestion_control")...)
	return LoadedCC(allowed)
}

// LoadedCC keeps the names of names that the kernel has loaded; "available"
// stands for all of them.
func LoadedCC(names []string) []string {
	loaded := procWords("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if slices.Contains(names, "available") {
		return loaded
	}
	var out []string
	for _, n := range names {
		if slices.Contains(loaded, n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func procWords(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}

// DefaultDSCP is the default DSCP allowlist: 0 to 47, which leaves out
// CS6 (48) and CS7 (56) and everything above, the network-control classes.
func DefaultDSCP() []int {
	out := make([]int, 48)
	for i := range out {
		out[i] = i
	}
	return out
}

// addrKey is the unit of the per-address limits: an IPv4 address, or an
// IPv6 /64 (one host usually holds a whole /64).
func addrKey(ip netip.Addr) netip.Prefix {
	ip = ip.Unmap()
	if ip.Is4() {
		return netip.PrefixFrom(ip, 32)
	}
	p, _ := ip.Prefix(64)
	return p
}

// connLimits counts open TCP connections, in total and per address.
type connLimits struct {
	max, maxPerAddr int

	mu      sync.Mutex // guards the fields below
	total   int
	perAddr map[netip.Prefix]int
}

// acquire takes a connection slot for ip; false when a cap is reached.
func (l *connLimits) acquire(ip netip.Addr) bool {
	k := addrKey(ip)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total >= l.max || l.perAddr[k] >= l.maxPerAddr {
		return false
	}
	if l.perAddr == nil {
		l.perAddr = map[netip.Prefix]int{}
	}
	l.total++
	l.perAddr[k]++
	return true
}

func (l *connLimits) release(ip netip.Addr) {
	k := addrKey(ip)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.perAddr[k]--; l.perAddr[k] <= 0 {
		delete(l.perAddr, k)
	}
}

// open is the number of connections held.
func (l *connLimits) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// Limits are the responder's limits on a request, from its filled
// configuration: what it checks each request against (Request.Validate)
// and announces in hello. Lists are never nil, so an empty allowlist
// travels as one (none allowed) and not as an unknown one.
func (s *Server) Limits() wire.Limits { return s.cfg.limits() }

func (c *Config) limits() wire.Limits {
	l := wire.Limits{MaxStreams: c.MaxStreams, MaxDuration: c.MaxDuration, MaxRateBps: c.MaxRateBps, MaxWindow: c.MaxWindow,
		MaxWriteSize: c.MaxWriteSize, MaxProbeRate: c.MaxProbeRate, MaxTrainBytes: c.MaxTrainBytes,
		AllowCC: slices.Clone(c.AllowCC), AllowDSCP: slices.Clone(c.AllowDSCP)}
	if l.AllowCC == nil {
		l.AllowCC = []string{}
	}
	if l.AllowDSCP == nil {
		l.AllowDSCP = []int{}
	}
	return l
}

// echoBudget is what a session may get back as echo replies: packets and
// bytes, from the probes the request announces (wire.Request.EchoProbes:
// Validate has checked them against --max-probe-rate), with a 10 % margin.
func echoBudget(req wire.Request) (packets, bytes int64) {
	probes := req.EchoProbes()
	size := int64(req.ProbeSize)
	if size < wire.EchoStampLen {
		size = wire.EchoStampLen
	}
	size = min(size, wire.MaxUDPPayload)
	if req.MTU {
		size = max(size, wire.MaxMTUReply)
	}
	packets = wire.SatAdd(probes, probes/10+10)
	bytes = wire.SatMul(packets, size)
	// a udp test's latency probes: datagrams of its size, with the same
	// margin
	if sp := req.StreamProbes(); sp > 0 {
		sp = wire.SatAdd(sp, sp/10+10)
		packets, bytes = wire.SatAdd(packets, sp), wire.SatAdd(bytes, wire.SatMul(sp, int64(req.Size)))
	}
	return packets, bytes
}

// retryAfter is when the first of these sessions is due to end, from now:
// the advice in a busy answer (at least a second).
func retryAfter(ends []time.Time, now time.Time) time.Duration {
	if len(ends) == 0 {
		return time.Second
	}
	return max(time.Second, slices.MinFunc(ends, func(a, b time.Time) int { return a.Compare(b) }).Sub(now)).Round(time.Second)
}
