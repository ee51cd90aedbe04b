package serve

// Limits: what one connection, one address and one request may cost the
// responder, and the arithmetic that keeps those sums from wrapping.

import (
	"fmt"
	"math"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fullpipe/fullpipe/internal/flow"
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
	// maxAnyRateBps bounds every rate a request names, with or without
	// --max-rate: no interface sends 1 Tbit/s.
	maxAnyRateBps = 1e12
	// maxUDPPorts bounds the UDP source ports one session may use (a
	// sweep probes from one socket per DSCP class, at most two).
	maxUDPPorts = 4
	// maxTrackedSeq bounds a UDP receiver's duplicate-detection bitmap
	// on the responder (2 MiB): higher sequence numbers still count.
	maxTrackedSeq = 1 << 24
	// forcedMaxWindow is the default --max-window with --force-sndbuf.
	forcedMaxWindow = 64 << 20
	// maxWriteBuffers bounds a session's send buffers in the responder's
	// memory: write_size × the streams it sends on.
	maxWriteBuffers = 64 << 20
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

// satAdd is a + b for non-negative operands, saturating at MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// satMul is a × b for non-negative operands, saturating at MaxInt64.
func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
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

// checkLimits refuses a request beyond a responder limit, naming the limit
// and the flag that raises it. The checks on the request's form are in
// validate.
func (s *Server) checkLimits(req wire.Request) error {
	c := &s.cfg
	rate := max(req.RateBps, satMul(req.PacingBps, int64(max(req.Streams, 1))))
	// --max-rate bounds what the responder sends; what a client sends
	// (an upload's rate or pacing) is only kept finite.
	capBps, flag := int64(maxAnyRateBps), "no interface sends faster"
	if sends := req.Reverse || req.Bidir; sends && c.MaxRateBps > 0 {
		capBps, flag = c.MaxRateBps, "--max-rate"
	}
	switch {
	case req.RateBps > capBps || req.PacingBps > capBps || rate > capBps:
		return fmt.Errorf("rate %d bit/s exceeds the responder's limit of %d bit/s (%s)", rate, capBps, flag)
	case (req.Reverse || req.Bidir) && req.Window > c.MaxWindow: // the responder's send buffers
		return fmt.Errorf("window %d bytes exceeds the responder's limit of %d bytes (--max-window; above net.core.wmem_max it also needs --force-sndbuf)", req.Window, c.MaxWindow)
	case req.WriteSize > c.MaxWriteSize:
		return fmt.Errorf("write_size must be 0 (%d bytes) to %d bytes, got %d (responder limit --max-write-size)", flow.DefaultWriteSize, c.MaxWriteSize, req.WriteSize)
	case (req.Reverse || req.Bidir) && satMul(int64(max(req.WriteSize, flow.DefaultWriteSize)), int64(req.Streams)) > maxWriteBuffers:
		return fmt.Errorf("write_size %d × %d streams the responder sends exceeds its %d MiB of write buffers per test: fewer streams or a smaller write_size", max(req.WriteSize, flow.DefaultWriteSize), req.Streams, maxWriteBuffers>>20)
	case req.CC != "" && !slices.Contains(c.AllowCC, req.CC):
		return fmt.Errorf("congestion control %q is not allowed on this responder; it allows %s (--allow-cc)", req.CC, strings.Join(c.AllowCC, ", "))
	case req.DSCP != 0 && !slices.Contains(c.AllowDSCP, req.DSCP):
		return fmt.Errorf("dscp %d is not allowed on this responder (--allow-dscp; the default 0-47 leaves out the network-control classes CS6 and CS7)", req.DSCP)
	case req.Kind == wire.KindTrain && satMul(int64(req.TrainPackets), int64(req.Size)) > int64(c.MaxTrainBytes):
		return fmt.Errorf("a train of %d × %d bytes exceeds the responder's limit of %d bytes per train (--max-train-bytes)", req.TrainPackets, req.Size, c.MaxTrainBytes)
	case req.UDPPorts > maxUDPPorts:
		return fmt.Errorf("udp_ports %d exceeds the responder's limit of %d", req.UDPPorts, maxUDPPorts)
	}
	_, _, err := echoBudget(req, c.MaxProbeRate)
	return err
}

// echoBudget is what a session may get back as echo replies: packets and
// bytes, from the probes the request announces (or, when it announces
// none, 10 per second of its duration plus 20), with a 10 % margin.
func echoBudget(req wire.Request, maxRate int) (packets, bytes int64, err error) {
	secs := max(1, int64(req.Duration/time.Second))
	if req.Duration <= 0 {
		secs = int64(DefaultMaxDuration / time.Second) // a byte-count test
	}
	probes := int64(req.Probes)
	if probes <= 0 {
		probes = satAdd(satMul(10, secs), 20)
	}
	if lim := satAdd(satMul(int64(maxRate), secs), 20); probes > lim {
		return 0, 0, fmt.Errorf("%d probes exceed the responder's limit of %d for a %v test (%d per second, --max-probe-rate)", probes, lim, req.Duration, maxRate)
	}
	size := int64(req.ProbeSize)
	if size < wire.EchoStampLen {
		size = wire.EchoStampLen
	}
	size = min(size, 65507)
	if req.MTU {
		size = max(size, wire.MaxMTUReply)
	}
	packets = satAdd(probes, probes/10+10)
	return packets, satMul(packets, size), nil
}

// retryAfter is when the first of these sessions is due to end, from now:
// the advice in a busy answer (at least a second).
func retryAfter(ends []time.Time, now time.Time) time.Duration {
	if len(ends) == 0 {
		return time.Second
	}
	return max(time.Second, slices.MinFunc(ends, func(a, b time.Time) int { return a.Compare(b) }).Sub(now)).Round(time.Second)
}
